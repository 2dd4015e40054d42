"""Check mode finds what the real run would fail on (issue 39, section 1): with a blocklist or
activity log the run cannot append to, or a lock it cannot take, `--check` exits with the
real run's status and error line instead of printing `Would block ...` and exiting 0, and
writes nothing. Each case runs the command twice, as real processes: `--check` first, then
the real run on the same files."""
import os
import shutil
import subprocess
import tempfile

import pytest

import loggen
from conftest import in_timezone, require_root, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
NOBODY = 65534
SYSTEM_PYTHON = '/usr/bin/python3'      # the venv's lives under /root, which nobody cannot enter


def tree(base):
    """Every path under ``base`` with its type, mode, owner and content: what a run could change."""
    found = {}
    for directory, dirs, names in os.walk(str(base)):
        for name in sorted(dirs + names):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            content = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, 'rb') as handle:
                    content = handle.read()
            found[os.path.relpath(path, str(base))] = (info.st_mode, info.st_uid, content)
    return found


def log_in(directory):
    log = os.path.join(str(directory), 'access.log')
    with open(log, 'wb') as handle:
        handle.write(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    os.chmod(log, 0o644)
    return log


def both_runs(run, base, args):
    """``--check`` then the real run; the tree under ``base`` is unchanged by the first."""
    before = tree(base)
    check = run(['--check'] + args)
    assert tree(base) == before, 'check mode wrote'
    real = run(args)
    return check, real


def as_root_cases(base, mount):
    """(name, how to make it, blocklist, activity log): each case of a list the run cannot append to."""
    lists = base / 'lists'
    lists.mkdir()
    blocklist, activity = lists / 'ipblocklist.txt', lists / 'bot-detector.log'
    yield 'blocklist is a directory', blocklist.mkdir, blocklist, activity
    yield 'activity log is a directory', activity.mkdir, blocklist, activity
    yield 'blocklist is a FIFO', lambda: os.mkfifo(str(blocklist)), blocklist, activity
    yield 'blocklist directory missing', lambda: None, lists / 'gone' / 'ipblocklist.txt', activity

    def read_only():
        point = mount('ro', 'size=1m')
        (point / 'ipblocklist.txt').write_bytes(b'192.0.2.1\n')
        subprocess.run(['mount', '-o', 'remount,ro', str(point)], check=True)
    yield 'read-only filesystem', read_only, base / 'ro' / 'ipblocklist.txt', activity


@pytest.mark.parametrize('case', ['blocklist is a directory', 'activity log is a directory', 'blocklist is a FIFO',
                                  'blocklist directory missing', 'read-only filesystem'])
def test_check_fails_as_the_real_run_does_on_a_list_it_cannot_append_to(tmp_path, mount, case):
    require_root('this test needs root (tmpfs mounts, files of root)')
    base = tmp_path / 'host'
    base.mkdir()
    log = log_in(tmp_path)
    (name, make, blocklist, activity), = [found for found in as_root_cases(base, mount) if found[0] == case]
    make()
    args = ['--blocklist', blocklist, '--exclusions', base / 'ipexcludedlist.txt', '--activity-log', activity,
            '--server-ip', '10.0.0.5', '--now', NOW, log]
    check, real = both_runs(run_core, base, args)
    assert real.returncode == 3, (name, real.stdout, real.stderr)
    assert (check.returncode, check.stderr) == (real.returncode, real.stderr), name
    assert check.stderr.startswith(b'bot-detector: error: ') and check.stderr.count(b'\n') == 1


def test_check_still_says_what_it_would_block_when_the_lists_are_fine(tmp_path, files):
    log = log_in(tmp_path)
    files.blocklist.write_bytes(b'192.0.2.1\n')
    got = run_core(['--check'] + files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0, got.stderr
    assert b'Would block IP address: 203.0.113.7 (1200 requests)' in got.stdout, got.stdout
    assert files.blocklist.read_bytes() == b'192.0.2.1\n' and not files.activity_log.exists()


@pytest.fixture
def shared_dir():
    """A directory every user can enter (pytest's own are root's 0700)."""
    path = tempfile.mkdtemp(prefix='bd-check-')
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize('case', ['blocklist not writable', 'lock directory planted'])
def test_check_as_another_user_fails_as_the_real_run_does(shared_dir, readable_core, case):
    """As nobody: a blocklist of root's it may read but not write; a lock directory
    ($XDG_RUNTIME_DIR/bot-detector) another user made."""
    require_root('this test needs root (setpriv to nobody)')
    if shutil.which('setpriv') is None or not os.path.exists(SYSTEM_PYTHON):
        pytest.fail('setpriv and /usr/bin/python3 are needed')
    log = log_in(shared_dir)
    own, runtime = os.path.join(shared_dir, 'own'), os.path.join(shared_dir, 'runtime')
    for directory in (own, runtime):
        os.mkdir(directory, 0o700)
        os.chown(directory, NOBODY, NOBODY)
    blocklist = os.path.join(own, 'ipblocklist.txt')
    if case == 'blocklist not writable':
        with open(blocklist, 'wb') as handle:
            handle.write(b'192.0.2.1\n')
        os.chmod(blocklist, 0o644)          # root's: nobody reads it, and cannot append
    else:
        os.mkdir(os.path.join(runtime, 'bot-detector'), 0o700)       # root's, not nobody's
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', XDG_RUNTIME_DIR=runtime)

    def run(argv):
        return subprocess.run(['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups', SYSTEM_PYTHON,
                               str(readable_core)] + [str(a) for a in argv],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    args = ['--blocklist', blocklist, '--exclusions', os.path.join(own, 'ex'), '--activity-log',
            os.path.join(own, 'activity.log'), '--server-ip', '10.0.0.5', '--now', NOW, log]
    check, real = both_runs(run, shared_dir, args)
    assert real.returncode == 3, (real.stdout, real.stderr)
    assert (check.returncode, check.stderr) == (real.returncode, real.stderr)
    if case == 'blocklist not writable':
        with open(blocklist, 'rb') as handle:
            assert handle.read() == b'192.0.2.1\n'
    else:
        assert not os.path.exists(blocklist)
