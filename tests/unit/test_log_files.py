"""The files read (issue 10, findings 5 to 7): what is gzip and what is plain, rotated
files that are damaged or are the log itself, a log given twice, and lines of any length
in linear time and bounded memory."""
import gzip
import json
import os
import tracemalloc

from conftest import Files, in_timezone, mask_duration, run_core, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
import loggen

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def planted(**hitters):
    return in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, **hitters))


def core_and_reference(tmp_path, log, *extra):
    """The command and the reference on ``log``: (command CompletedProcess, its files,
    reference CompletedProcess, its files)."""
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    got = run_core(ours.options() + ['--server-ip', '10.0.0.5', '--now', NOW] + list(extra) + [log])
    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log, ['10.0.0.5'], NOW)
    return got, ours, ref, theirs


def run_json(files, logs, *extra):
    proc = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--json'] + list(extra) + logs)
    return proc, (json.loads(proc.stdout) if proc.returncode == 0 else None)


# ---- finding 5: gzip is what decompresses, not what starts with 1f 8b

def test_plain_log_starting_with_the_gzip_magic_is_read_as_plain(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(b'\x1f\x8b' + planted(previous={'203.0.113.7': 1200}, current={'203.0.113.8': 1000}))
    for extra in ([], ['--rotated'], ['--full-scan']):
        got, ours, ref, theirs = core_and_reference(tmp_path / ('run' + ''.join(extra)), log, *extra)
        assert got.returncode == 0, got.stderr
        assert got.stderr == b''
        assert mask_duration(got.stdout) == mask_duration(ref.stdout)
        assert ours.read('blocklist') == theirs.read('blocklist') == b'203.0.113.7\n203.0.113.8\n'


def test_gzip_log_with_several_members_and_padding_is_read_whole(tmp_path):
    first = planted(previous={'203.0.113.7': 700})
    second = planted(previous={'203.0.113.7': 300})
    log = tmp_path / 'access.log.2.gz'
    log.write_bytes(gzip.compress(first) + gzip.compress(second) + b'\x00' * 512)
    proc, doc = run_json(Files(tmp_path / 'a'), [str(log)])
    assert proc.returncode == 0, proc.stderr
    assert doc['scans'][0]['mode'] == 'full-gzip'
    assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1000, 'window': 'previous'}]


# ---- finding 6: rotated files damaged, or the log itself; a log given twice

def rotated_case(tmp_path, rotated_bytes, name='access.log.1.gz'):
    """logrotate ran at 04:00: the current hour in access.log, the previous in the rotated file."""
    log = tmp_path / 'access.log'
    log.write_bytes(planted(current={'203.0.113.8': 1000}))
    (tmp_path / name).write_bytes(rotated_bytes)
    return log


def test_truncated_rotated_gzip_is_a_warning_and_the_run_goes_on(tmp_path):
    whole = gzip.compress(planted(previous={'203.0.113.7': 3000}))
    log = rotated_case(tmp_path, whole[:len(whole) // 2])       # logrotate still compressing
    files = Files(tmp_path / 'files')
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--rotated', log])
    assert got.returncode == 0, got.stderr
    rotated = bytes(tmp_path / 'access.log.1.gz')
    assert got.stderr.count(b'\n') == 1
    assert got.stderr.startswith(b'bot-detector: warning: cannot read %s: ' % rotated)
    assert got.stderr.endswith(b'; the run goes on without this rotated file\n')
    assert b'Blocking IP address: 203.0.113.8 (1000 requests)' in got.stdout
    assert files.read('blocklist') == b'203.0.113.8\n'         # nothing of the damaged file counted
    proc, doc = run_json(Files(tmp_path / 'json'), [str(log)], '--rotated', '--check')
    assert doc['warnings'] == [got.stderr[len(b'bot-detector: warning: '):-1].decode()]
    assert [scan['path'] for scan in doc['scans']] == [str(log)]


def test_corrupt_rotated_gzip_is_a_warning(tmp_path):
    whole = bytearray(gzip.compress(planted(previous={'203.0.113.7': 3000})))
    for i in range(200, 260):
        whole[i] ^= 0x5a
    log = rotated_case(tmp_path, bytes(whole))
    got = run_core(Files(tmp_path / 'f').options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--rotated', log])
    assert got.returncode == 0
    assert got.stderr.startswith(b'bot-detector: warning: cannot read ') and got.stderr.count(b'\n') == 1
    assert b'Blocking IP address: 203.0.113.8 (1000 requests)' in got.stdout


def test_damaged_gzip_given_as_the_log_is_an_error(tmp_path):
    whole = gzip.compress(planted(previous={'203.0.113.7': 3000}))
    log = tmp_path / 'access.log.3.gz'
    log.write_bytes(whole[:len(whole) // 2])
    files = Files(tmp_path / 'f')
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert got.stderr.startswith(b'bot-detector: error: cannot read %s: ' % bytes(log)) and got.stderr.count(b'\n') == 1
    assert got.stdout == b'' and files.read('blocklist') is None


def test_rotated_file_that_is_the_log_itself_is_read_once(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(planted(previous={'203.0.113.7': 600}))
    (tmp_path / 'access.log.1').symlink_to('access.log')
    proc, doc = run_json(Files(tmp_path / 'a'), [str(log)], '--rotated')
    assert proc.returncode == 0, proc.stderr
    assert [scan['path'] for scan in doc['scans']] == [str(log)]
    assert doc['windows'][0]['records'] == [{'count': 600, 'address': '203.0.113.7'}]
    assert doc['blocked'] == []


def test_a_log_given_twice_is_read_once(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(planted(previous={'203.0.113.7': 600}))
    os.link(str(log), str(tmp_path / 'hard.log'))
    (tmp_path / 'soft.log').symlink_to('access.log')
    proc, doc = run_json(Files(tmp_path / 'a'), [str(log), str(log), str(tmp_path / 'hard.log'), str(tmp_path / 'soft.log')])
    assert proc.returncode == 0, proc.stderr
    assert [scan['path'] for scan in doc['scans']] == [str(log)]
    assert doc['windows'][0]['records'] == [{'count': 600, 'address': '203.0.113.7'}]


# ---- finding 7: any line length, linear time, bounded memory

def count_with_peak(path, monkeypatch):
    """count_windows over ``path`` with 64 KiB chunks: (its counters, the peak of memory
    the interpreter allocated, the bytes pread returned)."""
    monkeypatch.setattr(chunks, 'READ_CHUNK', 64 * 1024)
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1 << 40)
    real_pread = os.pread
    read = {'bytes': 0}

    def pread(fd, size, offset):
        data = real_pread(fd, size, offset)
        read['bytes'] += len(data)
        return data
    monkeypatch.setattr(os, 'pread', pread)
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    tracemalloc.start()
    try:
        counted = tally.count_windows([str(path)], clock.hour_windows(NOW_EPOCH), line_filter)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return counted.counters, peak, read['bytes']


def nul_run_log(path, megabytes, compress=False):
    """What a writer without O_APPEND leaves after copytruncate: a run of NUL bytes, then
    the lines (the first of them glued to the run)."""
    data = b'\x00' * (megabytes << 20) + planted(previous={'203.0.113.7': 1200})
    path.write_bytes(gzip.compress(data, 1) if compress else data)
    return path


def test_a_huge_line_costs_linear_time_and_bounded_memory(tmp_path, monkeypatch):
    for compress in (False, True):
        small = count_with_peak(nul_run_log(tmp_path / ('small.gz' if compress else 'small'), 4, compress), monkeypatch)
        large = count_with_peak(nul_run_log(tmp_path / ('large.gz' if compress else 'large'), 16, compress), monkeypatch)
        assert small[0] == large[0]
        assert small[0][0][b'203.0.113.7'] == 1199       # the first line is glued to the NULs
        # Four times the run, not four times the memory: a line is never held whole.
        assert large[1] < small[1] * 1.5, (small[1], large[1])
        assert large[1] < 6 << 20
        if not compress:                               # and every byte is read about once
            assert large[2] < (16 << 20) * 1.2 + (1 << 20)


def test_long_lines_count_as_the_reference_counts_them(tmp_path):
    """A 3 MiB line from an address, holding the stamp and a job page, counts (the
    reference greps whole lines); a NUL run before the lines changes nothing else."""
    stamp = b'21/Nov/2026:03:10:00 +0000'
    long_request = b'203.0.113.7 - - [' + stamp + b'] "GET /job/1 HTTP/1.1" 200 1 "-" "' + b'A' * (3 << 20) + b'"\n'
    long_bot = b'203.0.113.9 - - [' + stamp + b'] "GET /job/1 HTTP/1.1" 200 1 "-" "' + b'A' * (3 << 20) + b'-Bot"\n'
    long_files = b'203.0.113.9 \t- [' + stamp + b'] "GET /job/files/' + b'B' * (2 << 20) + b'"\n'
    log = tmp_path / 'access.log'
    log.write_bytes(b'\x00' * (3 << 20) + b'\n' + planted(previous={'203.0.113.7': 999, '203.0.113.9': 999})
                    + long_request + long_bot + long_files)
    got, ours, ref, theirs = core_and_reference(tmp_path, log)
    assert got.returncode == 0, got.stderr
    assert b'Blocking IP address: 203.0.113.7 (1000 requests)' in ref.stdout
    assert mask_duration(got.stdout) == mask_duration(ref.stdout)
    assert ours.read('blocklist') == theirs.read('blocklist')


def test_a_first_field_longer_than_the_bound_is_not_counted(tmp_path, monkeypatch):
    """Documented bound: a first field over LONG_FIELD (1 MiB) is no address; its line is
    left out (the reference would count it under that field)."""
    monkeypatch.setattr(chunks, 'LONG_FIELD', 4096)
    stamp = b'21/Nov/2026:03:10:00 +0000'
    long_field = b'x' * 5000 + b' - - [' + stamp + b'] "GET /job/1" ' + b'y' * 70000 + b'\n'
    short_field = b'x' * 3000 + b' - - [' + stamp + b'] "GET /job/1" ' + b'y' * 70000 + b'\n'
    log = tmp_path / 'access.log'
    log.write_bytes(long_field + short_field)
    counters, dummy, dummy = count_with_peak(log, monkeypatch)
    assert counters[0] == {b'x' * 3000: 1}


def test_lines_read_piece_by_piece_count_as_whole_lines(tmp_path, monkeypatch):
    """Property: with 64-byte chunks nearly every line goes piece by piece (LongLine); the
    counts must be those of the whole lines judged by LineFilter.keep, for any mix of the
    filter's needles, blanks, NULs and split points, whatever bytes the needles hold."""
    from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
    windows = clock.hour_windows(NOW_EPOCH)
    prefixes = ['GET /job/', 'GET /jo\x00bs/', 'GET /stelle/ ']
    line_filter = rules.LineFilter(prefixes, '/ G')         # a marker that joining needles by blanks would make
    pieces = [b'GET /job/', b'GET /jo\x00bs/', b'GET /stelle/ ', b'/ G', b'G', b'/', b'/files/', b'BoT', b'bo', b't',
              windows[0].stamp, windows[1].stamp, b' ', b'\t', b'\x00', b'x' * 50, b'203.0.113.7', b'2001:db8::7', b'GET /jo']
    lines = st.lists(st.lists(st.sampled_from(pieces), max_size=14).map(b''.join), min_size=1, max_size=30)
    monkeypatch.setattr(chunks, 'READ_CHUNK', 64)

    @hsettings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(lines=lines)
    def check(lines):
        path = tmp_path / 'pieces.log'
        path.write_bytes(b'\n'.join(lines) + b'\n')
        counted = tally.count_windows([str(path)], windows, line_filter)
        expected = [{}, {}]
        for line in lines:
            for i, window in enumerate(windows):
                if window.stamp in line and line_filter.keep(line):
                    field = rules.first_field(line)
                    expected[i][field] = expected[i].get(field, 0) + 1
        assert [dict(c) for c in counted.counters] == expected
    check()


def test_the_stand_in_of_a_long_line_holds_no_needle_the_line_lacks(tmp_path, monkeypatch):
    """The needles a long line holds are joined into a short stand-in line: joined by a
    blank, 'GET /job/' and 'GET /jo...' would make the marker '/ G'; joined by NUL, two
    stamps would make a prefix '3<NUL>2'. Neither may count or drop what the line does not."""
    monkeypatch.setattr(chunks, 'READ_CHUNK', 64)
    windows = clock.hour_windows(NOW_EPOCH)
    previous, current = windows[0].stamp, windows[1].stamp
    cases = [
        (rules.LineFilter(['GET /job/', 'GET /jo\x00bs/'], '/ G'),
         b'203.0.113.7 ' + previous + b' GET /job/ ' + b'x' * 80 + b'GET /jo\x00bs/'),
        (rules.LineFilter(['GET /job/', (previous[-1:] + b'\x00' + current[:1]).decode()], 'Google'),
         b'203.0.113.8 ' + previous + b' ' + b'y' * 80 + current),
    ]
    for line_filter, line in cases:
        path = tmp_path / 'long.log'
        path.write_bytes(line + b'\n')
        counted = tally.count_windows([str(path)], windows, line_filter)
        expected = [{rules.first_field(line): 1} if w.stamp in line and line_filter.keep(line) else {} for w in windows]
        assert [dict(c) for c in counted.counters] == expected
