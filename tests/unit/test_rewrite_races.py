"""The blocklist rewriters (unblock, ban expiry) under a kill at any moment and against
writers that take no lock (issue 20, items 4 and 5).

- A removal is recorded before it is made: killed at any point, every entry that left the
  blocklist has its removal line in the activity log, and the blocklist is the old file or
  the new one, never a part (the activity lines are one write and one fsync, before the
  replace).
- A line appended by something that takes no lock (`echo ADDR >> blocklist`, the old cron
  script, the firewall's own tooling) while an unblock or an expiry runs is never lost."""
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORE, Files, fill_up

REMOVAL = re.compile(br'\| IP addess (\S+) removed from the block list \(')
STAMP = b'Sat Nov 21 01:05:00 UTC 2026'      # the additions: hours before any run here


def address(i):
    return b'10.%d.%d.%d' % (i >> 16 & 255, i >> 8 & 255, i & 255)


def activity_date(epoch):
    """`date`'s default format, C locale, UTC."""
    return time.strftime('%a %b %e %H:%M:%S UTC %Y', time.gmtime(epoch)).encode()


def write_expiring(files, n, due=None):
    """A blocklist of ``n`` entries, each with an addition line days old; with ``due``,
    only the first ``due`` expire, one a second from now on (a ban of 1h)."""
    entries = [address(i) for i in range(n)]
    now = int(time.time())
    dates = [STAMP] * n if due is None else [activity_date(now - 3600 + 1 + min(i, due * 100)) for i in range(n)]
    files.blocklist.write_bytes(b''.join(e + b'\n' for e in entries))
    files.activity_log.write_bytes(b''.join(b'%s | IP addess %s added to the block list, RPH=1200\n' % (d, e)
                                            for d, e in zip(dates, entries)))
    return entries


def expiry_command(files, tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    return [sys.executable, str(CORE)] + [str(a) for a in files.options()] + [
        '--server-ip', '10.0.0.5', '--ban-time', '1h', str(log)]


def removed_in_log(files):
    return set(REMOVAL.findall(files.read('activity_log') or b''))


def check_agreement(files, entries):
    content = files.read('blocklist')
    left = set(content.split(b'\n')) - {b''}
    assert content in (b''.join(e + b'\n' for e in entries if e in left),), 'not the old file nor a new one'
    gone = set(entries) - left
    assert gone <= removed_in_log(files), 'removed without an activity line: %d' % len(gone - removed_in_log(files))
    return gone


def test_expiry_killed_at_any_point_leaves_the_lists_agreeing(tmp_path):
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    n = 4000
    files = Files(tmp_path / 'whole')
    entries = write_expiring(files, n)
    started = time.monotonic()
    subprocess.run(expiry_command(files, tmp_path), env=env, stdout=subprocess.PIPE, check=True)
    whole = time.monotonic() - started
    assert files.read('blocklist') == b'' and removed_in_log(files) == set(entries)
    rng = random.Random(20)
    outcomes = set()
    for attempt in range(24):
        files = Files(tmp_path / ('kill%d' % attempt))
        entries = write_expiring(files, n)
        proc = subprocess.Popen(expiry_command(files, tmp_path), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, whole * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        gone = check_agreement(files, entries)
        outcomes.add('none' if not gone else 'all' if len(gone) == n else 'some')
        # The next run finishes the work: every entry gone, each with its line.
        subprocess.run(expiry_command(files, tmp_path), env=env, stdout=subprocess.PIPE, check=True)
        assert files.read('blocklist') == b'' and removed_in_log(files) == set(entries)
    assert 'some' not in outcomes        # the file is replaced whole


KILLED_AT = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from bot_detector.drivers.cli import main
step, target = sys.argv[2], os.path.realpath(sys.argv[3])
real_rename, real_unlink = os.rename, os.unlink
def rename(src, dst):
    if step == 'rename' and os.path.realpath(dst) == target:
        os.kill(os.getpid(), signal.SIGKILL)
    real_rename(src, dst)
    if step == 'after-rename' and os.path.realpath(dst) == target:
        os.kill(os.getpid(), signal.SIGKILL)
os.rename = rename
raise SystemExit(main(sys.argv[4:]))
"""


def killed_removal(tmp_path, rewriter, step, env):
    """A blocklist of 30 entries with their additions, and an unblock of 10 of them or an
    expiry of all, killed at ``step`` of the rename (KILLED_AT): (files, entries, the
    entries the removal was for)."""
    files = Files(tmp_path / 'f')
    entries = write_expiring(files, 30)
    if rewriter == 'unblock':
        argv = [str(a) for a in ['--blocklist', files.blocklist, '--activity-log', files.activity_log]]
        for e in entries[:10]:
            argv += ['--unblock', e.decode()]
        gone = set(entries[:10])
    else:
        argv = expiry_command(files, tmp_path)[2:]
        gone = set(entries)
    got = subprocess.run([sys.executable, '-c', KILLED_AT, str(CORE.parent), step, str(files.blocklist)] + argv,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert got.returncode == -signal.SIGKILL, got.stderr
    return files, entries, gone


@pytest.mark.parametrize('rewriter', ['unblock', 'expiry'])
@pytest.mark.parametrize('step', ['rename', 'after-rename'])
def test_killed_between_the_activity_lines_and_the_rename_the_next_removal_finishes(tmp_path, rewriter, step):
    """The window a random kill rarely hits, hit each time: killed just before (and just
    after) the rename, the activity log has the lines; the next unblock or expiry finishes
    the removal without a second line, and an entry put back by hand after a finished
    removal still stays."""
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    files, entries, gone = killed_removal(tmp_path, rewriter, step, env)
    assert removed_in_log(files) == gone
    before = files.read('blocklist')
    assert before == (b''.join(e + b'\n' for e in entries) if step == 'rename'
                      else b''.join(e + b'\n' for e in entries if e not in gone))
    lines_before = files.read('activity_log').count(b'\n')
    # The next removal (another address, or an expiry with nothing due) finishes it.
    files.blocklist.write_bytes(before + b'192.0.2.77\n')
    subprocess.run([sys.executable, str(CORE), '--blocklist', str(files.blocklist), '--activity-log',
                    str(files.activity_log), '--unblock', '192.0.2.77'], env=env, stdout=subprocess.PIPE, check=True)
    assert files.read('blocklist') == b''.join(e + b'\n' for e in entries if e not in gone)
    assert files.read('activity_log').count(b'\n') == lines_before + 1      # the new unblock's line only
    # Put back by hand after that: it stays (no journal left).
    files.blocklist.write_bytes(files.read('blocklist') + sorted(gone)[0] + b'\n')
    subprocess.run(expiry_command(files, tmp_path), env=env, stdout=subprocess.PIPE, check=True)
    assert sorted(gone)[0] + b'\n' in files.read('blocklist')
    assert [n for n in os.listdir(str(files.base)) if 'bot-detector-' in n] == []


def test_an_unrecordable_expiry_removes_nothing(tmp_path, mount):
    """The activity log on a full filesystem: the removal lines cannot be written, so the
    blocklist (elsewhere, with room) stays as it was, and no temporary is left."""
    small = mount('small', 'size=256k')
    files = Files(tmp_path / 'f')
    entries = write_expiring(files, 2000)
    moved = small / 'bot-detector.log'
    moved.write_bytes(files.read('activity_log'))
    files.activity_log = moved
    fill_up(small)
    got = subprocess.run(expiry_command(files, tmp_path), env=dict(os.environ, TZ='UTC', LC_ALL='C'),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert got.returncode == 3 and b'cannot append to %s' % bytes(moved) in got.stderr, got.stderr
    assert files.read('blocklist') == b''.join(e + b'\n' for e in entries)
    assert not [n for n in os.listdir(str(files.base)) if n.endswith('.bot-detector-tmp')]


APPENDER = '''
i=0
while [ $i -lt {count} ]; do
    echo 172.16.$((i / 256)).$((i % 256)) >> "$1"
    i=$((i + 1))
    [ $((i % 10)) -eq 0 ] && sleep 0.03
done
'''


@pytest.mark.parametrize('rewriter', ['unblock', 'expiry'])
def test_lines_appended_without_the_lock_during_a_rewrite_are_kept(tmp_path, rewriter):
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    files = Files(tmp_path / 'f')
    entries = write_expiring(files, 20000, due=None if rewriter == 'unblock' else 1)
    count = 3000
    appender = subprocess.Popen(['sh', '-c', APPENDER.format(count=count), 'sh', str(files.blocklist)])
    rewrites, deadline = 0, time.monotonic() + 60
    try:
        while appender.poll() is None and time.monotonic() < deadline:
            if rewriter == 'unblock':
                argv = [sys.executable, str(CORE), '--blocklist', str(files.blocklist), '--activity-log',
                        str(files.activity_log), '--unblock', address(rewrites).decode()]
            else:
                # An entry's ban ends each second: each run removes those due.
                argv = expiry_command(files, tmp_path)
            subprocess.run(argv, env=env, stdout=subprocess.PIPE, check=True)
            rewrites += 1
    finally:
        appender.wait(timeout=120)
    assert rewrites >= 3
    lines = files.read('blocklist').split(b'\n')
    appended = [b'172.16.%d.%d' % (i // 256, i % 256) for i in range(count)]
    missing = set(appended) - set(lines)
    assert not missing, '%d of %d appended lines lost' % (len(missing), count)
    if rewriter == 'unblock':
        assert not set(address(i) for i in range(rewrites)) & set(lines)
    else:
        assert len(set(entries) - set(lines)) >= 2


@pytest.mark.parametrize('rewriter', ['unblock', 'expiry'])
@pytest.mark.parametrize('next_run', ['expiry', 'detect'])
def test_killed_before_the_rename_any_next_run_finishes(tmp_path, rewriter, next_run):
    """Killed after its activity lines and before the rename, a removal is finished by the
    next run that takes the lock, whatever it is: an expiry with nothing else due (the
    interrupted entries' last event is their removal, so no ban of theirs is due), or a
    detection run without a ban time. Before, both left the entries listed for good, their
    removal logged."""
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    files, entries, gone = killed_removal(tmp_path, rewriter, 'rename', env)
    assert files.read('blocklist') == b''.join(e + b'\n' for e in entries)
    lines_before = files.read('activity_log')
    command = expiry_command(files, tmp_path)
    if next_run == 'detect':
        command.remove('--ban-time')
        command.remove('1h')
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    left = [e for e in entries if e not in gone]
    if next_run == 'expiry':
        left = []        # the others are due too (days old, a ban of 1h), and expire now
    assert files.read('blocklist') == b''.join(e + b'\n' for e in left)
    assert files.read('activity_log')[:len(lines_before)] == lines_before
    assert removed_in_log(files) == set(entries) - set(left)
    added = files.read('activity_log')[len(lines_before):]
    assert [a for a in REMOVAL.findall(added) if a in gone] == [], 'a second line for an interrupted removal'
    assert done.stderr == b''
    assert [n for n in os.listdir(str(files.base)) if 'bot-detector-' in n] == []
