"""Appending as root through links, and the blocklist line and its activity line kept or
taken back together (issue 10, finding 9 and the ENOSPC wording)."""
import os
import subprocess
import sys

import pytest

import loggen
from conftest import CORE, require_root, Files, fill_up, in_timezone, mask_dates, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
NOBODY = 65534


def detect(files, log, *extra):
    return run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW] + list(extra) + [log])


@pytest.fixture
def log(tmp_path):
    path = tmp_path / 'access.log'
    path.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    return path


def test_root_owned_links_to_root_owned_lists_are_followed(tmp_path, log):
    """The operator keeps the lists beside the firewall's files and links them."""
    require_root('this test needs root (link owners, mounts)')
    firewall = tmp_path / 'firewall'
    firewall.mkdir()
    (firewall / 'blocklist').write_bytes(b'192.0.2.1\n')
    (firewall / 'activity.log').write_bytes(b'')
    files = Files(tmp_path / 'files')
    files.blocklist.symlink_to(firewall / 'blocklist')
    (tmp_path / 'chain').symlink_to(firewall / 'activity.log')
    files.activity_log.symlink_to(tmp_path / 'chain')             # a link to a link
    got = detect(files, log)
    assert got.returncode == 0, got.stderr
    assert (firewall / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.7\n'
    assert (firewall / 'activity.log').read_bytes().endswith(b' | IP addess 203.0.113.7 added to the block list, RPH=1200\n')
    assert files.blocklist.is_symlink() and files.activity_log.is_symlink()


@pytest.mark.parametrize('planted', ['blocklist link', 'blocklist target dir', 'activity link', 'activity chain'])
def test_links_another_user_could_have_planted_are_refused_and_nothing_is_appended(tmp_path, log, planted):
    require_root('this test needs root (link owners, mounts)')
    theirs = tmp_path / 'theirs'
    theirs.mkdir()
    ours = tmp_path / 'ours'
    ours.mkdir()
    for directory in (theirs, ours):
        (directory / 'blocklist').write_bytes(b'192.0.2.1\n')
        (directory / 'activity.log').write_bytes(b'')
    os.chown(str(theirs), NOBODY, NOBODY)
    files = Files(tmp_path / 'files')
    name = 'blocklist' if planted.startswith('blocklist') else 'activity_log'
    other = 'activity_log' if name == 'blocklist' else 'blocklist'
    target = {'blocklist': 'blocklist', 'activity_log': 'activity.log'}
    link = getattr(files, name)
    if planted.endswith('target dir'):
        link.symlink_to(theirs / target[name])                    # root's link into nobody's directory
    elif planted.endswith('chain'):
        (tmp_path / 'hop').symlink_to(ours / target[name])
        os.lchown(str(tmp_path / 'hop'), NOBODY, NOBODY)          # nobody's link on the way
        link.symlink_to(tmp_path / 'hop')
    else:
        link.symlink_to(ours / target[name])
        os.lchown(str(link), NOBODY, NOBODY)                      # nobody's link
    getattr(files, other).symlink_to(ours / target[other])        # the other list: a good link
    got = detect(files, log)
    assert got.returncode == 3
    assert got.stderr.startswith(b'bot-detector: error: refusing to append to %s: ' % bytes(link))
    assert got.stderr.endswith(b'(running as root)\n') and got.stderr.count(b'\n') == 1
    for directory in (theirs, ours):                             # neither line, anywhere
        assert (directory / 'blocklist').read_bytes() == b'192.0.2.1\n'
        assert (directory / 'activity.log').read_bytes() == b''


def test_activity_log_that_cannot_be_opened_writes_no_blocklist_line(tmp_path, log):
    files = Files(tmp_path / 'files')
    files.blocklist.write_bytes(b'192.0.2.1\n')
    files.activity_log.mkdir()                                    # appending to a directory fails
    got = detect(files, log)
    assert got.returncode == 3
    assert got.stderr == b'bot-detector: error: cannot append to %s: Is a directory\n' % bytes(files.activity_log)
    assert files.read('blocklist') == b'192.0.2.1\n'


def test_full_activity_log_takes_back_the_blocklist_line(tmp_path, log, mount):
    """The blocklist append succeeds, the activity append finds the disk full: the run takes
    its blocklist line back, so neither file claims the addition."""
    point = mount('full', 'size=64k')
    activity = point / 'bot-detector.log'
    activity.write_bytes(b'x' * 4095 + b'\n')                     # one page: the next line needs another
    fill_up(point)
    files = Files(tmp_path / 'files')
    files.blocklist.write_bytes(b'192.0.2.1\n')
    got = run_core(['--blocklist', files.blocklist, '--exclusions', files.exclusions, '--activity-log', activity,
                    '--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert got.stderr == (b'bot-detector: error: cannot append to %s: No space left on device; the blocklist line '
                          b'was taken back\n' % bytes(activity))
    assert files.read('blocklist') == b'192.0.2.1\n'
    assert activity.read_bytes() == b'x' * 4095 + b'\n'


TRAP = '/jobs/featured-x/'
CAMPAIGN_NOW = '2026-11-21 10:50:00'


def trap_hits(count):
    """``count`` addresses, each one request for the trap path (a campaign's exits)."""
    return ''.join('192.0.2.%d - - [21/Nov/2026:10:%02d:00 +0000] "GET %s HTTP/1.1" 200 512 "-" "Mozilla/5.0"\n'
                   % (10 + i, i % 60, TRAP) for i in range(count))


def test_a_campaigns_trap_hits_are_appended_in_one_write_a_file(tmp_path):
    """Thousands of trap hits cost two writes and two syncs, not two each: the run's own
    write(2) calls, read from /proc/self/io, stay under the number of additions (each
    addition alone took two)."""
    files = Files(tmp_path / 'files')
    log = tmp_path / 'access.log'
    log.write_text(trap_hits(40))
    script = tmp_path / 'count_writes.py'
    script.write_text(
        'import runpy, sys\n'
        'core, sys.argv = sys.argv[1], sys.argv[1:]\n'
        'try:\n'
        '    runpy.run_path(core, run_name="__main__")\n'
        'finally:\n'
        '    writes = [l for l in open("/proc/self/io") if l.startswith("syscw:")][0].split()[1]\n'
        '    sys.stderr.write("writes %s\\n" % writes)\n')
    got = subprocess.run([sys.executable, str(script), str(CORE)] + [str(a) for a in files.options() + [
        '--server-ip', '198.51.100.1', '--now', CAMPAIGN_NOW, '--campaigns', '--trap-path', TRAP, '--json', log]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
        env=dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', PYTHONDONTWRITEBYTECODE='1'))      # no .pyc write counted
    assert got.returncode == 0, got.stderr
    addresses = ['192.0.2.%d' % (10 + i) for i in range(40)]
    assert files.read('blocklist').decode().split() == addresses
    activity = mask_dates(files.read('activity_log'))
    assert [line.split(b' ')[2] for line in activity] == [a.encode() for a in addresses]
    assert all(line.endswith(b'(trap, 1 hits, no browser behaviour: 0 assets, 0 referers)') for line in activity), activity
    writes = int(got.stderr.split(b'writes ')[-1])
    assert 2 <= writes < 20, writes


def test_a_campaigns_trap_hits_are_taken_back_together_when_the_activity_log_is_full(tmp_path, mount):
    point = mount('full', 'size=64k')
    activity = point / 'bot-detector.log'
    activity.write_bytes(b'x' * 4095 + b'\n')
    fill_up(point)
    files = Files(tmp_path / 'files')
    files.blocklist.write_bytes(b'192.0.2.1\n')
    log = tmp_path / 'access.log'
    log.write_text(trap_hits(5))
    got = run_core(['--blocklist', files.blocklist, '--exclusions', files.exclusions, '--activity-log', activity,
                    '--server-ip', '198.51.100.1', '--now', CAMPAIGN_NOW, '--campaigns', '--trap-path', TRAP, log])
    assert got.returncode == 3
    assert got.stderr == (b'bot-detector: error: cannot append to %s: No space left on device; the 5 blocklist lines '
                          b'were taken back\n' % bytes(activity))
    assert files.read('blocklist') == b'192.0.2.1\n'
    assert activity.read_bytes() == b'x' * 4095 + b'\n'
