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


def test_the_haproxy_format_reads_no_line_whose_haproxy_shape_a_client_wrote():
    """Item 3's class for the haproxy format itself (a syslog file where nginx logs too): an
    HAProxy-shaped Referer in a combined line, bare or behind syslog's header, is no HAProxy line
    (before: searched for anywhere in the line, read as a request of 10.0.0.2); HAProxy's own
    lines, bare or behind a header, still are."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import text_logs
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    reader = text_logs.Haproxy(Settings(log_format='haproxy'))
    forged = scraper_lines(1, NOW_EPOCH - 3600, user=b'a b c', referer=haproxy_shaped_referer(PROXY),
                           agent='GET /job/%d HTTP/1.1').rstrip(b'\n')
    own = b'10.0.1.2:33317 [21/Nov/2026:03:10:00.123] fe be/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 "GET /job/1 HTTP/1.1"'
    for prefix in (b'', b'Nov 21 03:10:00 web nginx: ', b'<134>Nov 21 03:10:00 web nginx[12]: ', b'nginx: ',
                   b'<134>1 2026-11-21T03:10:00.123Z web nginx 12 - - '):
        assert reader.parse(prefix + forged) is None, prefix
        assert reader.parse_all([prefix + forged]) == []
        assert in_timezone('UTC', lambda: reader.parse(prefix.replace(b'nginx', b'haproxy') + own)).startswith(b'10.0.1.2 - - ['), prefix


def test_a_follower_never_switches_to_a_format_whose_address_field_holds_no_address():
    """A followed nginx JSON log whose new lines are combined lines with no address in their
    address field (nginx behind a Unix socket writes 'unix:'): the watch is astray, and deciding
    again keeps nginx_json (before: switched to combined, which counts nothing of them)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice
    watch = choice.Watch('nginx_json')
    watch.see(b''.join(loggen.line('unix:', NOW_EPOCH + i) for i in range(choice.SAMPLE_LINES)), True)
    assert watch.astray()
    with pytest.raises(BotDetectorError) as refused:
        watch.redecide('x.log')
    assert 'holds no address' in refused.value.message
    # Lines whose address field holds addresses: switched to as before.
    watch.see(b''.join(loggen.line('198.51.100.%d' % (i % 9 + 1), NOW_EPOCH + i) for i in range(choice.SAMPLE_LINES)), True)
    assert watch.astray() and watch.redecide('x.log') == 'combined'


def test_a_new_logs_first_lines_too_long_for_the_head_never_blind_the_follower(tmp_path):
    """--follow with auto, the log made after the start (a rotation): its first requests are a
    client's with a User-Agent of 30,000 bytes (nginx writes what it cannot print as \\xHH, four
    bytes a byte: 8 KiB of header make 32 KiB of log), so fewer than choice.FEW whole lines fit
    in the first choice.HEAD_BYTES. The follower still tells the format once FEW lines are there,
    and blocks the scraper after them (before: never told, the log never read while it ran)."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    long_agent = '\\xFF' * 7500
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'auto']) as follower:
        follower.mark()
        log.write_bytes(in_timezone('UTC', lambda: b''.join(
            loggen.line('198.51.100.7', follow.START - 60 + i, agent=long_agent) for i in range(3))))
        with open(str(log), 'ab') as handle:
            handle.write(follow.lines(SCRAPER, follow.THRESHOLD + 10))
        follower.caught_up()
        assert follow.blocked(files) == [SCRAPER.encode()]
        assert follower.stop() == 0
