# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening access logs, and finding where the windows start in a time-ordered one."""

from __future__ import absolute_import, division, print_function

import os
import re
import stat
import time

from .clock import MONTHS
from .errors import EXIT_SPEC_ERROR, BotDetectorError
from .messages import NOT_READABLE, NOT_REGULAR

__metaclass__ = type

PROBE_BYTES = 64 * 1024
ORDER_PROBES = 32

_TIMESTAMP = re.compile(br'\[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) [-+]\d{4}\]')
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


def is_gzip(handle):
    magic = handle.read(2)
    handle.seek(0)
    return magic == b'\x1f\x8b'


def line_time(line):
    """A line's ``[21/Nov/2026:04:13:43 +0100]`` timestamp as seconds since the epoch,
    reading its wall-clock text in this host's local time and ignoring its offset, or
    None. The windows match the stamp as text in local time (rule 5.3.1), so the seek
    must compare the same thing: a log written in another zone is then still sought right."""
    match = _TIMESTAMP.search(line)
    if match is None:
        return None
    day, month, year, hour, minute, second = match.groups()
    month = _MONTH_NUMBER.get(month)
    if month is None:
        return None
    try:
        return time.mktime((int(year), month, int(day), int(hour), int(minute), int(second), 0, 0, -1))
    except (ValueError, OverflowError):
        return None


def time_after(handle, offset):
    """The time of the first timestamped whole line starting after ``offset`` (at 0: at it),
    or None when none is found within PROBE_BYTES."""
    handle.seek(offset)
    block = handle.read(PROBE_BYTES)
    if offset:
        cut = block.find(b'\n')
        block = b'' if cut == -1 else block[cut + 1:]
    lines = block.split(b'\n')
    for line in lines[:-1] if len(lines) > 1 else lines:
        epoch = line_time(line)
        if epoch is not None:
            return epoch
    return None


def seek_offset(handle, size, target, margin):
    """A line-aligned offset before which every line is older than ``target`` + ``margin``,
    found by binary search on the line timestamps; None when the log does not look time
    ordered (some timestamp earlier than one before it by more than ``margin``), which
    asks for a full scan. 0 when the log starts after ``target``."""
    probes = {}

    def probe(offset):
        if offset not in probes:
            probes[offset] = time_after(handle, offset)
        return probes[offset]

    for i in range(ORDER_PROBES + 1):      # a spread of probes for the order check
        probe(size * i // ORDER_PROBES)
    low, high = 0, size
    while high - low > PROBE_BYTES:
        middle = (low + high) // 2
        epoch = probe(middle)
        if epoch is not None and epoch < target:
            low = middle
        else:
            high = middle
    latest = None
    for offset in sorted(probes):
        epoch = probes[offset]
        if epoch is None:
            continue
        if latest is not None and epoch < latest - margin:
            return None
        latest = epoch if latest is None else max(latest, epoch)
    return low


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
        self.mode = mode          # 'seek', 'full', or 'full-gzip'
        self.start = start
        self.bytes_read = 0

    def as_dict(self):
        return {'path': self.path, 'mode': self.mode, 'start': self.start, 'bytes_read': self.bytes_read}
