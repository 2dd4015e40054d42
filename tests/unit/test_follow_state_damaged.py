"""A follower's state file that is damaged (its header nested deeper than Python's json reads,
not JSON, not an object, a count line that is no count) is a bad state: the follower warns once,
reads the log cold and follows on, at every start; it never dies on it (issue 44, item 9)."""
import pytest

from test_follow import THRESHOLD, Following, blocked, lines, setup
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import follower_state

GOOD_HEADER = b'{"format": 1, "logs": [], "settings": {}, "positions": [], "hour": 0, "now": 0}'
DAMAGED = {
    'header nested deep': b'[' * 100000 + b'\n',
    'header nested deep and closed': b'{"format": 1, "logs": %s}\n' % (b'[' * 100000 + b']' * 100000),
    'header not json': b'cos\nsystem\n(S"echo pwned"\ntR.\n',
    'header not an object': b'[1, 2]\n',
    'header not utf-8': b'{"format": 1, "logs": ["\xff"]}\n',
    'count line not a count': GOOD_HEADER + b'\n@21/Nov/2026:10\nmany 203.0.113.1\n',
    'count line before a stamp': GOOD_HEADER + b'\n5 203.0.113.1\n',
}


@pytest.mark.parametrize('name', sorted(DAMAGED))
def test_a_damaged_follower_state_is_warned_about_and_read_cold(tmp_path, name):
    files, log = setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(lines('203.0.113.7', THRESHOLD + 5))
    state_dir = tmp_path / 'state'
    state_dir.mkdir(mode=0o700)
    path = state_dir / (follower_state.key_of([str(log)]) + '.json')
    for start in range(2):          # every start, not only the first
        path.write_bytes(DAMAGED[name])
        with Following(tmp_path, files, log) as follower:
            follower.caught_up()
            assert blocked(files) == [b'203.0.113.7']
            assert follower.stop() == 0
            stderr = follower.proc.stderr.read().decode()
        warnings = [line for line in stderr.splitlines() if 'ignored' in line]
        assert warnings == ['bot-detector: warning: state file %s ignored: not a state a follower writes' % path], stderr
        assert 'Traceback' not in stderr, stderr
        files.blocklist.write_bytes(b'')


def test_a_good_state_is_read_without_a_warning(tmp_path):
    """The other side: a state the follower wrote itself is resumed, silently."""
    files, log = setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(lines('203.0.113.8', 10))
    with Following(tmp_path, files, log) as follower:
        follower.saved()
        assert follower.stop() == 0
    with Following(tmp_path, files, log) as follower:
        follower.caught_up()
        assert follower.stop() == 0
        assert b'ignored' not in follower.proc.stderr.read()
