"""A scraper never chooses ``log_format: auto``'s format (issue 44, items 2 and 3): what the
client writes (a Basic-auth user, which nginx logs unescaped, the request, the Referer, the
User-Agent) never decides it; auto judges a format by the fields a client cannot write, weighs
distinct addresses rather than lines, and never takes, nor hints towards, a format under which
the log's addresses stop counting. Real runs of the command and a real follower here; the
property tests over every format's lines are in test_auto_client_fields.py."""
import pytest

import loggen
import test_follow as follow
from conftest import in_timezone, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SERVER = '10.0.0.5'
PROXY = '10.0.0.2'          # a trusted proxy (a balancer): never a client of its own
SCRAPER = '203.0.113.66'
OTHER_SCRAPER = '203.0.113.67'


def _with_user(line, user):
    """The combined line nginx writes for a request whose Basic-auth user is ``user`` ($remote_user, unescaped)."""
    return line.replace(b' - - [', b' - ' + user + b' [', 1)


def haproxy_shaped_referer(address):
    """A Referer shaped as an HAProxy httplog line naming ``address``, up to its request: with the
    Referer's closing quote its last field, and the User-Agent after it its quoted request."""
    return ('http://jobs.example/ %s:41342 [21/Nov/2026:03:10:00.123] fe be/srv1 0/0/0/1/1 200 512 - - ---- 1/1/1/1/0 0/0' % address)


def scraper_lines(count, epoch, user=b'a b', referer='-', agent=loggen.BROWSERS[0], path='/job/%d'):
    return in_timezone('UTC', lambda: b''.join(
        _with_user(loggen.line(SCRAPER, epoch, path=path % i, referer=referer, agent=agent % i if '%d' in agent else agent),
                   user) for i in range(count)))


def visitors(count, epoch):
    return in_timezone('UTC', lambda: b''.join(loggen.line('198.51.100.%d' % (i % 5 + 1), epoch, path='/job/%d' % i)
                                               for i in range(count)))


def run(files, log, *extra):
    return run_core(files.options() + ['--server-ip', SERVER, '--now', NOW] + list(extra) + [log])


def blocked(files):
    return sorted(line for line in (files.read('blocklist') or b'').split(b'\n') if line)


@pytest.mark.parametrize('user', [b'a b', b'john smith', b'a [b] c', b'x 198.51.100.9 - y'])
def test_a_scraper_holding_most_first_lines_with_a_blank_in_its_user_is_read_as_combined(tmp_path, files, user):
    """45 of the first 50 lines are the scraper's, its Basic-auth user holding a blank (which made
    its lines fit vhost_combined): auto reads the log as combined and blocks it, as combined does
    (before: read as vhost_combined, every line counted as '-', nothing blocked)."""
    log = tmp_path / 'access.log'
    log.write_bytes(scraper_lines(45, NOW_EPOCH - 3600) + visitors(5, NOW_EPOCH - 3600)
                    + scraper_lines(1155, NOW_EPOCH - 3600))
    got = run(files, log, '--log-format', 'auto')
    assert got.returncode == 0, got.stderr
    assert b'Log format of %s: combined (detected)' % bytes(log) in got.stdout, got.stdout
    assert blocked(files) == [SCRAPER.encode()]
    assert b'vhost_combined' not in got.stderr, got.stderr


def test_the_combined_runs_hint_never_names_a_format_under_which_addresses_stop_counting(tmp_path, files):
    """The same log read as combined (the default): no hint to switch to vhost_combined (before:
    'they read as vhost_combined: set log_format: vhost_combined', which stops all counting)."""
    log = tmp_path / 'access.log'
    log.write_bytes(scraper_lines(45, NOW_EPOCH - 3600) + visitors(5, NOW_EPOCH - 3600)
                    + scraper_lines(1155, NOW_EPOCH - 3600))
    got = run(files, log)
    assert got.returncode == 0 and got.stderr == b'', got.stderr
    assert blocked(files) == [SCRAPER.encode()]


def test_a_referer_shaped_like_an_haproxy_line_gets_no_one_blocked(tmp_path, files):
    """Item 3: user 'a b c', a Referer shaped like an HAProxy line naming the trusted proxy and a
    User-Agent 'GET /job/N HTTP/1.1': the log stays combined and the proxy is not appended (before:
    read as haproxy, 10.0.0.2 appended with 1100 requests it never made); the scraper is."""
    log = tmp_path / 'access.log'
    log.write_bytes(scraper_lines(1100, NOW_EPOCH - 3600, user=b'a b c', referer=haproxy_shaped_referer(PROXY),
                                  agent='GET /job/%d HTTP/1.1') + visitors(5, NOW_EPOCH - 3600))
    got = run(files, log, '--log-format', 'auto')
    assert got.returncode == 0, got.stderr
    assert b'Log format of %s: combined (detected)' % bytes(log) in got.stdout, got.stdout
    assert blocked(files) == [SCRAPER.encode()]
    default = run(files, log)
    assert default.returncode == 0 and default.stderr == b'', default.stderr


def test_a_follower_is_not_flipped_by_a_burst_of_lines_with_a_blank_in_their_user(tmp_path):
    """--follow with auto on a combined log: a 60-line burst of the scraper's (user 'a b'), then
    another scraper (the same user) at a quarter of the traffic: the follower reads on as
    combined, says nothing, and blocks both (before: flipped to vhost_combined, the second
    never blocked)."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(follow.lines('198.51.100.1', 20))
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'auto']) as follower:
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(in_timezone('UTC', lambda: b''.join(_with_user(loggen.line(SCRAPER, follow.START - 60 + i % 50), b'a b')
                                                             for i in range(60))))
        follower.caught_up()
        assert follow.blocked(files) == [SCRAPER.encode()]      # 60 > the threshold of 50
        for round_ in range(4):
            follower.mark()
            with open(str(log), 'ab') as handle:
                for i in range(20):
                    handle.write(follow.lines('198.51.100.%d' % (i % 7 + 2), 3))
                    handle.write(in_timezone('UTC', lambda: _with_user(loggen.line(OTHER_SCRAPER, follow.START - 30), b'a b')))
            follower.caught_up()
        assert follower.stop() == 0
        stderr = follower.proc.stderr.read().decode()
    assert 'log_format auto' not in stderr and 'vhost_combined' not in stderr, stderr
    assert follow.blocked(files) == sorted([SCRAPER.encode(), OTHER_SCRAPER.encode()])      # 80 lines at a quarter
