"""Issue 27: the seek and follow mode with logs in another format than combined (found by a
hunt; each test failed on 4028e83): a bracketed time a client writes never moves the seek nor
hides the rotated file; a followed log that does not exist yet is read in its format once it
does; an unfinished last line at a follower's start is counted once, whole."""
import json

import pytest

import logformats
import loggen
from conftest import Files, in_timezone, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def _run(files, log, fmt, extra=()):
    capture = ['--haproxy-user-agent-capture', '1'] if fmt == 'haproxy' else []
    proc = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--json', '--check',
                                       '--log-format', fmt] + capture + list(extra) + [log])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize('fmt', ['nginx_json', 'caddy', 'traefik_json', 'haproxy'])
def test_a_bracketed_time_in_a_user_agent_does_not_move_the_seek(tmp_path, fmt):
    """The seek's probes (logfile.probe) take the first ``[dd/Mon/yyyy:hh:mm:ss +zzzz]`` text
    of a line for its time. In combined that is the line's own timestamp; in nginx_json,
    caddy, traefik_json and haproxy the line's time is written otherwise, and the first such
    text is wherever a client put it (its User-Agent). One request whose User-Agent holds
    ``[01/Jan/2020:00:00:00 +0000]``, last in a log in time order, makes the seek start at
    that line: the 1100 requests of 203.0.113.7 in the previous hour before it are skipped,
    and a scraper is never blocked (any client can hide a whole log this way).
    Expected (the formats guide: these logs are read whole; the contract: seek = --full-scan
    on a log in time order): the seek run blocks 203.0.113.7 as the full scan does.
    Got: the seek run reads only the last line (mode 'seek', a few hundred bytes) and blocks nothing."""
    def build():
        combined = b''.join(loggen.line('203.0.113.7', NOW_EPOCH - 3000 + i, path='/job/%d' % i) for i in range(1100))
        combined += loggen.line('198.51.100.9', NOW_EPOCH - 10, agent='Mozilla [01/Jan/2020:00:00:00 +0000]')
        return logformats.render_log(fmt, combined, vary=False)[0]
    log = tmp_path / ('access.' + fmt)
    log.write_bytes(in_timezone('UTC', build))
    full = _run(Files(tmp_path / 'full'), log, fmt, ['--full-scan'])
    seek = _run(Files(tmp_path / 'seek'), log, fmt)
    assert full['blocked'] == [{'address': '203.0.113.7', 'count': 1100, 'window': 'previous'}]
    assert seek['blocked'] == full['blocked']


def _rendered(fmt, address, count):
    import test_follow as follow
    return in_timezone('UTC', lambda: logformats.render_log(fmt, follow.lines(address, count), vary=False)[0])


def test_a_follower_reads_a_log_that_does_not_exist_yet_in_its_log_format(tmp_path):
    """--follow --log-format nginx_json on a log that does not exist at the start (waited for,
    guide_follow: 'read from its start'). Follower.__init__ makes a reader only for the logs
    that exist (``if os.path.exists(path)``), so the log, once written, is read as combined:
    its JSON lines count nothing, silently (no unparsed line, no ``unparsed_lines`` in the
    status). 60 requests of 203.0.113.2 (threshold 50), which a cron run at that moment
    blocks (and the reference on the twin log), are never blocked.
    Expected: 203.0.113.2 blocked, as a run would. Got: nothing blocked."""
    import test_follow as follow
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'nginx_json']) as follower:
        follower.mark()
        log.write_bytes(_rendered('nginx_json', '203.0.113.2', 60))
        follower.caught_up()
        follow.wait_for(lambda: follow.blocked(files) == [b'203.0.113.2'], 5, 'blocking 203.0.113.2')


@pytest.mark.parametrize('case', ['garbage', 'half_json_line'])
def test_a_last_line_unfinished_at_the_start_is_not_counted_unparsed_before_it_is_read(tmp_path, case):
    """--follow starts on a log whose last line has no newline yet (a server writing it). The
    start (Follower._start) keeps that line out of the counts, to read it once finished, but
    adds the tail tally's unparsed lines (``_take_unparsed`` of ``read.tail``) to the log's
    count, and warns with it. When the newline comes the line is read again: a line that does
    not parse is counted twice ('garbage': unparsed_lines 2 for one line), and a JSON line
    that was only half written is counted unparsed and warned about although, whole, it
    parses and counts as a request ('half_json_line': unparsed_lines 1).
    Expected: each line counted once, whole: unparsed_lines 1 ('garbage'), 0 ('half_json_line')."""
    import time
    import test_follow as follow
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    last = b'GET /job/1 garbage more\n' if case == 'garbage' else _rendered('nginx_json', '203.0.113.3', 1)
    log.write_bytes(_rendered('nginx_json', '203.0.113.2', 60) + last[:-10])
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'nginx_json']) as follower:
        follow.wait_for(lambda: 'unparsed_lines' in (follower.status() or {}))
        follower.mark()
        time.sleep(0.3)
        with open(str(log), 'ab') as handle:
            handle.write(last[-10:])
        follower.caught_up()
        assert follower.status()['unparsed_lines'] == {str(log): 1 if case == 'garbage' else 0}


def test_a_bracketed_time_in_a_json_logs_first_line_does_not_hide_the_rotated_file(tmp_path):
    """--rotated: a log whose start shows no time has its rotated file read too (formats guide:
    the JSON formats' logs always do). logrotate ran at 04:00; access.log.1 holds the previous
    hour, 1100 requests of 203.0.113.7. When the first line of access.log (a client's) holds
    ``[01/Jan/2020:00:00:00 +0000]`` in its User-Agent, plan_seek takes that for the log's first
    time, older than the windows, and read_log does not read access.log.1, with or without
    --full-scan. Expected: 203.0.113.7 blocked (as without that user agent). Got: nothing blocked."""
    def build():
        first = loggen.line('198.51.100.9', NOW_EPOCH - 200, agent='Mozilla [01/Jan/2020:00:00:00 +0000]')
        current = first + b''.join(loggen.line('198.51.100.1', NOW_EPOCH - 100 + i // 10) for i in range(300))
        previous = b''.join(loggen.line('203.0.113.7', NOW_EPOCH - 3000 + i) for i in range(1100))
        return (logformats.render_log('nginx_json', current, vary=False)[0],
                logformats.render_log('nginx_json', previous, vary=False)[0])
    current, previous = in_timezone('UTC', build)
    log = tmp_path / 'access.log'
    log.write_bytes(current)
    (tmp_path / 'access.log.1').write_bytes(previous)
    for name, extra in (('seek', ['--rotated']), ('full', ['--rotated', '--full-scan'])):
        doc = _run(Files(tmp_path / name), log, 'nginx_json', extra)
        assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1100, 'window': 'previous'}], name


@pytest.mark.parametrize('fresh', [b'', b'{"remote_addr":"203.0'])
def test_a_follower_with_auto_on_a_log_with_no_whole_line_yet_waits_for_one(tmp_path, fresh):
    """--follow --log-format auto started on a log a rotation emptied a moment ago (nothing, or
    a line not yet whole) and no rotated sibling: it exited 2 ("no whole line yet to tell its
    format from"; under systemd, a restart every 5 s) instead of waiting for a line, as
    guide_follow says. Expected: it runs, tells nginx_json from the first whole line, and
    blocks the 60 requests of 203.0.113.2 (threshold 50) as a run would."""
    import test_follow as follow
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(fresh)
    data = _rendered('nginx_json', '203.0.113.2', 60)
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'auto']) as follower:
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(data[len(fresh):] if data.startswith(fresh) else b'\n' + data)
        follower.caught_up()
        follow.wait_for(lambda: follow.blocked(files) == [b'203.0.113.2'], 5, 'blocking 203.0.113.2')
