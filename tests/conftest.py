"""Shared helpers: where things are, and how to run the command and the reference."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The core package; the directory itself is the host command (its __main__.py).
CORE = ROOT / 'plugins' / 'module_utils' / 'bot_detector'
REFERENCE = ROOT / 'tests' / 'reference' / 'bot-detector.sh'

# `make setup` links the checkout as .build/ansible_collections/jobboard/bot_detector.
sys.path.insert(0, str(ROOT / '.build'))
sys.path.insert(0, str(ROOT / 'tests'))
# The tests import in_timezone from here; the benchmarks, without pytest, from loggen.
from loggen import in_timezone  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
# ansible, ansible-doc and molecule are the ones installed beside this interpreter (.venv).
os.environ['PATH'] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', '')


def _lock_directory_files():
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists.writer import ROOT_LOCK_DIR
    try:
        return ROOT_LOCK_DIR, set(os.listdir(ROOT_LOCK_DIR))
    except OSError:
        return ROOT_LOCK_DIR, set()


def _running(pid_file):
    try:
        with open(pid_file) as handle:
            os.kill(int(handle.read().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


def _own_blocklist_keys(session):
    """The lock keys (lists/writer.lock_file) of every file under this session's temporary
    directory: its scratch blocklists among them."""
    import zlib
    try:
        base = str(session.config._tmp_path_factory.getbasetemp())      # pylint: disable=protected-access
    except (AttributeError, OSError, ValueError):
        return set()
    keys = set()
    for directory, dummy, names in os.walk(base):
        for name in names:
            path = os.fsencode(os.path.realpath(os.path.join(directory, name)))
            keys.add('%08x%08x' % (zlib.crc32(path) & 0xffffffff, zlib.adler32(path) & 0xffffffff))
    return keys


def pytest_sessionstart(session):
    if not hasattr(session.config, 'workerinput'):      # the controller (or a run without xdist)
        session.config.lock_directory_before = _lock_directory_files()[1]


def pytest_sessionfinish(session):
    """The tests run as root, so their runs and followers use root's lock directory
    (/run/bot-detector): the status and pid files of the followers they killed (kill -9 on
    purpose) and the enforcement records of their scratch blocklists would stay there, one set
    a test. What the session added is removed at its end, but a live follower's and the locks
    (removed by their runs)."""
    before = getattr(session.config, 'lock_directory_before', None)
    if before is None:
        return
    directory, now = _lock_directory_files()
    own = _own_blocklist_keys(session)
    for name in sorted(now - before):
        path = os.path.join(directory, name)
        if name.endswith('.lock') or name.startswith('follow-') and _running(path.rsplit('.', 1)[0] + '.pid'):
            continue
        # Another session running at the same time (another checkout's, a helper's) added files
        # too: only the enforcement records of this session's own blocklists go, else its
        # syncs would find their record gone and load in full, and --status say not in sync.
        if name.startswith('blocklist-') and name[len('blocklist-'):][:16] not in own:
            continue
        if name.startswith(('follow-', 'blocklist-')):
            try:
                os.unlink(path)
            except OSError:
                pass


@pytest.fixture(scope='session')
def fleet_cluster(tmp_path_factory):
    """One 3-master Redis cluster (tests/fleetstore.py) for every cluster case of the fleet store's
    tests, to keep make test's time: each case uses a fleet name (or windows) of its own, and a
    case that stops a master starts it again."""
    import fleetstore
    cluster = fleetstore.Cluster(tmp_path_factory.mktemp('fleet-cluster')).start()
    yield cluster
    cluster.kill()


@pytest.fixture(scope='session')
def readable_core():
    """A copy of the core package that every user can read, for a test that runs the command
    as another user: the checkout may be under a directory only its owner can enter (a clone
    under `mktemp -d` or /root). Returns its path, the command's directory."""
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix='bd-core-')
    os.chmod(base, 0o755)
    core = os.path.join(base, 'bot_detector')
    shutil.copytree(str(CORE), core, ignore=shutil.ignore_patterns('__pycache__'))
    for directory, dummy, names in os.walk(base):
        os.chmod(directory, 0o755)
        for name in names:
            os.chmod(os.path.join(directory, name), 0o644)
    yield Path(core)
    shutil.rmtree(base, ignore_errors=True)


def run_core(args, tz='UTC', cwd=None, extra_env=None):
    """The host command, as a real process. Returns the CompletedProcess (bytes)."""
    env = dict(os.environ, TZ=tz, LC_ALL='C.UTF-8', **(extra_env or {}))
    return subprocess.run([sys.executable, str(CORE)] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, check=False)


def run_reference(log, blocklist, exclusions, activity_log, server_ips, now, tz='UTC', extra_env=None):
    """The reference pipeline with the same files; ``log`` None runs it with no argument."""
    env = dict(os.environ, TZ=tz, BD_BLOCKLIST=str(blocklist), BD_EXCLUSIONS=str(exclusions),
               BD_ACTIVITY_LOG=str(activity_log), BD_SERVER_IP=' '.join(server_ips), BD_NOW=now)
    env.update(extra_env or {})
    args = [str(REFERENCE)] + ([] if log is None else [str(log)])
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)


def mask_duration(stdout):
    """The one figure allowed to differ: 'Execution time: N seconds'."""
    lines = stdout.split(b'\n')
    return b'\n'.join(b'Execution time: N seconds' if l.startswith(b'Execution time: ') else l for l in lines)


def mask_dates(activity):
    """Activity log lines without their `date` prefix."""
    return [l.split(b' | ', 1)[1] for l in activity.splitlines()]


class Files:
    """A scratch blocklist, exclusion list and activity log."""

    def __init__(self, base):
        base.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.blocklist = base / 'ipblocklist.txt'
        self.exclusions = base / 'ipexcludedlist.txt'
        self.activity_log = base / 'bot-detector.log'

    def options(self):
        return ['--blocklist', self.blocklist, '--exclusions', self.exclusions, '--activity-log', self.activity_log]

    def read(self, name):
        path = getattr(self, name)
        return path.read_bytes() if path.exists() else None


@pytest.fixture
def files(tmp_path):
    return Files(tmp_path / 'files')


def require_root(why='this test needs root'):
    """Root, or (outside CI) a skip; under CI a missing prerequisite is a failure."""
    if os.geteuid() != 0:
        if os.environ.get('CI') == 'true':
            pytest.fail(why)
        pytest.skip('needs root')


@pytest.fixture
def mount(tmp_path):
    """tmpfs mounts for the duration of a test."""
    require_root('this test needs root (tmpfs mounts)')
    mounted = []

    def make(name, options):
        point = tmp_path / name
        point.mkdir()
        subprocess.run(['mount', '-t', 'tmpfs', '-o', options, 'tmpfs', str(point)], check=True)
        mounted.append(point)
        return point
    yield make
    for point in mounted:
        subprocess.run(['umount', str(point)], check=False)


def fill_up(point):
    """Fill the small filesystem at ``point`` (a ``mount`` tmpfs) with a file 'filler'."""
    with open(str(point / 'filler'), 'wb') as filler:
        try:
            filler.write(b'x' * 1024 * 1024)
        except OSError:
            pass


@pytest.fixture
def zone():
    """Switch this process's local time zone, as TZ does for `date`."""
    old = os.environ.get('TZ')

    def switch(tz):
        os.environ['TZ'] = tz
        time.tzset()
    yield switch
    if old is None:
        os.environ.pop('TZ', None)
    else:
        os.environ['TZ'] = old
    time.tzset()
