"""Follow mode with ``log_format: auto`` (issue 38, item 4, the follower's part): a log made
after the start is told from a few lines that agree, and its format is checked as it grows:
when most of its new lines no longer fit, the follower says so and decides again. A new log's
first odd lines (one client's request) must not fix the wrong format for good."""
import pytest

import loggen
import logformats
import test_follow as follow
from conftest import in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice


@pytest.mark.parametrize('first', ['vhost_combined', 'nginx_json'])
def test_a_follower_on_a_new_log_whose_first_lines_are_odd_decides_again(tmp_path, first):
    """--follow with auto, the log made after the start: its first lines are in another format
    (the server's before a reload with another log_format); the combined lines after them no
    longer fit, so the follower says so and reads on as combined, blocking the scraper (before:
    read as the first format for good, nothing blocked, nothing said). A client's lines cannot do
    this: a Basic-auth user with a blank is a combined line (test_auto_steering.py)."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'auto']) as follower:
        follower.mark()
        log.write_bytes(in_timezone('UTC', lambda: logformats.render_log(first, b''.join(
            loggen.line('198.51.100.7', follow.START - 60 + i) for i in range(3)), vary=False)[0]))
        follower.caught_up()
        for count in (50, follow.THRESHOLD):
            follower.mark()
            with open(str(log), 'ab') as handle:
                handle.write(follow.lines('203.0.113.4', count))
            follower.caught_up()
        assert follow.blocked(files) == [b'203.0.113.4']
        assert follower.stop() == 0
        stderr = follower.proc.stderr.read().decode()
    assert ('bot-detector: warning: %s: most of the last %d lines do not parse as %s (log_format auto): '
            'read as combined from now on' % (log, 50, first)) in stderr.splitlines(), stderr


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_the_watch_stays_while_most_lines_fit_and_redecides_when_they_do_not(fmt):
    """choice.Watch over each format: a few odd lines among a format's lines keep it; once the
    lines are another format's, it is astray and decides that one."""
    combined = in_timezone('UTC', lambda: b''.join(loggen.line('198.51.100.%d' % (i % 9 + 1), 1763698423 + i)
                                                   for i in range(60)))
    rendered = logformats.render_log(fmt, combined, style=0, vary=False)[0]
    own = [line for line in rendered.split(b'\n') if line.strip() and not line.startswith(b'#')]
    name = choice.detect(rendered, 'x.log')
    watch = choice.Watch(name)
    odd = [b'198.51.100.9 - john doe [21/Nov/2025:04:10:00 +0000] "GET /job/1 HTTP/1.1" 200 5 "-" "curl"', b'\x00garbage']
    watch.see(b'\n'.join(own[:20] + odd + own[20:40]) + b'\n', True)
    assert not watch.astray()
    other = 'combined' if name != 'combined' else 'nginx_json'
    foreign = combined if other == 'combined' else logformats.render_log(other, combined, style=0, vary=False)[0]
    watch.see(foreign, True)
    if name == 'w3c':
        assert not watch.astray()       # w3c reads any line: its #Fields: line says which
    else:
        assert watch.astray() and watch.redecide('x.log') == other
