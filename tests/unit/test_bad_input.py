"""Whatever the detector is fed, operators' data stays intact: bad log lines, bad logs,
bad lists, a read-only or full filesystem at append time, a symlink planted as a list."""
import os
import subprocess

import pytest

import loggen
from conftest import fill_up, require_root, in_timezone, mask_duration, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock, errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import writer
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
HITTERS = {'203.0.113.7': 1200, '2001:db8::7': 1000, '198.51.100.3': 999}


def clean_log():
    return in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous=HITTERS, current={'203.0.113.8': 1000}))


def hook_pread(monkeypatch, on_call, action):
    """Make the core's pread run ``action()`` before its ``on_call``-th read; returns the call count."""
    real_pread = os.pread
    state = {'calls': 0}

    def pread(fd, size, offset):
        state['calls'] += 1
        if state['calls'] == on_call:
            action()
        return real_pread(fd, size, offset)
    monkeypatch.setattr(chunks, 'READ_CHUNK', 64 * 1024)
    monkeypatch.setattr(os, 'pread', pread)
    return state


def detect(files, log, *extra):
    return run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW] + list(extra) + [log])


BAD_LINES = [
    b'no timestamp, no request at all\n',
    b'203.0.113.7 - - [21/Nov/2026:03:10:00 +0000] "-" 400 0 "-" "-"\n',            # no request
    bytes(range(1, 256)).replace(b'\n', b'') + b'\n',                               # garbage
    b'\x00\x00 [21/Nov/2026:03:10:00 +0000] "GET /jobs/\x00" 200\n',                # NUL bytes: one request of address NUL NUL
    b'\xff\xfe\xfd 21/Nov/2026:03 GET /job/ \xc3\x28\n',                             # invalid UTF-8
    b'198.51.100.3 ' + b'y' * (1024 * 1024) + b'\n',                                # 1 MB line, no stamp
    b'\n\n\n',
]


def test_bad_lines_do_not_change_the_counts_of_valid_lines(tmp_path, files):
    good = clean_log()
    log = tmp_path / 'clean.log'
    log.write_bytes(good)
    base = detect(files, log)
    # The same valid lines, CRLF-terminated half of them, with bad lines between.
    valid = good.split(b'\n')
    noisy = []
    for i, line in enumerate(valid[:-1]):
        noisy.append(line + (b'\r\n' if i % 2 else b'\n'))
        if i % 500 == 0:
            noisy.append(BAD_LINES[(i // 500) % len(BAD_LINES)])
    noisy_log = tmp_path / 'noisy.log'
    noisy_log.write_bytes(b''.join(noisy))
    for extra in ([], ['--full-scan']):
        other = type(files)(tmp_path / ('noisy' + ''.join(extra)))
        got = detect(other, noisy_log, *extra)
        assert got.returncode == 0, got.stderr
        assert mask_duration(got.stdout) == mask_duration(base.stdout)
        assert other.read('blocklist') == files.read('blocklist')
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in base.stdout


def test_empty_log(tmp_path, files):
    log = tmp_path / 'empty.log'
    log.write_bytes(b'')
    got = detect(files, log, '--rotated')
    assert got.returncode == 0
    assert mask_duration(got.stdout) == b'Checking the previous hour...\nChecking the current hour...\nExecution time: N seconds\n'


def test_log_truncated_while_read(tmp_path, monkeypatch):
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log() * 3)
    state = hook_pread(monkeypatch, 3, lambda: os.truncate(str(log), 1000))    # logrotate's copytruncate, mid-scan
    windows = clock.hour_windows(NOW_EPOCH)
    counted = tally.count_windows([str(log)], windows, rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google'))
    counts, scans = counted.counters, counted.scans
    assert state['calls'] >= 3
    assert 0 < sum(counts[0].values()) < 3 * sum(HITTERS.values())     # what was there, no crash


def test_log_rotated_while_read_keeps_reading_the_old_file(tmp_path, monkeypatch):
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log())

    def rotate():
        os.rename(str(log), str(log) + '.1')
        log.write_bytes(b'')
    hook_pread(monkeypatch, 2, rotate)
    counted = tally.count_windows([str(log)], clock.hour_windows(NOW_EPOCH), rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google'))
    counts, dummy = counted.counters, counted.scans
    assert counts[0][b'203.0.113.7'] == 1200 and counts[1][b'203.0.113.8'] == 1000


@pytest.mark.parametrize('kind', ['missing', 'directory', 'unreadable'])
def test_bad_lists_count_as_empty(tmp_path, files, kind):
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log())
    if kind == 'directory':
        files.exclusions.mkdir()
    elif kind == 'unreadable':
        files.exclusions.write_bytes(b'203.0.113.7\n')
        files.exclusions.chmod(0)
        if os.geteuid() == 0:
            files.exclusions.chmod(0o644)
            files.exclusions.unlink()
            os.mkfifo(str(files.exclusions))     # as root every file reads: a FIFO with no writer stands in
    got = detect(files, log)
    assert got.returncode == 0, got.stderr
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in got.stdout


def test_blocklist_symlink_planted_by_another_user_is_refused_as_root(tmp_path, files):
    require_root('this test needs root (mounts, symlink refusal)')
    target = tmp_path / 'elsewhere'
    target.write_bytes(b'192.0.2.1\n')
    files.blocklist.symlink_to(target)
    os.lchown(str(files.blocklist), 65534, 65534)      # nobody's link (root's are followed: test_appends)
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log())
    got = detect(files, log)
    assert got.returncode == 3
    assert got.stderr == (b'bot-detector: error: refusing to append to %s: the symbolic link %s, or the directory it '
                          b'points into, belongs to another user (running as root)\n' % (bytes(files.blocklist), bytes(files.blocklist)))
    assert target.read_bytes() == b'192.0.2.1\n'
    assert not files.activity_log.exists()


def test_read_only_filesystem_at_append(tmp_path, files, mount):
    point = mount('ro', 'size=1m')
    (point / 'ipblocklist.txt').write_bytes(b'192.0.2.1\n')
    subprocess.run(['mount', '-o', 'remount,ro', str(point)], check=True)
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log())
    got = run_core(['--blocklist', point / 'ipblocklist.txt', '--exclusions', files.exclusions, '--activity-log',
                    files.activity_log, '--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert got.stderr == b'bot-detector: error: cannot append to %s: Read-only file system\n' % bytes(point / 'ipblocklist.txt')
    assert (point / 'ipblocklist.txt').read_bytes() == b'192.0.2.1\n'
    assert not files.activity_log.exists()


def test_full_filesystem_at_append(tmp_path, files, mount):
    point = mount('full', 'size=64k')
    blocklist = point / 'ipblocklist.txt'
    content = b'192.0.2.1\n' * 409 + b'1.2.3\n'         # exactly one 4 KiB page: an append needs another
    blocklist.write_bytes(content)
    fill_up(point)
    log = tmp_path / 'access.log'
    log.write_bytes(clean_log())
    got = run_core(['--blocklist', blocklist, '--exclusions', files.exclusions, '--activity-log', files.activity_log,
                    '--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert b'cannot append to %s: No space left on device' % bytes(blocklist) in got.stderr
    assert blocklist.read_bytes() == content                 # nothing half-written
    assert not files.activity_log.exists()                   # and no claim of an addition


def test_failed_append_undoes_only_its_own_bytes(tmp_path, monkeypatch):
    """fsync fails after the write: our line is taken back, but never what another writer
    appended in the meantime."""
    path = tmp_path / 'ipblocklist.txt'
    for interloper in (False, True):
        path.write_bytes(b'192.0.2.1\n')

        def failing_fsync(fd, interloper=interloper):
            if interloper:
                with open(str(path), 'ab') as other:     # an operator's echo >> at that moment
                    other.write(b'198.51.100.9\n')
            raise OSError(5, 'Input/output error')
        monkeypatch.setattr(os, 'fsync', failing_fsync)
        with pytest.raises(errors.BotDetectorError):
            writer.BlocklistWriter.append_line(str(path), b'203.0.113.7\n', fsync=True)
        expected = b'192.0.2.1\n203.0.113.7\n198.51.100.9\n' if interloper else b'192.0.2.1\n'
        assert path.read_bytes() == expected
