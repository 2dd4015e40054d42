"""--unblock: the lines equal to an address leave the blocklist, every other byte stays in
order, the owner and mode stay, the file is replaced atomically under the run's lock, and
each removal is one activity line that tools tell from an addition."""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

import loggen
from conftest import CORE, fill_up, in_timezone, require_root, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run as entry

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
# `date`'s default format under the C locale, then the removal's wording.
REMOVED_LINE = re.compile(br'^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [A-Z]+ \d{4} '
                          br'\| IP addess (\S+) removed from the block list \(unblock\)$')
# Lines an operator's blocklist may hold: CRLF, blanks, a comment, bytes that are not UTF-8,
# a network, an address inside another, and no final newline.
ODD_BLOCKLIST = (b'# firewall feed, do not reorder\n'
                 b'192.0.2.1\n'
                 b'203.0.113.7\n'
                 b'198.51.100.4\r\n'
                 b'  203.0.113.7  \n'
                 b'\xff\xfe not utf-8 \xc3(\n'
                 b'203.0.113.70\n'
                 b'\n'
                 b'10.9.0.0/16\n'
                 b'2001:db8:0::bad\n'
                 b'192.0.2.99')


def unblock(files, *addresses, extra=()):
    args = ['--blocklist', files.blocklist, '--activity-log', files.activity_log] + list(extra)
    for address in addresses:
        args += ['--unblock', address]
    return run_core(args)


def test_removes_only_equal_lines_keeping_every_other_byte_owner_and_mode(files):
    require_root('this test needs root (owners)')
    files.blocklist.write_bytes(ODD_BLOCKLIST)
    os.chown(str(files.blocklist), 65534, 65534)
    os.chmod(str(files.blocklist), 0o640)
    before = os.stat(str(files.blocklist))
    got = unblock(files, '203.0.113.7', '2001:DB8::BAD', '198.51.100.4')
    assert got.returncode == 0, got.stderr
    assert got.stdout == (b'Unblocking IP address: 203.0.113.7\nUnblocking IP address: 2001:DB8::BAD\n'
                          b'Unblocking IP address: 198.51.100.4\n')
    assert got.stderr == b''
    # 203.0.113.70 holds 203.0.113.7 but is another address; the CRLF line is the address.
    assert files.read('blocklist') == (b'# firewall feed, do not reorder\n'
                                       b'192.0.2.1\n'
                                       b'\xff\xfe not utf-8 \xc3(\n'
                                       b'203.0.113.70\n'
                                       b'\n'
                                       b'10.9.0.0/16\n'
                                       b'192.0.2.99')
    after = os.stat(str(files.blocklist))
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (65534, 65534, 0o640)
    assert after.st_ino != before.st_ino                  # replaced by a rename, not rewritten in place
    activity = files.read('activity_log').split(b'\n')
    assert activity[-1] == b''
    assert [REMOVED_LINE.match(line).group(1) for line in activity[:-1]] == [b'203.0.113.7', b'2001:DB8::BAD', b'198.51.100.4']
    assert not [name for name in os.listdir(str(files.base)) if name.startswith('.')]     # no temporary left


def test_an_address_or_network_written_another_way_is_the_same_entry(files):
    files.blocklist.write_bytes(b'10.0.0.1/32\n10.0.0.0/24\n2001:db8::1\n10.0.0.10\n')
    got = unblock(files, '10.0.0.1', '2001:0db8:0000::0001')
    assert got.returncode == 0, got.stderr
    assert files.read('blocklist') == b'10.0.0.0/24\n10.0.0.10\n'       # the /24 holds it but is not it


def test_an_ipv4_address_asked_as_a_32_network_removes_its_plain_line(files):
    files.blocklist.write_bytes(b'10.0.0.1\n10.0.0.10\n')
    got = unblock(files, '10.0.0.1/32')
    assert got.returncode == 0, got.stderr
    assert got.stdout == b'Unblocking IP address: 10.0.0.1/32\n'
    assert files.read('blocklist') == b'10.0.0.10\n'


def test_a_network_with_host_bits_set_takes_off_its_own_line_never_the_wider_network(files):
    """203.0.113.0/22 is a typo for a /24 as often as for 203.0.112.0/22: only a line of that
    address and prefix goes, in any spelling; the network it would be stays, and a warning says why."""
    files.blocklist.write_bytes(b'203.0.112.0/22\n2001:db8::/48\n198.51.100.0/22\n198.51.100.9/22\n2001:db8:1::7/48\n')
    got = unblock(files, '203.0.113.0/22', '2001:db8::5/48', '198.51.100.9/22', '2001:DB8:1:0::7/48', '::ffff:203.0.113.1/120')
    assert got.returncode == 0, got.stderr
    assert got.stdout == (b'IP address 203.0.113.0/22 is not in the block list.\n'
                          b'IP address 2001:db8::5/48 is not in the block list.\n'
                          b'Unblocking IP address: 198.51.100.9/22\n'
                          b'Unblocking IP address: 2001:DB8:1:0::7/48\n'      # the same text, spelled another way
                          b'IP address ::ffff:203.0.113.1/120 is not in the block list.\n')
    assert got.stderr == (b'bot-detector: warning: unblock: 203.0.113.0/22 has host bits set (its network is 203.0.112.0/22): '
                          b'only a line of that address and prefix is taken off\n'
                          b'bot-detector: warning: unblock: 2001:db8::5/48 has host bits set (its network is 2001:db8::/48): '
                          b'only a line of that address and prefix is taken off\n'
                          # the network as the enforcement and the answer lists write it: an IPv4 client's is IPv4
                          b'bot-detector: warning: unblock: ::ffff:203.0.113.1/120 has host bits set (its network is 203.0.113.0/24): '
                          b'only a line of that address and prefix is taken off\n')
    assert files.read('blocklist') == b'203.0.112.0/22\n2001:db8::/48\n198.51.100.0/22\n'


def test_not_listed_is_a_message_exit_0_and_changes_nothing(files):
    files.blocklist.write_bytes(b'203.0.113.70\n')
    before = os.stat(str(files.blocklist))
    got = unblock(files, '203.0.113.7')
    assert got.returncode == 0 and got.stderr == b''
    assert got.stdout == b'IP address 203.0.113.7 is not in the block list.\n'
    assert files.read('blocklist') == b'203.0.113.70\n'
    assert os.stat(str(files.blocklist)).st_ino == before.st_ino
    assert not files.activity_log.exists()
    missing = unblock(files, '203.0.113.7', extra=['--blocklist', files.base / 'absent.txt'])
    assert missing.returncode == 0 and not (files.base / 'absent.txt').exists()


def test_check_mode_reports_and_writes_nothing(files):
    files.blocklist.write_bytes(b'203.0.113.7\n192.0.2.1\n')
    got = unblock(files, '203.0.113.7', '198.51.100.1', extra=['--check', '--json'])
    assert got.returncode == 0
    import json
    doc = json.loads(got.stdout)
    assert doc['changed'] is True and doc['unblocked'] == [{'address': '203.0.113.7', 'lines': 1}]
    assert doc['not_listed'] == ['198.51.100.1']
    assert doc['messages'] == ['Would unblock IP address: 203.0.113.7', 'IP address 198.51.100.1 is not in the block list.']
    assert files.read('blocklist') == b'203.0.113.7\n192.0.2.1\n' and not files.activity_log.exists()


@pytest.mark.parametrize('args,fragment', [
    (['--unblock', '203.0.113.7', 'access.log'], b'--unblock takes no LOG'),
    (['--unblock', '  '], b'unblock: each address must be one non-empty line of text'),
])
def test_bad_unblock_exit_2(files, args, fragment):
    files.blocklist.write_bytes(b'203.0.113.7\n')
    got = run_core(['--blocklist', files.blocklist, '--activity-log', files.activity_log] + args)
    assert got.returncode == 2 and got.stdout == b''
    assert got.stderr.count(b'\n') == 1 and fragment in got.stderr, got.stderr
    assert files.read('blocklist') == b'203.0.113.7\n' and not files.activity_log.exists()


NOBODY = 65534


def test_unblock_and_expiry_replace_the_file_a_trusted_link_leads_to(tmp_path, files):
    """As root, the operator's links (root's, into root's directory; a link to a link) lead
    the appends to the firewall's file, and unblock and expiry replace that same file: the
    links stay links, the file keeps its mode and every other line."""
    require_root('this test needs root (owners)')
    firewall = tmp_path / 'firewall'
    firewall.mkdir()
    real = firewall / 'blocklist'
    real.write_bytes(b'# feed\n192.0.2.1\n')
    os.chmod(str(real), 0o640)
    (tmp_path / 'hop').symlink_to(real)
    files.blocklist.symlink_to(tmp_path / 'hop')
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    detect = files.options() + ['--server-ip', '10.0.0.5', '--now', NOW]
    assert run_core(detect + [log]).returncode == 0
    assert real.read_bytes() == b'# feed\n192.0.2.1\n203.0.113.7\n'
    got = unblock(files, '203.0.113.7')
    assert got.returncode == 0 and got.stdout == b'Unblocking IP address: 203.0.113.7\n', got.stderr
    assert real.read_bytes() == b'# feed\n192.0.2.1\n' and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert files.blocklist.is_symlink() and (tmp_path / 'hop').is_symlink()
    assert sorted(os.listdir(str(firewall))) == ['blocklist']
    # Expiry: 192.0.2.1's addition is 3 hours old; a ban of 2 hours is over.
    stamp = subprocess.run(['date', '-d', '@%d' % (NOW_EPOCH - 3 * 3600)], stdout=subprocess.PIPE, check=True,
                           env=dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')).stdout.strip()
    files.activity_log.write_bytes(b'%s | IP addess 192.0.2.1 added to the block list, RPH=1000\n' % stamp)
    quiet = tmp_path / 'quiet.log'
    quiet.write_bytes(b'')
    got = run_core(detect + ['--ban-time', '2h', quiet])
    assert got.stdout.split(b'\n')[0] == b'Unblocking IP address: 192.0.2.1 (ban of 2h expired)', got.stderr
    assert real.read_bytes() == b'# feed\n' and files.blocklist.is_symlink()


@pytest.mark.parametrize('planted', ['link', 'target dir', 'chain'])
def test_links_another_user_could_have_planted_are_refused_and_nothing_changes(tmp_path, files, planted):
    """As root, a link the appends refuse, unblock refuses too (the same rule, writer.py)."""
    require_root('this test needs root (owners)')
    theirs, ours = tmp_path / 'theirs', tmp_path / 'ours'
    for directory in (theirs, ours):
        directory.mkdir()
        (directory / 'blocklist').write_bytes(b'203.0.113.7\n')
    os.chown(str(theirs), NOBODY, NOBODY)
    if planted == 'target dir':
        files.blocklist.symlink_to(theirs / 'blocklist')           # root's link into nobody's directory
    elif planted == 'chain':
        (tmp_path / 'hop').symlink_to(ours / 'blocklist')
        os.lchown(str(tmp_path / 'hop'), NOBODY, NOBODY)           # nobody's link on the way
        files.blocklist.symlink_to(tmp_path / 'hop')
    else:
        files.blocklist.symlink_to(ours / 'blocklist')
        os.lchown(str(files.blocklist), NOBODY, NOBODY)            # nobody's link
    got = unblock(files, '203.0.113.7')
    assert got.returncode == 3
    assert got.stderr.startswith(b'bot-detector: error: refusing to rewrite %s: the symbolic link ' % bytes(files.blocklist))
    assert got.stderr.endswith(b'belongs to another user (running as root)\n') and got.stderr.count(b'\n') == 1
    for directory in (theirs, ours):
        assert (directory / 'blocklist').read_bytes() == b'203.0.113.7\n'
    assert files.blocklist.is_symlink() and not files.activity_log.exists()


def test_as_another_user_links_are_followed_as_its_appends_follow_them(readable_core):
    """Not root: the appends follow any link, and so does unblock: the link's target is replaced."""
    require_root('this test needs root (owners)')
    base = tempfile.mkdtemp(prefix='bd-unblock-')
    try:
        os.chown(base, NOBODY, NOBODY)
        real = os.path.join(base, 'real.txt')
        with open(real, 'wb') as handle:
            handle.write(b'203.0.113.7\n192.0.2.1\n')
        os.chown(real, NOBODY, NOBODY)
        link = os.path.join(base, 'ipblocklist.txt')
        os.symlink(real, link)
        got = subprocess.run(['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups', '/usr/bin/python3',
                              str(readable_core), '--blocklist', link, '--activity-log', os.path.join(base, 'activity.log'),
                              '--unblock', '203.0.113.7'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        assert got.returncode == 0, got.stderr
        assert os.path.islink(link)
        with open(real, 'rb') as handle:
            assert handle.read() == b'192.0.2.1\n'
    finally:
        shutil.rmtree(base)


def test_a_user_who_cannot_keep_the_owner_changes_nothing(readable_core):
    """As another user, in a directory that user may write, the root-owned blocklist could only
    be replaced by one the user owns: refused, the file and the directory as they were."""
    require_root('this test needs root (owners)')
    base = tempfile.mkdtemp(prefix='bd-unblock-')
    try:
        os.chmod(base, 0o777)
        blocklist = os.path.join(base, 'ipblocklist.txt')
        with open(blocklist, 'wb') as handle:
            handle.write(b'203.0.113.7\n192.0.2.1\n')
        os.chmod(blocklist, 0o644)
        args = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '/usr/bin/python3', str(readable_core),
                '--blocklist', blocklist, '--activity-log', os.path.join(base, 'activity.log'), '--unblock', '203.0.113.7']
        got = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        assert got.returncode == 3, got.stderr
        assert got.stderr == b'bot-detector: error: cannot replace %s: Operation not permitted\n' % blocklist.encode()
        with open(blocklist, 'rb') as handle:
            assert handle.read() == b'203.0.113.7\n192.0.2.1\n'
        assert os.stat(blocklist).st_uid == 0
        assert sorted(os.listdir(base)) == ['ipblocklist.txt']
        # Its own blocklist, that user unblocks, and the file stays that user's.
        os.chown(blocklist, 65534, 65534)
        got = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        assert got.returncode == 0, got.stderr
        with open(blocklist, 'rb') as handle:
            assert handle.read() == b'192.0.2.1\n'
        assert os.stat(blocklist).st_uid == 65534 and stat.S_IMODE(os.stat(blocklist).st_mode) == 0o644
    finally:
        shutil.rmtree(base)


def test_full_filesystem_leaves_the_old_file_and_no_temporary(mount, files):
    tmpfs = mount('small', 'size=64k')
    blocklist = tmpfs / 'ipblocklist.txt'
    content = b'192.0.2.1\n' * 2000 + b'203.0.113.7\n'      # 20 KB: its copy does not fit beside it
    blocklist.write_bytes(content)
    fill_up(tmpfs)
    got = run_core(['--blocklist', blocklist, '--activity-log', files.activity_log, '--unblock', '203.0.113.7'])
    assert got.returncode == 3
    assert got.stderr == b'bot-detector: error: cannot replace %s: No space left on device\n' % bytes(blocklist)
    assert blocklist.read_bytes() == content
    assert sorted(os.listdir(str(tmpfs))) == ['filler', 'ipblocklist.txt']
    assert not files.activity_log.exists()


def test_a_temporary_left_by_a_killed_run_is_cleared(files):
    files.blocklist.write_bytes(b'203.0.113.7\n')
    stale = files.base / ('.%s.k1ll3d%s' % (files.blocklist.name, '.bot-detector-tmp'))
    stale.write_bytes(b'half')
    other = files.base / '.ipblocklist.txt.swp'            # not ours: stays
    other.write_bytes(b'vim')
    assert unblock(files, '203.0.113.7').returncode == 0
    assert not stale.exists() and other.exists()


def test_unblock_and_concurrent_detection_runs_serialise(tmp_path, files):
    """Real processes: detection runs appending 15 scrapers, unblocks removing 15 entries of a
    long blocklist, all at once. Without the lock, an unblock that read the file before an
    append and renamed its copy after it would lose the appended line."""
    filler = [b'10.%d.%d.%d\n' % (i >> 16, (i >> 8) & 255, i & 255) for i in range(150000)]
    doomed = ['192.0.2.%d' % (100 + i) for i in range(15)]
    scrapers = dict(('203.0.113.%d' % (101 + i), 1001 + i) for i in range(15))
    files.blocklist.write_bytes(b''.join(filler[:70000] + [a.encode() + b'\n' for a in doomed] + filler[70000:]))
    filler = b''.join(filler)
    os.chmod(str(files.blocklist), 0o640)
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous=scrapers)))
    env = dict(os.environ, TZ='UTC')
    base = [sys.executable, str(CORE)] + [str(a) for a in files.options()]
    detects = [base + ['--server-ip', '10.255.255.255', '--now', NOW, str(log)] for dummy in range(5)]
    unblocks = [base + ['--unblock', address] for address in doomed]
    commands = []
    for i, command in enumerate(unblocks):          # a detection run after every third unblock
        commands += [command] + ([detects[i // 3]] if i % 3 == 0 else [])
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for c in commands]
    outputs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outputs]
    content = files.read('blocklist')
    assert content.startswith(filler)                        # every other line, in order
    assert sorted(content[len(filler):].split(b'\n')[:-1]) == sorted(a.encode() for a in scrapers)
    assert stat.S_IMODE(os.stat(str(files.blocklist)).st_mode) == 0o640
    activity = files.read('activity_log').decode().splitlines()
    assert sorted(re.search(r'IP addess (\S+) added', l).group(1) for l in activity if ' added ' in l) == sorted(scrapers)
    assert sorted(re.search(r'IP addess (\S+) removed', l).group(1) for l in activity if ' removed ' in l) == sorted(doomed)


def test_fleet_sync_leaves_out_what_was_removed_since(files):
    """An address this host blocked and then unblocked is no longer one of its own blocks
    for the fleet to sync to the other hosts."""
    files.activity_log.write_bytes(b'Sat Nov 21 01:00:00 UTC 2026 | IP addess 192.0.2.9 added to the block list, RPH=1300\n'
                                   b'Sat Nov 21 01:10:00 UTC 2026 | IP addess 192.0.2.8 added to the block list, RPH=1100\n')
    files.blocklist.write_bytes(b'192.0.2.9\n192.0.2.8\n')
    assert unblock(files, '192.0.2.9').returncode == 0
    assert entry.local_blocks(str(files.activity_log), files.read('blocklist')) == [{'address': '192.0.2.8', 'count': 1100}]


def test_fleet_sync_leaves_out_what_was_removed_under_another_spelling(files):
    files.activity_log.write_bytes(b'Sat Nov 21 01:00:00 UTC 2026 | IP addess 2001:db8::9 added to the block list, RPH=1300\n'
                                   b'Sat Nov 21 01:05:00 UTC 2026 | IP addess 192.0.2.9 added to the block list, RPH=1200\n'
                                   b'Sat Nov 21 01:10:00 UTC 2026 | IP addess 192.0.2.8 added to the block list, RPH=1100\n')
    files.blocklist.write_bytes(b'2001:db8::9\n192.0.2.9\n192.0.2.8\n')
    got = unblock(files, '2001:DB8:0::9', '192.0.2.9/32')
    assert got.returncode == 0 and files.read('blocklist') == b'192.0.2.8\n'
    assert entry.local_blocks(str(files.activity_log), files.read('blocklist')) == [{'address': '192.0.2.8', 'count': 1100}]


def test_fleet_sync_leaves_out_an_own_block_no_longer_in_the_blocklist(files):
    """Taken out by hand, or by an unblock killed before its activity line: the addition's
    record is still there, but the host no longer blocks the address, so the fleet must not
    sync it to the others."""
    files.activity_log.write_bytes(b'Sat Nov 21 01:05:00 UTC 2026 | IP addess 192.0.2.9 added to the block list, RPH=1200\n'
                                   b'Sat Nov 21 01:10:00 UTC 2026 | IP addess 2001:db8::8 added to the block list, RPH=1100\n')
    files.blocklist.write_bytes(b' 2001:DB8:0::8\r\n')          # 192.0.2.9 taken out; 2001:db8::8 spelt otherwise
    assert entry.local_blocks(str(files.activity_log), files.read('blocklist')) == [{'address': '2001:db8::8', 'count': 1100}]


@pytest.mark.parametrize('unwritable', ['its directory missing', 'a directory in its place'])
def test_an_activity_log_that_cannot_take_the_removal_line_changes_nothing(files, unwritable):
    """As an addition checks both files before it writes either, an unblock whose activity
    line cannot be written leaves the blocklist as it was."""
    files.blocklist.write_bytes(b'192.0.2.9\n203.0.113.7\n')
    if unwritable == 'its directory missing':
        files.activity_log = files.base / 'gone' / 'bot-detector.log'
    else:
        files.activity_log.mkdir()
    got = unblock(files, '203.0.113.7')
    assert got.returncode == 3
    assert got.stderr.startswith(b'bot-detector: error: cannot append to %s: ' % str(files.activity_log).encode())
    assert files.read('blocklist') == b'192.0.2.9\n203.0.113.7\n'
