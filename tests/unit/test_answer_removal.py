"""A removal from an answer list (``--unblock``, expiry) killed with SIGKILL at each of its steps
(issue 46): the next run finishes it, as the blocklist's killed removals are finished
(test_rewrite_races.py): every entry that left the list has exactly one removal line, none is
lost or listed twice, and the per-key files nginx's njs reads (answer_dir) match the list."""
import calendar
import ipaddress
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORE, Files
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import answer_files
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

STAMP = b'Sat Nov 21 01:05:00 UTC 2026'      # the additions: long before any run here
KIND = 'challenge'

# The command, killed at one step (argv[2]) of its removal: after the journal's fsync, after the
# activity lines' fsync, before and after the list's rename, after the journal's removal, at
# the first per-key file the answers' sync removes.
KILLED_AT = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from bot_detector.drivers.cli import main
step, target, answers = sys.argv[2], os.path.realpath(sys.argv[3]), os.path.realpath(sys.argv[4])
real_rename, real_unlink, real_fsync = os.rename, os.unlink, os.fsync
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def fsync(fd):
    real_fsync(fd)
    path = os.readlink('/proc/self/fd/%d' % fd)
    if step == 'journal' and path.endswith('.bot-detector-removing') or step == 'activity' and path == sys.argv[5]:
        die()
def rename(src, dst):
    if step == 'rename' and os.path.realpath(dst) == target:
        die()
    real_rename(src, dst)
    if step == 'after-rename' and os.path.realpath(dst) == target:
        die()
def unlink(path, *args, **kwargs):
    if step == 'sync' and os.path.realpath(path).startswith(answers + os.sep):
        die()
    real_unlink(path, *args, **kwargs)
    if step == 'cleared' and str(path).endswith('.bot-detector-removing'):
        die()
os.rename, os.unlink, os.fsync = rename, unlink, fsync
raise SystemExit(main(sys.argv[6:]))
"""
STEPS = ['journal', 'activity', 'rename', 'after-rename', 'cleared', 'sync']


def address(i):
    return b'203.0.113.%d' % (10 + i)


def setup(tmp_path):
    files = Files(tmp_path / 'f')
    files.listed = files.base / 'challenge.txt'
    files.answers = tmp_path / 'answers'
    entries = [address(i) for i in range(30)]
    files.listed.write_bytes(b''.join(e + b'\n' for e in entries))
    files.activity_log.write_bytes(b''.join(b'%s | IP addess %s added to the challenge list (by hand)\n' % (STAMP, e)
                                            for e in entries))
    files.blocklist.write_bytes(b'')
    return files, entries


def options(files, answer_time):
    return [str(a) for a in files.options() + ['--challenge-list', files.listed, '--answer-dir', files.answers,
                                               '--server-ip', '10.0.0.5', '--answer-time', answer_time]]


def run(files, args, answer_time, check=True):
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    got = subprocess.run([sys.executable, str(CORE)] + options(files, answer_time) + args, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert not check or got.returncode == 0, got.stderr
    return got


def removals(files):
    lines = (files.read('activity_log') or b'').split(b'\n')
    found = {}
    for line in lines:
        if b' removed from the challenge list (' in line:
            key = line.split(b'IP addess ', 1)[1].split(b' ', 1)[0]
            found[key] = found.get(key, 0) + 1
    return found


def key_file(entry):
    return '4-%08x' % int(ipaddress.IPv4Address(entry.decode()))


@pytest.mark.parametrize('rewriter', ['unblock', 'expiry'])
@pytest.mark.parametrize('step', STEPS)
def test_a_removal_killed_at_each_step_is_finished_by_the_next_run(tmp_path, rewriter, step):
    files, entries = setup(tmp_path)
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    answer_files.sync(Settings(blocklist=str(files.blocklist), activity_log=str(files.activity_log), answer_time=30 * 86400,
                               challenge_list=str(files.listed), answer_dir=str(files.answers)))
    assert sorted(os.listdir(str(files.answers / KIND))) == sorted(key_file(e) for e in entries)
    if rewriter == 'unblock':
        gone, answer_time = entries[:10], '30d'
        args = [a for e in gone for a in ('--unblock', e.decode())]
    else:
        gone, answer_time = entries, '1h'         # every entry due
        args = [str(log)]
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    killed = subprocess.run([sys.executable, '-c', KILLED_AT, str(CORE.parent), step, str(files.listed), str(files.answers),
                             str(files.activity_log)] + options(files, answer_time) + args,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert killed.returncode == -signal.SIGKILL, (step, killed.stderr)
    logged = removals(files)
    left = [line for line in files.listed.read_bytes().split(b'\n') if line]
    assert set(entries) - set(left) <= set(logged), 'an entry left the list without its line'
    # The next run: a cron run (the role's timer), with the same answer_time
    run(files, [str(log)], answer_time)
    logged = removals(files)
    left = [line for line in files.listed.read_bytes().split(b'\n') if line]
    assert all(count == 1 for count in logged.values()), logged
    if rewriter == 'expiry':
        assert left == [] and set(logged) == set(entries)
    else:       # the unblock is done when it was logged, else not at all: run again, it is
        assert set(logged) in (set(), set(gone)), (step, sorted(logged))
        assert left == [e for e in entries if e not in logged]
        if not logged:
            run(files, args, answer_time)
            left = [line for line in files.listed.read_bytes().split(b'\n') if line]
            assert left == entries[10:] and set(removals(files)) == set(gone)
    assert sorted(os.listdir(str(files.answers / KIND))) == sorted(key_file(e) for e in left)
    added = calendar.timegm(time.strptime(STAMP.decode(), '%a %b %d %H:%M:%S UTC %Y'))
    for entry in left:      # each file's time: its entry's expiry, the addition's date plus answer_time
        assert os.lstat(str(files.answers / KIND / key_file(entry))).st_mtime == added + 30 * 86400
    assert [n for n in os.listdir(str(files.base)) if 'bot-detector-' in n] == []
    assert files.read('blocklist') == b''
