"""A follower's metrics (issue 39, section 4): last_run_read_bytes and _read_lines (what it
read since its previous metrics write) and last_run_top_requests (each window's busiest
address now, under the threshold too) are written, so the dashboard's panels are not flat
on follow-mode hosts; promtool check metrics passes on the follower's own file."""

import test_follow as follow
from test_metrics import metrics
from test_metrics_lint import promtool_check


def test_a_follower_writes_what_it_read_and_the_busiest_address(tmp_path):
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(b'')
    prom = tmp_path / 'bot_detector.prom'
    data = follow.lines('203.0.113.40', 37) + follow.lines('203.0.113.41', 5, follow.START - 3600)
    label = frozenset({'log': str(log)}.items())
    with follow.Following(tmp_path, files, log, extra=['--metrics-file', prom]) as follower:
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(data)
        seen = []

        def read_it():
            if not prom.exists():
                return False
            found = metrics(prom)
            seen.append(found.get('bot_detector_last_run_read_lines'))
            return found.get('bot_detector_last_run_read_lines') == {label: 42}
        follow.wait_for(read_it, 12, 'the metrics of what was read')
        found = metrics(prom)
        assert found['bot_detector_last_run_read_bytes'] == {label: len(data)}
        assert found['bot_detector_last_run_top_requests'] == {
            frozenset({'log': str(log), 'window': 'current'}.items()): 37,
            frozenset({'log': str(log), 'window': 'previous'}.items()): 5}
        promtool_check(prom)
        # The next interval read nothing: 0, not the last interval's figures again.
        written = prom.stat().st_mtime
        follow.wait_for(lambda: prom.stat().st_mtime > written + 1, 12, 'the next metrics write')
        found = metrics(prom)
        assert found['bot_detector_last_run_read_lines'] == {label: 0}
        assert found['bot_detector_last_run_top_requests'][frozenset({'log': str(log), 'window': 'current'}.items())] == 37
        promtool_check(prom)
        assert follower.stop() == 0
