# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening access logs, and finding where the windows start in a time-ordered one."""

from __future__ import absolute_import, division, print_function

import os
import re
import stat

from ..base.clock import MONTHS, utc_seconds
from ..base.errors import EXIT_SPEC_ERROR, BotDetectorError
from ..base.messages import NOT_READABLE, NOT_REGULAR

__metaclass__ = type

# A probe reads PROBE_READ bytes, up to PROBE_BYTES when lines are long.
PROBE_READ = 4 * 1024
PROBE_BYTES = 64 * 1024
# The seek's probes: ORDER_PROBES spread over the file, or one every PROBE_SPACING in a smaller one.
ORDER_PROBES = 1024
PROBE_SPACING = 16 * 1024
MAX_UTC_OFFSET = 14 * 3600      # +14:00, the widest offset in use

# An access-log timestamp, [21/Nov/2026:04:13:43 +0000]: the common and combined log formats'.
TIMESTAMP = re.compile(br'\[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([-+])(\d{2})(\d{2})\]')
# What the windows count by (rule 5.3.1): a date and hour, 21/Nov/2026:04, however the rest
# of the time is spelt ([21/Nov/2026:04:13:43 GMT], HAProxy's [21/Nov/2026:04:13:43.123]).
# A log none of whose lines holds one counts nothing: the warning of an unreadable format.
HOUR_TEXT = re.compile(br'\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}')
_MONTH_NUMBER = dict((m.encode('ascii'), i + 1) for i, m in enumerate(MONTHS))


def open_log(path):
    """Open an access log for reading, refusing what is not a regular file.

    O_NONBLOCK so that opening a FIFO cannot hang; fstat on the open descriptor
    so the check and the read are of the same file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        raise BotDetectorError(NOT_READABLE % path, EXIT_SPEC_ERROR)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        # A directory, FIFO or device (a link to /dev/zero) would hang or mislead.
        raise BotDetectorError(NOT_REGULAR % path, EXIT_SPEC_ERROR)
    return os.fdopen(fd, 'rb')


def check_readable(path):
    """Rule 2: the log must be readable (and, our addition, a regular file)."""
    if not os.access(path, os.R_OK):
        raise BotDetectorError(NOT_READABLE % path, EXIT_SPEC_ERROR)
    open_log(path).close()


GZIP_MAGIC = b'\x1f\x8b'


def has_gzip_header(head):
    """True when ``head`` (the file's first bytes) starts with a valid gzip member header:
    the magic, the deflate method and no reserved flag bits (RFC 1952). A plain log whose
    first two bytes happen to be 1f 8b fails this, or fails to decompress, and is read as plain."""
    return len(head) >= 10 and head[:2] == GZIP_MAGIC and head[2:3] == b'\x08' and not ord(head[3:4]) & 0xe0


def _instant(match):
    """A ``[21/Nov/2026:04:13:43 +0100]`` timestamp match as (seconds since the epoch with its
    own UTC offset applied, that offset in seconds), or None when it is no real time.
    Applying the offset makes the times of a log rise through DST changes, whatever zone it
    is written in; the windows' hour text is mapped to instants the same way (stamp_clock)."""
    day, month, year, hour, minute, second, sign, off_hours, off_minutes = match.groups()
    month = _MONTH_NUMBER.get(month)
    offset = (int(off_hours) * 3600 + int(off_minutes) * 60) * (-1 if sign == b'-' else 1)
    if (month is None or not 1 <= int(day) <= 31 or int(hour) > 23 or int(minute) > 59 or int(second) > 60
            or int(off_minutes) > 59 or abs(offset) > MAX_UTC_OFFSET or int(year) < 1):
        return None
    clock_text = utc_seconds(int(year), month, int(day), int(hour), int(minute), int(second))
    return clock_text - offset, offset


def stamp_clock(stamp):
    """A window's hour stamp, b'21/Nov/2026:03', as the start of that clock hour read as if
    it were UTC: a line carrying it with offset O was written at this minus O, or up to an
    hour later."""
    day, month, rest = stamp.split(b'/')
    year, hour = rest.split(b':')
    return utc_seconds(int(year), _MONTH_NUMBER[month], int(day), int(hour), 0, 0)


def probe(fd, offset):
    """The first timestamped line starting after ``offset`` (at 0: at it), as (its start,
    its instant, its UTC offset), or None when there is none within PROBE_BYTES."""
    want = PROBE_READ
    while True:
        block = os.pread(fd, want, offset)
        at_end = len(block) < want
        # At 0 the first line is whole; elsewhere it starts after the first newline.
        pos = block.find(b'\n') + 1 if offset else 0
        if offset == 0 or pos:
            # Only whole lines: up to the last newline, or to the end of the file.
            limit = len(block) if at_end else block.rfind(b'\n')
            match = TIMESTAMP.search(block, pos, max(pos, limit))
            while match is not None:
                parsed = _instant(match)
                if parsed is not None:
                    return (offset + block.rfind(b'\n', 0, match.start()) + 1,) + parsed
                match = TIMESTAMP.search(block, match.end(), limit)
        if at_end or want >= PROBE_BYTES:
            return None
        want *= 4


class SeekPlan:
    """Where to start reading a plain log (``start``; None: read it all), the earliest
    instant a line that counts can have been written less the margin (``target``), the
    instant of its first timestamped line (``first``; None when it has none near the
    start), and where the lines of that earliest instant begin, as far as the probes tell
    (``counted_from``: only a hint, to share the counting out evenly between workers)."""

    def __init__(self, start, target, first, counted_from=None):
        self.start = start
        self.target = target
        self.first = first
        self.counted_from = counted_from


def plan_seek(fd, size, stamps, margin):
    """Find where the windows' lines can start, from probes spread evenly over the file:
    ORDER_PROBES of them, or one every PROBE_SPACING in a smaller file, and the last lines.

    A line carrying hour text ``stamp`` with UTC offset O was written at stamp_clock(stamp)
    - O or later, so the earliest instant is taken with the largest offset the probes show
    (the widest in use, +14:00, when they show more than one zone's pair). The seek starts
    at the last probe before the first probe at or after that instant less ``margin``: every
    line before it is older than the earliest instant as long as no line is more than
    ``margin`` later than a probe after it. Where a probe is more than ``margin`` earlier
    than one before it, that does not hold, and ``start`` is None: read the whole file."""
    count = max(1, min(ORDER_PROBES, -(-size // PROBE_SPACING)))
    first = probe(fd, 0)
    probes = [first] if first else []
    for offset in sorted(set([size * i // count for i in range(1, count)] + [max(0, size - PROBE_READ)])):
        found = probe(fd, offset)
        if found is not None and (not probes or found[0] > probes[-1][0]):
            probes.append(found)
    if not probes:
        return SeekPlan(None, None, None)
    offsets = set(found[2] for found in probes)
    widest = max(offsets)
    if len(offsets) > 2 or widest - min(offsets) > 2 * 3600:
        widest = max(widest, MAX_UTC_OFFSET)     # more than one zone's pair: unsure, the widest
    target = min(stamp_clock(stamp) for stamp in stamps) - widest - margin
    first_time = first[1] if first else None
    latest = None
    for dummy, instant, dummy in probes:
        if latest is not None and instant < latest - margin:
            return SeekPlan(None, target, first_time)
        latest = instant if latest is None else max(latest, instant)
    start = 0
    for line_start, instant, dummy in probes:
        if instant >= target:
            break
        start = line_start
    counted_from = next((line_start for line_start, instant, dummy in probes if instant >= target + margin), start)
    return SeekPlan(start, target, first_time, max(start, counted_from))


def line_start_after(handle, offset):
    """The offset of the first line start at or after ``offset`` (the file's size if none)."""
    if offset == 0:
        return 0
    handle.seek(offset - 1)
    skipped = 0
    while True:
        block = handle.read(PROBE_BYTES)
        if not block:
            return offset - 1 + skipped
        cut = block.find(b'\n')
        if cut != -1:
            return offset + skipped + cut
        skipped += len(block)
        if block[-1:] == b'\x00':      # a NUL run, maybe a sparse hole of gigabytes: passed over, not read
            from .holes import nul_run_end      # logs with NUL runs only
            size = os.fstat(handle.fileno()).st_size
            skipped = nul_run_end(handle.fileno(), offset - 1 + skipped, size) - (offset - 1)
            handle.seek(offset - 1 + skipped)


def rotated_sibling(path):
    """The most recent rotated file beside ``path``: path.1, else path.1.gz."""
    for candidate in (path + '.1', path + '.1.gz'):
        if os.path.isfile(candidate):
            return candidate
    return None


class Scan:
    """How one file was read: for the results, the tests and the benchmark."""

    def __init__(self, path, mode, start=0):
        self.path = path
        self.mode = mode          # 'seek', 'full', 'full-gzip', or 'incremental' (state.py)
        self.start = start
        self.bytes_read = 0
        self.end = 0              # where the lines counted end (tally.scan_file)
        self.lines = None         # lines read, when counted (the metrics)
        self.stamped = False      # whether a line counted carries a date and hour (HOUR_TEXT)
        self.format = None        # another format than combined (formats/readers.py): its name
        self.unparsed = 0         # ... and its lines that did not parse, the first of them
        self.unparsed_example = None

    def read_by(self, reader):
        """The format ``reader`` (readers.Reader; None: combined) read it in, and its unparsed lines."""
        if reader is not None:
            self.format, self.unparsed, self.unparsed_example = reader.name, reader.unparsed, reader.example

    @property
    def unreadable(self):
        """Finished lines were read, and none carries a date and hour (HOUR_TEXT): a log in
        another format, which counts nothing. (A last line not finished yet is not judged.)"""
        return self.end > self.start and not self.stamped

    def as_dict(self):
        found = {'path': self.path, 'mode': self.mode, 'start': self.start, 'bytes_read': self.bytes_read,
                 'lines': self.lines}
        if self.format is not None:
            found.update(format=self.format, unparsed_lines=self.unparsed)
        return found
