# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules 5.3.1 to 5.3.7: reading the logs and counting requests per address and window.

The hot path. Per chunk of whole lines, each rule is one pass of a C-level map() over
the list of lines (bytes.__contains__, a compiled regex, bytes.split) and the counting
is Counter.update: the interpreter never loops per line.
"""

from __future__ import absolute_import, division, print_function

import os
import pickle
import zlib
from collections import Counter
from itertools import compress, repeat
from operator import contains

from .errors import BotDetectorError
from .logfile import Scan, is_gzip, line_start_after, open_log, rotated_sibling, seek_offset, time_after
from .clock import window_start

__metaclass__ = type

READ_CHUNK = 1 * 1024 * 1024
DENSITY_SAMPLE = 64 * 1024
# Ranges of at least this size are counted by one forked process per core (at most MAX_WORKERS).
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
MAX_WORKERS = 4


class WindowCounts:
    """What reading the logs yields: requests per key for each window, and how each
    file was read. The one object that carries counts to the ranking stage."""

    def __init__(self, windows):
        self.windows = windows
        self.counters = [Counter() for dummy in windows]
        self.scans = []

    def __iter__(self):
        """(window, Counter) pairs, previous hour first."""
        return iter(zip(self.windows, self.counters))

    def add(self, counters):
        for mine, theirs in zip(self.counters, counters):
            mine.update(theirs)


class Tally:
    """Counts lines into a WindowCounts: the windows' stamps (rule 5.3.1) matched here,
    the rules' line filter (5.3.2-5.3.7) applied to the lines that hold one."""

    def __init__(self, counts, line_filter):
        self.counts = counts
        self.line_filter = line_filter

    def fresh(self):
        """An empty tally with the same windows and filter (a forked worker's)."""
        return Tally(WindowCounts(self.counts.windows), self.line_filter)

    def chunk(self, buf, limit=None):
        """Count the lines of ``buf[:limit]`` (whole lines; a missing final newline is fine).
        ``limit``, the index of the chunk's last newline, spares the caller a copy without
        its unfinished last line. A line that holds both stamps counts in both windows, as
        with two separate greps."""
        if limit is None:
            limit = len(buf)
        lines = None
        sample = buf[:DENSITY_SAMPLE]
        sample_lines = sample.count(b'\n') + 1
        for window, counter in self.counts:
            # A stamp on under a quarter of the sampled lines: find its lines; else split all.
            if sample.count(window.stamp) * 4 < sample_lines:
                selected = lines_holding(buf, window.stamp, limit)
            else:
                if lines is None:
                    lines = buf.split(b'\n')
                    if limit < len(buf):
                        lines.pop()     # the unfinished line after ``limit``
                selected = list(compress(lines, map(contains, lines, repeat(window.stamp))))
            if selected:
                self.line_filter.count_into(selected, counter)


def lines_holding(buf, stamp, limit):
    """The lines of ``buf[:limit]`` that hold ``stamp``, found with bytes.find: for a stamp
    on few lines (a log not in time order), far cheaper than splitting every line."""
    found = []
    find, rfind = buf.find, buf.rfind
    pos = find(stamp, 0, limit)
    while pos != -1:
        end = find(b'\n', pos, limit)
        if end == -1:
            end = limit
        found.append(buf[rfind(b'\n', 0, pos) + 1:end])
        pos = find(stamp, end, limit)
    return found


def count_stream(stream, tally, scan):
    """Count a stream read to its end (a gzip file): chunks, with the unfinished last line carried over."""
    carry = b''
    while True:
        chunk = stream.read(READ_CHUNK)
        if not chunk:
            break
        scan.bytes_read += len(chunk)
        if carry:
            chunk = carry + chunk
        cut = chunk.rfind(b'\n')
        if cut == -1:
            carry = chunk
            continue
        tally.chunk(chunk, limit=cut)
        carry = chunk[cut + 1:]
    if carry:
        tally.chunk(carry)


def count_range(fd, start, end, tally):
    """Count the lines that start in [start, end) of a plain file; ``start`` is a line
    start. Each chunk is counted up to its last newline and the next chunk is read from
    just after it, so no chunk is copied. pread, so forked workers sharing ``fd`` do not
    share a file offset. Returns the bytes read."""
    position, read = start, 0
    while position < end:
        chunk = os.pread(fd, READ_CHUNK, position)
        read += len(chunk)
        if not chunk:
            break
        if position + len(chunk) >= end:
            # The last line to count is the one holding byte end - 1.
            stop = chunk.find(b'\n', end - position - 1)
        else:
            stop = chunk.rfind(b'\n')
        while stop == -1:           # a line longer than the chunk (or the file's last line)
            more = os.pread(fd, READ_CHUNK, position + len(chunk))
            read += len(more)
            if not more:
                stop = len(chunk)
                break
            stop = more.find(b'\n')
            stop = -1 if stop == -1 else len(chunk) + stop
            chunk += more
        if stop < len(chunk) and chunk.find(b'\n', stop + 1) != -1:
            tally.chunk(chunk[:stop])     # the range ends mid-chunk: once per range
        else:
            tally.chunk(chunk, limit=stop)
        position += stop + 1
    return read


def count_parallel(path, handle, start, end, tally):
    """Count [start, end) in one forked process per core, each over a line-aligned part,
    and add up their counters. Returns the bytes read."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2 or end - start < PARALLEL_MIN_BYTES:
        return count_range(handle.fileno(), start, end, tally)
    bounds = [start] + [line_start_after(handle, start + (end - start) * i // workers) for i in range(1, workers)] + [end]
    children = []
    for part in range(1, workers):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # child: count one part, send it, leave
            status = 0
            try:
                os.close(reader)
                mine = tally.fresh()
                read = count_range(handle.fileno(), bounds[part], bounds[part + 1], mine)
                payload = pickle.dumps((None, mine.counts.counters, read), protocol=2)
            except BaseException as exc:  # pylint: disable=broad-except
                payload = pickle.dumps((str(exc), None, 0), protocol=2)
                status = 1
            with os.fdopen(writer, 'wb') as pipe:
                pipe.write(payload)
            os._exit(status)  # pylint: disable=protected-access
        os.close(writer)
        children.append((pid, reader))
    failure, read = None, 0
    try:
        read += count_range(handle.fileno(), bounds[0], bounds[1], tally)
    finally:
        # Every worker is read and reaped, even when this process's own part failed.
        for pid, reader in children:
            with os.fdopen(reader, 'rb') as pipe:
                payload = pipe.read()
            os.waitpid(pid, 0)
            # Our own child's pickle over a private pipe: trusted data.
            error, counters, part_read = pickle.loads(payload) if payload else ('a worker died', None, 0)
            if error is not None:
                failure = error
                continue
            tally.counts.add(counters)
            read += part_read
    if failure is not None:
        raise BotDetectorError('cannot read %s: %s' % (path, failure))
    return read


def scan_file(path, handle, tally, target, margin, seek):
    """Count one open log from where the windows can start (or all of it)."""
    try:
        if is_gzip(handle):
            import gzip
            scan = Scan(path, 'full-gzip')
            count_stream(gzip.GzipFile(fileobj=handle, mode='rb'), tally, scan)
            return scan
        size = os.fstat(handle.fileno()).st_size
        start = seek_offset(handle, size, target, margin) if seek and target is not None else None
        scan = Scan(path, 'full' if start is None else 'seek', line_start_after(handle, start or 0))
        count_parallel(path, handle, scan.start, size, tally)
        scan.bytes_read = size - scan.start     # the part of the file scanned
        return scan
    except (OSError, IOError, EOFError, zlib.error) as exc:
        raise BotDetectorError('cannot read %s: %s' % (path, getattr(exc, 'strerror', None) or exc))


def count_windows(logs, windows, line_filter, now=None, seek=False, margin=600, rotated=False):
    """Read each log once, in chunks, and count requests per key for every window.

    With ``seek``, start each plain log where lines older than the previous-hour window
    less ``margin`` end. With ``rotated``, also read the most recent rotated file when
    the log starts after that point. Counts of all files are summed. Returns a WindowCounts.
    """
    counts = WindowCounts(windows)
    tally = Tally(counts, line_filter)
    target = None if now is None else window_start(now - 3600) - margin
    for path in logs:
        with open_log(path) as handle:
            starts_late = False
            if rotated and target is not None:
                first = time_after(handle, 0)
                starts_late = first is None or first > target
            counts.scans.append(scan_file(path, handle, tally, target, margin, seek))
        sibling = rotated_sibling(path) if starts_late else None
        if sibling is not None:
            with open_log(sibling) as handle:
                counts.scans.append(scan_file(sibling, handle, tally, target, margin, seek))
    return counts
