"""Runs of NUL bytes in a log (issue 38, item 9): a writer without O_APPEND after a
copytruncate leaves a sparse hole, read as NUL bytes with no newline, so the run joins the
line written after it. The run is passed over at the speed of reading (SEEK_DATA, a memcmp
scan), never byte by byte: a follower reaches the lines after a hole of gigabytes at once,
keeps deciding, and honours SIGTERM within 5 s in the middle of one; a cron run counts what
the reference counts. Holes are made with truncate (no disk used)."""
import os
import signal
import time

import pytest

import loggen
import test_follow as follow
from conftest import Files, in_timezone, run_core, run_reference
from loadfactor import Slowdown, children_cpu_seconds, process_cpu_seconds

NOW = follow.START
GIB = 1024 * 1024 * 1024


def _lines(address, count):
    return in_timezone('UTC', lambda: b''.join(loggen.line(address, NOW - 60 + i % 50) for i in range(count)))


def _blocking(stdout):
    return sorted(line for line in stdout.split(b'\n') if line.startswith(b'Blocking IP address'))


@pytest.mark.parametrize('nuls', [1, 100, 4095, 1024 * 1024 - 10, 1024 * 1024, 1024 * 1024 + 10, 2 * 1024 * 1024 + 1,
                                  3 * 1024 * 1024, 9 * 1024 * 1024 + 7])
@pytest.mark.parametrize('sparse', [False, True])
def test_a_cron_run_counts_the_lines_around_nul_runs_as_the_reference(tmp_path, nuls, sparse):
    """NUL runs of every length (short, about a read chunk, longer than one, past the longest
    line another format decodes), written or left as a hole, before each of several lines:
    the addresses blocked and their counts are the reference's."""
    log = tmp_path / 'access.log'
    with open(str(log), 'wb') as handle:
        for address, count in (('203.0.113.1', 4), ('203.0.113.2', 3), ('203.0.113.1', 2), ('203.0.113.3', 3)):
            if sparse:
                handle.truncate(handle.tell() + nuls)
                handle.seek(0, 2)
            else:
                handle.write(b'\x00' * nuls)
            handle.write(_lines(address, count))
    found = []
    for who in ('reference', 'core'):
        files = Files(tmp_path / who)
        for path in (files.blocklist, files.exclusions, files.activity_log):
            path.write_bytes(b'')
        if who == 'reference':
            proc = run_reference(log, files.blocklist, files.exclusions, files.activity_log, [follow.SERVER],
                                 follow.local(NOW), extra_env={'BD_THRESHOLD': '2'})
        else:
            proc = run_core(files.options() + ['--server-ip', follow.SERVER, '--threshold', '2', '--full-scan',
                                               '--now', follow.local(NOW), log])
        assert proc.returncode == 0, proc.stderr
        found.append((_blocking(proc.stdout), follow.blocked(files)))
    assert found[0] == found[1]
    assert found[1][1] == [b'203.0.113.1', b'203.0.113.2', b'203.0.113.3']


def test_a_cron_run_passes_a_hole_of_gigabytes_at_the_speed_of_reading(tmp_path):
    """A 6 GiB hole between two lines' worth of requests: the run takes seconds at most, and the
    line the hole joins is not counted (its first field, NUL bytes, is no address)."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    with open(str(log), 'wb') as handle:
        handle.write(_lines('203.0.113.1', 5))
        handle.truncate(6 * GIB)
        handle.seek(0, 2)
        handle.write(_lines('203.0.113.2', 6))
    started = children_cpu_seconds()        # CPU time, not wall time: the same on a loaded machine
    proc = run_core(files.options() + ['--server-ip', follow.SERVER, '--threshold', '5', '--full-scan',
                                       '--now', follow.local(NOW), log])
    took = children_cpu_seconds() - started
    assert proc.returncode == 0, proc.stderr
    assert _blocking(proc.stdout) == [b'Blocking IP address: 203.0.113.1 (5 requests)',
                                      b'Blocking IP address: 203.0.113.2 (5 requests)']
    assert took < 10, took


@pytest.mark.parametrize('sparse', [True, False])
def test_a_parts_boundary_inside_a_hole_is_found_at_the_speed_of_reading(tmp_path, sparse):
    """A full scan with idle cores splits the log between forked workers, each part starting
    at a line start (logfile.line_start_after): one inside a hole of gigabytes (or a written
    NUL run) is found past it without reading the NUL bytes a probe at a time (55 s for 6 GiB
    on an idle machine, when the split happened; fast when the load left one worker)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.logfile import line_start_after
    path = tmp_path / 'access.log'
    size = 6 * GIB if sparse else 64 * 1024 * 1024
    with open(str(path), 'wb') as handle:
        handle.write(b'first line\n')
        if sparse:
            handle.truncate(size)
            handle.seek(0, 2)
        else:
            handle.write(bytes(size - handle.tell()))
        handle.write(b'\x00\x00joined\nnext line\n')
    with open(str(path), 'rb') as handle:
        started = time.process_time()       # CPU time, not wall time: the same on a loaded machine
        found = line_start_after(handle, 1000)
        took = time.process_time() - started
        assert found == size + len(b'\x00\x00joined\n')
        assert line_start_after(handle, 5) == len(b'first line\n')
        assert line_start_after(handle, found) == found and line_start_after(handle, found + 1) == os.path.getsize(str(path))
    assert took < (2 if sparse else 5), took


def _append_hole(log, size, after=b''):
    with open(str(log), 'r+b') as handle:
        handle.truncate(os.path.getsize(str(log)) + size)
        handle.seek(0, 2)
        handle.write(after)


def test_a_follower_reaches_the_lines_after_a_hole_of_gigabytes_at_once(tmp_path):
    """A copytruncate'd log written on by a writer without O_APPEND: a hole of 4 GiB, then a
    scraper's lines. The follower blocks it within 2 s (before: nothing in 60 s, 24 s a GB)."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(_lines('203.0.113.1', 3))
    with follow.Following(tmp_path, files, log) as follower:
        load = Slowdown()
        written = process_cpu_seconds(follower.proc.pid)     # its CPU time, the same on a loaded machine
        _append_hole(log, 4 * GIB, _lines('203.0.113.5', follow.THRESHOLD + 1))
        follow.wait_for(lambda: follow.blocked(files) == [b'203.0.113.5'], load.bound(10), 'blocking after the hole')
        took = process_cpu_seconds(follower.proc.pid) - written
        assert follower.stop() == 0
    assert took < 2.0, took


@pytest.mark.parametrize('lines_after', [False, True])
def test_sigterm_in_the_middle_of_a_hole_ends_the_follower_within_5_s(tmp_path, lines_after):
    """SIGTERM right after a hole of 16 GiB was appended (the follower inside it, or about to be):
    it exits 0 within 5 s (before: more than 6 s), and a restart counts the lines after the hole
    once: the scraper with THRESHOLD of them (one joined to the hole, not counted) is not blocked,
    one more line blocks it."""
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(_lines('203.0.113.1', 3))
    after = _lines('203.0.113.6', follow.THRESHOLD) if lines_after else b''
    with follow.Following(tmp_path, files, log) as follower:
        _append_hole(log, 16 * GIB, after)
        time.sleep(0.1)
        load = Slowdown()
        sent = time.time()
        follower.proc.send_signal(signal.SIGTERM)
        follow.wait_for(lambda: follower.proc.poll() is not None, load.bound(10), 'the follower ending')
        took = time.time() - sent
        assert follower.proc.returncode == 0, follower.proc.stderr.read()
    assert took < load.bound(5.0), (took, load.factor)
    if not lines_after:
        with open(str(log), 'ab') as handle:
            handle.write(_lines('203.0.113.6', follow.THRESHOLD))
    with follow.Following(tmp_path, files, log) as follower:
        follower.saved()        # its state holds every byte of the log: all read
        assert follow.blocked(files) == []
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(_lines('203.0.113.6', 1))
        follower.caught_up()
        assert follow.blocked(files) == [b'203.0.113.6']
        assert follower.stop() == 0


@pytest.mark.parametrize('nuls', [3 * 1024 * 1024, 40 * 1024 * 1024])
@pytest.mark.parametrize('after_reads', [0, 1, 2, 3])
def test_a_read_interrupted_in_a_nul_run_counts_the_lines_before_it_and_names_its_start(tmp_path, nuls, after_reads):
    """chunks.count_range with an interrupted() that says stop after a few of its checks, on a
    real file whose NUL run (written, not a hole) joins a line: Interrupted carries the start of
    that line, and exactly the lines before it are counted (the follower resumes there)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import Interrupted
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
    before = _lines('203.0.113.1', 4) + _lines('203.0.113.2', 3)
    path = tmp_path / 'access.log'
    path.write_bytes(before + b'\x00' * nuls + _lines('203.0.113.3', 5))
    stamp = in_timezone('UTC', lambda: loggen.clf_time(NOW - 60))[:14].encode()
    counted = tally.Tally([stamp], rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google'))
    checks = []

    def interrupted():
        checks.append(1)
        return len(checks) > after_reads
    fd = os.open(str(path), os.O_RDONLY)
    try:
        with pytest.raises(Interrupted) as raised:
            chunks.count_range(fd, 0, os.fstat(fd).st_size, counted, interrupted)
    finally:
        os.close(fd)
    assert raised.value.position == len(before)
    assert dict(counted.counters[stamp]) == {b'203.0.113.1': 4, b'203.0.113.2': 3}
