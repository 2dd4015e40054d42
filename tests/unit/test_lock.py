"""The run's lock (issue 10, finding 8): a file the run creates itself, mode 0600, in a
directory only its user can enter (/run/bot-detector/ as root), held at most lock_timeout
seconds. Other users are real processes here (setpriv to nobody)."""
import os
import shutil
import subprocess
import tempfile

import pytest

import loggen
from conftest import CORE, in_timezone, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import writer

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
NOBODY = 65534
# Debian's interpreter: the venv's lives under /root, which nobody cannot enter.
SYSTEM_PYTHON = '/usr/bin/python3'


def require_root_and_setpriv():
    missing = os.geteuid() != 0 or shutil.which('setpriv') is None or not os.path.exists(SYSTEM_PYTHON)
    if missing:
        if os.environ.get('CI') == 'true':
            pytest.fail('these tests need root, setpriv and /usr/bin/python3')
        pytest.skip('needs root, setpriv and /usr/bin/python3')


def as_nobody(args):
    return ['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups'] + [str(a) for a in args]


@pytest.fixture
def shared_dir():
    """A directory every user can enter (pytest's own are root's 0700)."""
    path = tempfile.mkdtemp(prefix='bd-lock-')
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def write_log(directory):
    log = os.path.join(directory, 'access.log')
    with open(log, 'wb') as handle:
        handle.write(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    os.chmod(log, 0o644)
    return log


def test_another_user_locking_the_blocklist_directory_does_not_stall_the_run(shared_dir, files):
    """The old lock was flock on the blocklist's directory (/etc), which any user can open."""
    require_root_and_setpriv()
    log = write_log(shared_dir)
    blocklist_dir = os.path.join(shared_dir, 'etc')
    os.mkdir(blocklist_dir)
    os.chmod(blocklist_dir, 0o755)
    holder = subprocess.Popen(as_nobody([SYSTEM_PYTHON, '-c',
                                         'import fcntl, os, sys, time\n'
                                         'fd = os.open(sys.argv[1], os.O_RDONLY)\n'
                                         'fcntl.flock(fd, fcntl.LOCK_EX)\n'
                                         'print("held", flush=True)\n'
                                         'time.sleep(120)\n', blocklist_dir]), stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b'held\n'
        blocklist = os.path.join(blocklist_dir, 'ipblocklist.txt')
        try:
            got = subprocess.run([SYSTEM_PYTHON, str(CORE), '--blocklist', blocklist, '--exclusions', str(files.exclusions),
                                  '--activity-log', str(files.activity_log), '--server-ip', '10.0.0.5', '--now', NOW, log],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TZ='UTC'), timeout=30, check=False)
        except subprocess.TimeoutExpired:
            pytest.fail('the run waited for a lock another user holds')
        assert got.returncode == 0, got.stderr
        with open(blocklist, 'rb') as handle:
            assert handle.read() == b'203.0.113.7\n'
    finally:
        holder.kill()
        holder.wait()


def test_lock_file_is_the_runs_own_and_no_other_user_can_open_it(tmp_path, files):
    require_root_and_setpriv()
    held = writer.BlocklistWriter(str(files.blocklist), str(files.activity_log))
    held.lock()
    try:
        path = held.lock_path
        directory = os.path.dirname(path)
        assert directory == '/run/bot-detector'
        info, dir_info = os.lstat(path), os.lstat(directory)
        assert (dir_info.st_uid, dir_info.st_mode & 0o7777) == (0, 0o700)
        assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o600)
        for target in (path, directory):
            tried = subprocess.run(as_nobody([SYSTEM_PYTHON, '-c', 'import os, sys; os.open(sys.argv[1], os.O_RDONLY)', target]),
                                   stderr=subprocess.PIPE, check=False)
            assert tried.returncode != 0 and b'PermissionError' in tried.stderr
    finally:
        held.unlock()
    assert not os.path.exists(path)            # taken away with the lock: nothing piles up in /run


def test_a_lock_held_too_long_is_a_clear_error(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    # Another way to the same blocklist: the same lock.
    (tmp_path / 'link').symlink_to(files.base)
    held = writer.BlocklistWriter(str(tmp_path / 'link' / files.blocklist.name), None)
    held.lock()
    try:
        got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--lock-timeout', '1', log])
    finally:
        held.unlock()
    assert got.returncode == 3
    assert got.stderr == (b'bot-detector: error: cannot lock %s: another run has held its lock (%s) for 1 seconds '
                          b'(lock_timeout)\n' % (bytes(files.blocklist), held.lock_path.encode()))
    assert files.read('blocklist') is None and files.read('activity_log') is None
    again = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--lock-timeout', '1', log])
    assert again.returncode == 0 and files.read('blocklist') == b'203.0.113.7\n'


def test_a_run_as_another_user_locks_in_its_own_directory(shared_dir, readable_core):
    """Not root: $XDG_RUNTIME_DIR/bot-detector, else /tmp/bot-detector-<uid>, 0700 and the
    user's own; one planted by someone else is refused."""
    require_root_and_setpriv()
    log = write_log(shared_dir)
    own = os.path.join(shared_dir, 'nobody')
    os.mkdir(own)
    os.chown(own, NOBODY, NOBODY)
    lock_dir = '/tmp/bot-detector-%d' % NOBODY
    shutil.rmtree(lock_dir, ignore_errors=True)
    env = dict((k, v) for k, v in os.environ.items() if k != 'XDG_RUNTIME_DIR')
    env['TZ'] = 'UTC'
    args = [SYSTEM_PYTHON, str(readable_core), '--blocklist', os.path.join(own, 'ipblocklist.txt'), '--exclusions',
            os.path.join(own, 'ex'), '--activity-log', os.path.join(own, 'activity.log'), '--server-ip', '10.0.0.5',
            '--now', NOW, log]
    try:
        got = subprocess.run(as_nobody(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
        assert got.returncode == 0, got.stderr
        info = os.lstat(lock_dir)
        assert (info.st_uid, info.st_mode & 0o7777) == (NOBODY, 0o700)
        assert os.listdir(lock_dir) == []
        # Planted by another user (root here): refused, nothing appended.
        shutil.rmtree(lock_dir)
        os.mkdir(lock_dir, 0o700)
        got = subprocess.run(as_nobody(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
        assert got.returncode == 3
        assert got.stderr.startswith(b'bot-detector: error: cannot lock ') and b'%s' % lock_dir.encode() in got.stderr
        assert got.stderr.count(b'\n') == 1
        with open(os.path.join(own, 'ipblocklist.txt'), 'rb') as handle:
            assert handle.read() == b'203.0.113.7\n'         # the first run's, nothing more
        # With XDG_RUNTIME_DIR, the run locks there.
        runtime = os.path.join(shared_dir, 'runtime')
        os.mkdir(runtime, 0o700)
        os.chown(runtime, NOBODY, NOBODY)
        got = subprocess.run(as_nobody(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(env, XDG_RUNTIME_DIR=runtime), check=False)
        assert got.returncode == 0, got.stderr
        assert os.lstat(os.path.join(runtime, 'bot-detector')).st_mode & 0o7777 == 0o700
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)
