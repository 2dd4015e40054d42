"""A follower whose state cannot be written (a full state directory: ENOSPC; here a real write
failure of the same kind, the file size limit RLIMIT_FSIZE set in the follower's own process with
SIGXFSZ ignored, so the write fails with EFBIG) warns, keeps following and deciding, and tries
again at the next save (issue 38 item 8; found: it died at its first save and at every restart)."""
import resource
import signal
import subprocess
import sys
import time

import test_follow as follow
from conftest import CORE

LIMIT = 4096        # bytes: the blocklist, activity log and status files stay under it, the state does not


def _limited():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


class LimitedFollowing(follow.Following):
    def start(self):
        env = dict(follow.os.environ, TZ='UTC', LC_ALL='C.UTF-8', **self.env)
        args = [sys.executable, str(CORE), '--follow', '--state-dir', str(self.state_dir), '--now', '@%d' % self.now]
        self.started = time.time()
        self.proc = subprocess.Popen(args + [str(a) for a in self.options()] + [str(self.log)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limited)
        follow.wait_for(lambda: self.decided_since(self.started) or self.proc.poll() is not None, what='first decision')
        assert self.proc.poll() is None, self.proc.communicate()
        return self


def test_a_follower_that_cannot_write_its_state_warns_and_keeps_following(tmp_path):
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    # Many addresses under the threshold: a state of their counts larger than LIMIT.
    log.write_bytes(b''.join(follow.lines('198.51.%d.%d' % (i // 200, i % 200 + 1), 2) for i in range(600)))
    for attempt in range(2):        # a restart too
        with LimitedFollowing(tmp_path, files, log) as follower:
            # Past SAVE_EVERY (5 s): a save tried and failed (short sleeps, it must stay alive throughout).
            until = time.time() + 6.5
            follow.wait_for(lambda: follower.proc.poll() is not None or time.time() > until, 8, 'a save tried')
            assert follower.proc.poll() is None, follower.proc.communicate()
            follower.mark()
            with open(str(log), 'ab') as handle:
                handle.write(follow.lines('203.0.113.%d' % (4 + attempt), follow.THRESHOLD))
            follower.caught_up()
            assert follower.proc.poll() is None
            assert follower.stop() == 0
            stderr = follower.proc.stderr.read().decode()
        assert 'Traceback' not in stderr and 'state file' in stderr and 'not saved' in stderr, stderr
    assert follow.blocked(files) == [b'203.0.113.4', b'203.0.113.5']
