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


# ---- issue 44 §10: a quiet follower ranks no count again, whatever the counts held

import os  # noqa: E402

import pytest  # noqa: E402

from conftest import in_timezone  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import follow as following  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import follower_state  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.spill import SpillCounter  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings as values  # noqa: E402


class Watched(SpillCounter):
    """A follower's counter that notes every walk over its entries or its spill files."""
    walks = 0

    def _walked(self):
        Watched.walks += 1

    def keys(self):
        self._walked()
        return super(Watched, self).keys()

    def values(self):
        self._walked()
        return super(Watched, self).values()

    def items(self):
        self._walked()
        return super(Watched, self).items()

    def __iter__(self):
        self._walked()
        return super(Watched, self).__iter__()

    def parts(self):
        self._walked()
        return super(Watched, self).parts()

    def summary(self):
        self._walked()
        return super(Watched, self).summary()


@pytest.mark.parametrize('budget', [10 ** 6, 40])       # the counts in memory; spilled to files
def test_a_quiet_follower_ranks_no_count_again(tmp_path, budget):
    """Issue 44 §10: after a burst of distinct addresses a follower on a quiet log spent
    4.4-5.0% of a core (0.2-0.8% before): its metrics' top requests of every window were
    ranked again every 5 s over all the counts (spilled ones read back from their files).
    Its periodic steps (the metrics, a decision that an expiry or a list's change calls for)
    now rank a window again only when its counts changed; the figures stay right."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    distinct = b''.join(follow.lines('198.51.%d.%d' % (i >> 8, i & 255), 1) for i in range(600))
    log.write_bytes(distinct + follow.lines('203.0.113.40', 37) + follow.lines('203.0.113.41', 5, follow.START - 3600))
    prom = tmp_path / 'bot_detector.prom'
    chosen = values.Settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                             activity_log=str(files.activity_log), server_ips=[follow.SERVER], threshold=follow.THRESHOLD,
                             state_dir=str(tmp_path / 'state'), metrics_file=str(prom), count_budget=budget)
    os.mkdir(str(tmp_path / 'state'), 0o700)
    follower = following.Follower(chosen, [str(log)], follower_state.Clock(follow.START), lambda line: None, lambda line: None)
    label = frozenset({'log': str(log)}.items())

    def tops():
        found = metrics(prom)['bot_detector_last_run_top_requests']
        return dict((dict(labels)['window'], value) for labels, value in found.items() if labels >= label)

    def step(expire=False):         # what the loop does on a quiet log: a decision (an expiry, a list changed) and the metrics
        follower.decide(follow.START, expire)
        follower_state.write_metrics(follower, follow.START, 0, 0, None)

    try:
        in_timezone('UTC', lambda: follower._start(follow.START))
        assert any(isinstance(c, SpillCounter) and c.spilled for c in follower.tally.counters.values()) == (budget == 40)
        for counter in follower.tally.counters.values():
            counter.__class__ = Watched
        in_timezone('UTC', step)
        assert tops() == {'current': 37, 'previous': 5}
        Watched.walks = 0
        for expire in (False, True, False):
            in_timezone('UTC', lambda: step(expire))
        assert Watched.walks == 0
        assert tops() == {'current': 37, 'previous': 5}
        with open(str(log), 'ab') as handle:       # new lines: ranked again, the new top
            handle.write(follow.lines('203.0.113.42', 45))
        assert in_timezone('UTC', lambda: follower._poll(follower.sources[0])) > 0
        in_timezone('UTC', step)
        assert Watched.walks > 0
        assert tops() == {'current': 45, 'previous': 5}
    finally:
        for source in follower.sources:
            source.close()
        follower.session.close()
