"""Issue 44 §8: where counts past count_budget go when the disk will not take them.

They spilled to TMPDIR, which any local user can fill: a cron run then failed with "cannot
read LOG: No space left on device" (the log was fine) and blocked nothing, and a follower
died with an ENOSPC traceback at every restart. Now they spill under the state directory
(STATE_DIR/spill, 0700, this user's only), and when that cannot be (a full filesystem, a
quota, no permission, a directory of another user's or a link planted there, a TMPDIR any
user writes) they stay in memory with one warning naming the directory and why: the run's
decisions are the reference's all the same. Past a share of the memory limit (the cgroup's,
here a real one the test makes) the smallest counts are dropped, with a second warning.

Real filesystems: tmpfs mounts (conftest.mount), full or filling while the counts spill;
EACCES as root without CAP_DAC_OVERRIDE. EDQUOT takes the same path as ENOSPC (any error of
a spill's write); this machine's kernel has no quota support (CONFIG_QUOTA) to make one."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORE, Files, fill_up, mask_duration, require_root
from unit.test_bounded_memory import NOW, SERVER, churn_log, reference
import test_follow as follow

THRESHOLD, TOP, BUDGET = 7, 20, 200


def run(files, log, state_dir, env=None, caps=(), budget=BUDGET):
    """The command as cron runs it, with a state directory; ``caps``: capabilities root runs without."""
    prefix = ['setpriv', '--bounding-set=' + ','.join('-' + cap for cap in caps)] if caps else []
    args = files.options() + ['--server-ip', SERVER, '--threshold', str(THRESHOLD), '--top', str(TOP), '--now', NOW,
                              '--count-budget', str(budget), '--state-dir', state_dir, log]
    return subprocess.run(prefix + [sys.executable, str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', **(env or {})), check=False)


def in_memory_warning(stderr, why):
    """The one warning line of counts kept in memory, which says why."""
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith('bot-detector: warning: counts past count_budget (%d distinct addresses) kept in memory, '
                               'none spilled to disk (' % BUDGET), lines
    assert why in lines[0], lines
    return lines[0]


@pytest.fixture
def churn(tmp_path):
    log = churn_log(tmp_path / 'access.log', 3000, THRESHOLD, seed=44)
    return log, reference(tmp_path, log, THRESHOLD, TOP)


@pytest.mark.parametrize('how', ['full', 'filling'])
def test_a_cron_run_whose_spill_directory_is_full_decides_in_memory(tmp_path, mount, churn, how):
    """A full tmpfs at STATE_DIR/spill (before the run, or filled by its own spill files):
    exit 0, the reference's output and blocklist, one warning naming the directory and
    ENOSPC; what a failed spill wrote is taken back, nothing left there."""
    log, expected = churn
    state = tmp_path / 'state'
    state.mkdir(mode=0o700)
    spills = mount('state/spill', 'size=%s,mode=0700' % ('64k' if how == 'full' else '40k'))
    if how == 'full':
        fill_up(spills)
    files = Files(tmp_path / 'files')
    got = run(files, log, state, env={'TMPDIR': str(spills)})      # TMPDIR too (where it spilled before): not used
    assert got.returncode == 0, got.stderr
    in_memory_warning(got.stderr, '%s: No space left on device' % spills)
    assert b'cannot read' not in got.stderr
    assert (mask_duration(got.stdout), files.read('blocklist')) == expected
    assert sorted(os.listdir(str(spills))) == (['filler'] if how == 'full' else [])
    again = run(Files(tmp_path / 'again'), log, state)          # its state kept: the next run is exact too
    assert again.returncode == 0 and mask_duration(again.stdout) == expected[0]


@pytest.mark.parametrize('case', ['no permission', 'another user', 'a link', 'world-writable TMPDIR'])
def test_a_spill_directory_it_cannot_or_must_not_use_keeps_the_counts_in_memory(tmp_path, churn, case):
    """EACCES (root without CAP_DAC_OVERRIDE, STATE_DIR/spill 0500), a STATE_DIR/spill of
    another user's, a link planted there (to a directory the attacker reads), no state
    directory and a TMPDIR any user writes: in memory, one warning saying why, nothing
    written there, the reference's decisions."""
    require_root('this test needs root (another user\'s directory, capabilities)')
    log, expected = churn
    state, elsewhere = tmp_path / 'state', tmp_path / 'elsewhere'
    state.mkdir(mode=0o700)
    elsewhere.mkdir(mode=0o777)
    caps, env, spills, why = (), None, state / 'spill', None
    if case == 'no permission':
        spills.mkdir(mode=0o500)
        caps, why = ['dac_override', 'dac_read_search'], '%s: Permission denied' % spills
    elif case == 'another user':
        spills.mkdir(mode=0o700)
        os.chown(str(spills), 65534, 65534)
        why = '%s belongs to user 65534' % spills
    elif case == 'a link':
        spills.symlink_to(elsewhere)
        why = '%s is a symbolic link' % spills
    else:
        env, spills, state = {'TMPDIR': str(elsewhere)}, elsewhere, None
        os.chmod(str(elsewhere), 0o1777)
        why = '%s is writable by other users' % elsewhere
    files = Files(tmp_path / 'files')
    got = subprocess.run([sys.executable, str(CORE)] + [str(a) for a in files.options() + [
        '--server-ip', SERVER, '--threshold', str(THRESHOLD), '--top', str(TOP), '--now', NOW, '--count-budget', str(BUDGET), log]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', **env),
        check=False) if state is None else run(files, log, state, caps=caps)
    assert got.returncode == 0, got.stderr
    in_memory_warning(got.stderr, why)
    assert (mask_duration(got.stdout), files.read('blocklist')) == expected
    assert os.listdir(str(spills)) == [] and os.listdir(str(elsewhere)) == []


def test_a_follower_whose_spill_directory_is_full_follows_on(tmp_path, mount):
    """A follower past count_budget on a full STATE_DIR/spill: it neither dies nor stops
    blocking; one warning; after a kill and a restart (the counts cold again) the same."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(b''.join(follow.lines('2001:db8:7::%x' % i, 1) for i in range(400)))
    (tmp_path / 'state').mkdir(mode=0o700)
    spills = mount('state/spill', 'size=64k,mode=0700')
    fill_up(spills)
    extra = ['--count-budget', '50']
    follower = follow.Following(tmp_path, files, log, extra=extra).start()
    try:
        for n, scraper in enumerate(['198.51.100.7', '198.51.100.8']):
            follower.mark()
            with open(str(log), 'ab') as handle:
                handle.write(b''.join(follow.lines('2001:db8:%d::%x' % (n, i), 1) for i in range(300))
                             + follow.lines(scraper, follow.THRESHOLD))
            follower.caught_up()
            assert follow.blocked(files)[-1] == scraper.encode()
            assert follower.proc.poll() is None
            if n == 0:
                follower.stop(signal.SIGKILL)
                follower.__exit__()
                follower = follow.Following(tmp_path, files, log, now=follow.START + int(time.time() - follower.started),
                                            extra=extra).start()
        assert follower.stop() == 0
        stderr = follower.proc.stderr.read().decode()
        assert b'Traceback' not in stderr.encode() and stderr.count('kept in memory, none spilled to disk') == 1, stderr
        assert '%s: No space left on device' % spills in stderr
        assert os.listdir(str(spills)) == ['filler']
    finally:
        follower.__exit__()


def memory_cgroup(name, limit):
    """A memory cgroup of this test's own with ``limit`` bytes (v2 memory.max at the root of
    the unified hierarchy; v1 memory.limit_in_bytes under this process's memory cgroup): its
    directory, for 'echo $$ > DIR/cgroup.procs'."""
    with open('/proc/self/cgroup') as handle:
        entries = [line.rstrip('\n').split(':', 2) for line in handle]
    v1 = [path for hierarchy, controllers, path in entries if 'memory' in controllers.split(',')]
    if v1:
        directory, knob = os.path.join('/sys/fs/cgroup/memory', v1[0].lstrip('/'), name), 'memory.limit_in_bytes'
    else:
        directory, knob = os.path.join('/sys/fs/cgroup', name), 'memory.max'
    os.mkdir(directory)
    with open(os.path.join(directory, knob), 'w') as handle:
        handle.write('%d\n' % limit)
    return directory


def test_past_the_memory_limit_the_smallest_counts_are_dropped(tmp_path):
    """No spill directory (no state_dir, no TMPDIR), in a memory cgroup of 256 MiB (the role's
    MemoryMax): the counts are held up to a quarter of it (256 MiB / 4 / 160 bytes = 419,430
    addresses), then those of the fewest requests are dropped, with a second warning; the
    addresses with more requests keep their counts: the reference's output and blocklist."""
    require_root('this test needs root (a memory cgroup)')
    limit, keys = 256 * 1024 * 1024, 256 * 1024 * 1024 // 4 // 160
    stamp = '21/Nov/2026:04:%02d:%02d +0000'
    log = tmp_path / 'access.log'
    with open(str(log), 'wb') as out:
        for start in range(0, 500000, 50000):
            out.write(b''.join(b'10.%d.%d.%d - - [%s] "GET /job/1 HTTP/1.1" 200 9 "-" "Mozilla/5.0"\n' % (
                i >> 16 & 255, i >> 8 & 255, i & 255, (stamp % (i // 60000, i % 60)).encode()) for i in range(start, start + 50000)))
        for n in range(25):         # last: counted whole after the drop; 3 over the threshold
            out.write(b''.join(b'198.51.100.%d - - [21/Nov/2026:04:10:00 +0000] "GET /job/2 HTTP/1.1" 200 9 "-" "curl"\n' % n
                               for dummy in range(2 + n * 2)))
    expected = reference(tmp_path, log, 44, TOP)
    files = Files(tmp_path / 'files')
    group = memory_cgroup('bot-detector-test-%d' % os.getpid(), limit)
    try:
        env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')
        env.pop('TMPDIR', None)
        got = subprocess.run(['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, sys.executable, str(CORE)]
                             + [str(a) for a in files.options() + ['--server-ip', SERVER, '--threshold', '44', '--top', str(TOP),
                                                                   '--now', NOW, str(log)]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    finally:
        os.rmdir(group)
    assert got.returncode == 0, got.stderr
    lines = got.stderr.decode().splitlines()
    assert len(lines) == 2 and lines[0] == (
        'bot-detector: warning: counts past count_budget (200000 distinct addresses) kept in memory, none spilled to disk '
        '(no state_dir, no TMPDIR to spill to): up to %d addresses are held, then the smallest counts are dropped' % keys), lines
    dropped = re.match(r'bot-detector: warning: memory for counts full \(%d distinct addresses\): the counts of ([0-9]+) '
                       r'addresses, each at most 1, dropped; one of them may now reach the threshold later than its '
                       r'requests did, or not\Z' % keys, lines[1])
    assert dropped and keys - keys // 2 <= int(dropped.group(1)) <= 500000, lines
    assert (mask_duration(got.stdout), files.read('blocklist')) == expected


def test_the_memory_limit_is_the_smallest_up_the_cgroup_hierarchy(tmp_path):
    """A cgroup v2 service (systemd's MemoryMax) and a v1 memory cgroup, as their files read:
    the smallest limit up the hierarchy, 'max' and v1's unlimited value none, the machine's
    memory when it is smaller; what this process reads of its own is at most the machine's."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import budget
    machine = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    root = tmp_path / 'cgroup'
    unit = root / 'system.slice' / 'bot-detector-follow@x.service'
    unit.mkdir(parents=True)
    (root / 'system.slice' / 'memory.max').write_text('max\n')
    (unit / 'memory.max').write_text('268435456\n')
    listing = tmp_path / 'v2'
    listing.write_text('0::/system.slice/bot-detector-follow@x.service\n')
    assert budget.memory_limit(str(listing), str(root)) == min(machine, 268435456)
    assert budget.memory_keys(200000, 268435456) == 419430
    assert budget.memory_keys(500000, 268435456) == 500000         # never under the budget
    v1 = root / 'memory' / 'job' / 'step'
    v1.mkdir(parents=True)
    (root / 'memory' / 'job' / 'memory.limit_in_bytes').write_text('134217728\n')
    (v1 / 'memory.limit_in_bytes').write_text('9223372036854771712\n')
    listing.write_text('5:cpu:/\n4:memory:/job/step\n0::/\n')
    assert budget.memory_limit(str(listing), str(root)) == min(machine, 134217728)
    assert 0 < budget.memory_limit() <= machine
