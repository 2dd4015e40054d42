"""The allow-list as a device (issue 44, item 9): the null device (character device 1:3, /dev/null
or a node of its numbers elsewhere) is an empty list, as the reference's grep reads it, without a
word, in both rules, for --status and for the enforcement; a device that never ends (/dev/zero,
/dev/urandom, /dev/full, a FIFO) is refused as not a regular file, at once. And a list parsed once is
kept while the file stays the same (lists.content.parsed_list): a follower's recheck of an
unchanged 100,000-line allow-list costs a stat, not a parse."""
import os
import signal
import stat
import subprocess

import pytest

from conftest import REFERENCE, mask_duration, require_root, run_core, run_reference
from test_unreadable_allow_list import NOW, SAMPLE, write_log
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import content

NEVER_ENDING = ['/dev/zero', '/dev/urandom', '/dev/full']


def null_devices(tmp_path):
    """/dev/null, and a node of the null device's numbers made here (as root)."""
    found = ['/dev/null']
    if os.geteuid() == 0:
        node = tmp_path / 'null-here'
        os.mknod(str(node), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        found.append(str(node))
    return found


@pytest.mark.parametrize('rules', ['spec', 'precise'])
def test_the_null_device_as_allow_list_is_empty_without_a_word(tmp_path, files, rules):
    log = write_log(tmp_path)
    for null in null_devices(tmp_path):
        prom = tmp_path / 'bd.prom'
        files.blocklist.write_bytes(b'')
        got = run_core(files.options() + ['--exclusions', null, '--rules', rules, '--server-ip', '10.0.0.5', '--now', NOW,
                                          '--metrics-file', prom, log])
        assert (got.returncode, got.stderr) == (0, b''), (null, got.stderr)
        assert files.read('blocklist') == b'203.0.113.7\n'
        assert SAMPLE % 0 in prom.read_bytes()
        if rules == 'spec':
            ref_files = tmp_path / 'ref'
            ref_files.mkdir(exist_ok=True)
            (ref_files / 'bl').write_bytes(b'')
            ref = run_reference(log, ref_files / 'bl', null, ref_files / 'act', ['10.0.0.5'], NOW)
            assert mask_duration(got.stdout) == mask_duration(ref.stdout) and ref.returncode == 0
        status = run_core(files.options() + ['--exclusions', null, '--rules', rules, '--status'])
        assert (status.returncode, status.stderr) == (0, b''), status.stderr
        enforced = run_core(files.options() + ['--exclusions', null, '--server-ip', '10.0.0.5', '--enforcement', 'nginx',
                                               '--nginx-geo-file', tmp_path / 'geo.conf', '--nginx-test-command', 'true',
                                               '--nginx-reload-command', 'true', '--enforce-now'])
        assert (enforced.returncode, enforced.stderr) == (0, b''), enforced.stderr
        assert b'203.0.113.7 1;' in (tmp_path / 'geo.conf').read_bytes()


def fifo(tmp_path):
    path = tmp_path / 'allow.fifo'
    os.mkfifo(str(path))
    return str(path)


@pytest.mark.parametrize('device', NEVER_ENDING + [fifo])
def test_a_device_that_never_ends_is_refused_at_once(tmp_path, files, device):
    """Refused at once; the warning says what the reference does instead (spec rule 5.7: its
    search in the list never ends, so its run never finishes), not that it does the same."""
    device = device(tmp_path) if callable(device) else device
    log = write_log(tmp_path)
    got = run_core(files.options() + ['--exclusions', device, '--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0 and files.read('blocklist') == b'203.0.113.7\n'
    assert got.stderr.decode() == ('bot-detector: warning: cannot read %s: not a regular file; the exclusion list counts '
                                   'as empty: no address is allow-listed (where the reference\'s search in it never ends)\n'
                                   % device)
    files.blocklist.write_bytes(b'')
    got = run_core(files.options() + ['--exclusions', device, '--rules', 'precise', '--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3 and files.read('blocklist') == b''
    assert got.stderr.decode() == ('bot-detector: error: cannot read %s: not a regular file; the precise rules do not '
                                   'run without their exclusion list\n' % device)


def test_the_reference_never_finishes_with_a_device_that_never_ends(tmp_path):
    """What the warning above claims: the reference's run is still searching /dev/zero when
    stopped (its 2 s bound only ever errs towards passing under load; it reads no disk)."""
    log = write_log(tmp_path)
    (tmp_path / 'bl').write_bytes(b'')
    env = dict(os.environ, TZ='UTC', BD_BLOCKLIST=str(tmp_path / 'bl'), BD_EXCLUSIONS='/dev/zero',
               BD_ACTIVITY_LOG=str(tmp_path / 'act'), BD_SERVER_IP='10.0.0.5', BD_NOW=NOW)
    proc = subprocess.Popen(['setsid', str(REFERENCE), str(log)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert (tmp_path / 'bl').read_bytes() == b''        # 203.0.113.7 is never reached


def test_another_character_device_of_major_1_is_no_null_device(tmp_path):
    require_root('mknod needs root')
    node = tmp_path / 'zero-here'
    os.mknod(str(node), 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    with pytest.raises(Exception) as raised:
        content.read_list(str(node), strict=True)
    assert 'not a regular file' in str(raised.value)


class Parses:
    """A parse that counts its calls; its result is the lines."""

    def __init__(self):
        self.calls = 0

    def __call__(self, data):
        self.calls += 1
        return data.split(b'\n')


def test_a_list_is_parsed_once_while_it_stays_the_same(tmp_path):
    path = tmp_path / 'allow.txt'
    path.write_bytes(b'192.0.2.1\n')
    parse = Parses()
    for dummy in range(200):
        assert content.parsed_list(str(path), parse) == [b'192.0.2.1', b'']
    assert parse.calls == 1
    with open(str(path), 'ab') as handle:        # appended: parsed again
        handle.write(b'192.0.2.2\n')
    assert content.parsed_list(str(path), parse) == [b'192.0.2.1', b'192.0.2.2', b'']
    assert parse.calls == 2
    info = os.stat(str(path))
    with open(str(path), 'r+b') as handle:       # rewritten in place, same size, its mtime put back
        handle.write(b'198')
    os.utime(str(path), ns=(info.st_atime_ns, info.st_mtime_ns))
    assert content.parsed_list(str(path), parse) == [b'198.0.2.1', b'192.0.2.2', b'']
    replacement = tmp_path / 'new.txt'           # replaced by a rename, same size and mtime
    replacement.write_bytes(b'203.0.2.1\n192.0.2.2\n')
    info = os.stat(str(path))
    os.utime(str(replacement), ns=(info.st_atime_ns, info.st_mtime_ns))
    os.rename(str(replacement), str(path))
    assert content.parsed_list(str(path), parse) == [b'203.0.2.1', b'192.0.2.2', b'']
    assert parse.calls == 4
    path.unlink()                                # gone: empty, as read_list reads it
    assert content.parsed_list(str(path), parse) == [b'']
    assert content.parsed_list('/dev/null', parse) == [b'']


def test_the_precise_rules_parse_their_allow_list_once_while_it_stays_the_same(tmp_path):
    """What a follower's decisions under the precise rules share: one parse of the allow-list."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import precise, rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
    chosen = precise.PreciseRules(settings.Settings(rules='precise'))
    path = tmp_path / 'allow.txt'
    path.write_bytes(b'198.51.100.0/24\n2001:db8::/32\n')
    parse = precise.PreciseRules.parse_exclusions
    first = content.parsed_list(str(path), parse)
    assert content.parsed_list(str(path), parse) is first
    lists = chosen.lists(b'', first)
    assert lists.verdict(b'198.51.100.7') == rules.ALLOW_LISTED and lists.verdict(b'203.0.113.7') == rules.BLOCK
    with open(str(path), 'ab') as handle:
        handle.write(b'203.0.113.0/24\n')
    again = content.parsed_list(str(path), parse)
    assert again is not first and chosen.lists(b'', again).verdict(b'203.0.113.7') == rules.ALLOW_LISTED
