"""--status and the lock directory (issue 39, section 4): a follower is listed from its start
(it was not for its first 5 s), and stopped followers and runs leave no status, pid or lock
files piling up in the lock directory (/run/bot-detector as root)."""
import os
import signal
import subprocess
import sys
import time

import test_follow as follow
from conftest import CORE, run_core
from loadfactor import Slowdown
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import follower_state
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import writer


def _start(tmp_path, files, log):
    args = [sys.executable, str(CORE), '--follow', '--state-dir', str(tmp_path / 'state')]
    return subprocess.Popen(args + [str(a) for a in files.options() + ['--server-ip', follow.SERVER, log]],
                            env=dict(os.environ, TZ='UTC'), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_status_lists_a_follower_from_its_start(tmp_path):
    """An idle log: --status lists the follower as running within 2 s of its start."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(follow.lines('203.0.113.50', 3))
    load = Slowdown()
    started = time.time()
    proc = _start(tmp_path, files, log)
    try:
        expected = b'(pid %d): running' % proc.pid
        follow.wait_for(lambda: expected in run_core(files.options() + ['--status']).stdout, 10, 'listed')
        took = time.time() - started
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert took < load.bound(2.0), (took, load.factor)      # 2 s on an idle machine; its first 5 s, before


def test_stopped_followers_and_runs_leave_no_files_in_the_lock_directory(tmp_path):
    """20 followers of 20 logs started and stopped, and 20 runs: none of their files is left."""
    files, dummy = follow.setup(tmp_path)
    logs = [tmp_path / 'logs' / ('access-%d.log' % number) for number in range(20)]
    logs[0].parent.mkdir()
    for log in logs:
        log.write_bytes(follow.lines('203.0.113.51', 3))
    for log in logs:
        proc = _start(tmp_path, files, log)
        try:
            expected = b'(pid %d): running' % proc.pid
            follow.wait_for(lambda: expected in run_core(files.options() + ['--status']).stdout, 10, 'listed')
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        got = run_core(files.options() + ['--server-ip', follow.SERVER, log])
        assert got.returncode == 0, got.stderr
    directory = follow.lock_dir()
    keys = [follower_state.key_of([str(log)]) for log in logs]
    left = [name for name in os.listdir(directory) if any(name.startswith(key + '.') for key in keys)]
    assert left == []
    assert not os.path.exists(writer.lock_file(str(files.blocklist)))
