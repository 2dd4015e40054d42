# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A log followed as it grows (follow mode, drivers/follow.py): its current file and the old
files still being read after a rename, each with its identity (device, inode, first bytes)
and where its counted lines end."""

from __future__ import absolute_import, division, print_function

import base64
import errno
import os
import stat

from ..base.errors import BotDetectorError

__metaclass__ = type


class Position:
    """One open file of a log: its identity, where its counted lines end, its first bytes."""

    def __init__(self, fd, offset=0, head=b''):
        self.fd = fd
        info = os.fstat(fd)
        self.dev, self.ino = info.st_dev, info.st_ino
        self.offset, self.head = offset, head
        self.quiet_since = None

    def as_dict(self):
        return {'dev': self.dev, 'ino': self.ino, 'offset': self.offset,
                'head': base64.b64encode(self.head).decode('ascii')}


def open_followed(path, on_odd=None):
    """The log's file open for reading, or None when there is none (yet); ``on_odd(path)`` when
    something else than a regular file is there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise BotDetectorError('cannot read %s: %s' % (path, exc.strerror))
    if not stat.S_ISREG(os.fstat(fd).st_mode):      # a directory or a FIFO made at its path: no log (yet)
        os.close(fd)
        if on_odd is not None:
            on_odd(path)
        return None
    return fd


def holds(fd, head, offset):
    """Whether the open file begins with ``head`` and reaches ``offset``: the file read."""
    return os.fstat(fd).st_size >= offset and os.pread(fd, len(head), 0) == head


class Source:
    """One log followed: its current file and the old files still being read."""

    def __init__(self, path):
        self.path = path
        self.current = None
        self.old = []           # [Position]: renamed away, read on until quiet
        self.looked_at = None   # when its files were last looked at (unseen_sibling)

    def positions(self):
        return {'current': self.current.as_dict() if self.current else None, 'old': [p.as_dict() for p in self.old]}

    def behind(self):
        """Bytes written and not read yet (whole lines or not)."""
        return sum(max(0, os.fstat(p.fd).st_size - p.offset) for p in ([self.current] if self.current else []) + self.old)

    def close(self):
        for pos in ([self.current] if self.current else []) + self.old:
            os.close(pos.fd)


CTIME_SLACK = 0.1       # seconds: a file's ctime comes from a coarser clock than time.time()


def unseen_siblings(source, most=9):
    """LOG.1, LOG.2... (up to ``most``) open for reading, each a file that is none of this log's
    positions and was made or renamed since the log was last looked at (its ctime): rotations
    between two looks whose lines were never read (a rename-and-create, then a copytruncate of
    the new file; or two rename-and-creates). The first known or older file ends the list."""
    found = []
    for number in range(1, most + 1) if source.looked_at is not None else ():
        fd = open_followed('%s.%d' % (source.path, number))
        if fd is None:
            break
        info = os.fstat(fd)
        known = [(pos.dev, pos.ino) for pos in ([source.current] if source.current else []) + source.old]
        if (info.st_dev, info.st_ino) in known or info.st_ctime < source.looked_at - CTIME_SLACK:
            os.close(fd)
            break
        found.append(fd)
    return found
