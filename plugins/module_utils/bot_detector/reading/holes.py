# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs of NUL bytes in a log, passed over at the speed of reading (issue 38, item 9). A
writer without O_APPEND leaves a sparse hole after a copytruncate (its next write lands at
its old offset); the hole reads as NUL bytes, with no newline: the run is the start of the
line written after it, read as the reference reads it (chunks.LongLine), but never byte by
byte: holes by SEEK_DATA where the file system has it, NUL data by a scan in C."""

from __future__ import absolute_import, division, print_function

import errno
import os

from ..base.errors import Interrupted

__metaclass__ = type

SCAN = 1024 * 1024      # bytes of NUL data scanned a read
ZEROS = bytes(SCAN)


def _seek(fd, offset, whence):
    """lseek with SEEK_DATA or SEEK_HOLE; None when there is no data after ``offset`` (ENXIO);
    -1 when the system or the file system has no such seek (then read on)."""
    if whence is None:
        return -1
    try:
        return os.lseek(fd, offset, whence)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
            return -1
        raise


SEEK_DATA = getattr(os, 'SEEK_DATA', None)
SEEK_HOLE = getattr(os, 'SEEK_HOLE', None)


def all_nul(block):
    """Whether ``block`` (at most SCAN bytes) is NUL bytes only: one memcmp."""
    return block == ZEROS[:len(block)]


def first_not_nul(block):
    """The index of the first byte of ``block`` (at most SCAN bytes) that is not NUL, else its
    length: compared with NUL bytes by halves (a memcmp each; lstrip and re take 8 ms a MiB)."""
    low, high = 0, len(block)
    if all_nul(block):
        return high
    while high - low > 4096:        # a byte that is not NUL lies in [low, high)
        middle = (low + high) // 2
        if all_nul(block[low:middle]):
            low = middle
        else:
            high = middle
    return high - len(block[low:high].lstrip(b'\x00'))


def nul_run_end(fd, offset, limit, interrupted=None):
    """The offset of the first byte that is not NUL in [offset, limit), else ``limit``."""
    while offset < limit:
        if interrupted is not None and interrupted():
            raise Interrupted()
        data = _seek(fd, offset, SEEK_DATA)
        if data is None:
            return limit        # a hole to the file's end
        if data > offset:
            offset = min(data, limit)       # a hole: NUL bytes, not read
            continue
        block = os.pread(fd, min(SCAN, limit - offset), offset)
        if not block:
            return offset
        first = first_not_nul(block)
        if first < len(block):
            return offset + first
        offset += len(block)
    return limit


def data_end_before(fd, start, position):
    """Where the file's data before ``position`` ends (no later than ``position``, no earlier
    than ``start``): the bytes from there to ``position`` are a hole. ``position`` itself when
    the file system does not tell."""
    offset, end = start, start
    while offset < position:
        data = _seek(fd, offset, SEEK_DATA)
        if data == -1:
            return position
        if data is None or data >= position:
            break
        hole = _seek(fd, data, SEEK_HOLE)
        if hole is None or hole == -1:
            return position
        end, offset = min(hole, position), hole
    return end


def line_end_after(fd, start, size, interrupted=None):
    """Just after the first newline in [start, size), None when there is none; NUL runs passed over."""
    position = start
    while position < size:
        if interrupted is not None and interrupted():
            raise Interrupted()
        block = os.pread(fd, min(SCAN, size - position), position)
        if not block:
            return None
        cut = block.find(b'\n')
        if cut != -1:
            return position + cut + 1
        position += len(block)
        if block[-1:] == b'\x00':
            position = nul_run_end(fd, position, size, interrupted)
    return None
