# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule 5.8: appending to the blocklist and the activity log, under the run's lock."""

from __future__ import absolute_import, division, print_function

import errno
import fcntl
import os
import stat

from .clock import date_default_format
from .errors import BotDetectorError
from .messages import activity_added
from .text import to_bytes, to_text

__metaclass__ = type


class BlocklistWriter:
    """Appends to the blocklist and the activity log, under an exclusive lock.

    The lock is flock(2) on the blocklist's directory, so every run that appends
    to the same blocklist serialises on it whatever its other options, and it
    needs no extra file (the blocklist itself may not exist yet). Each append is
    one write(2) of a whole line, fsync'ed before the activity log line is
    written, so the activity log never claims an addition the blocklist lacks.
    """

    def __init__(self, blocklist, activity_log):
        self.blocklist = blocklist
        self.activity_log = activity_log
        self._lock_fd = None

    def lock(self):
        directory = os.path.dirname(os.path.abspath(self.blocklist))
        try:
            self._lock_fd = os.open(directory, os.O_RDONLY)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.unlock()
            raise BotDetectorError('cannot lock %s for %s: %s' % (directory, self.blocklist, exc.strerror))

    def unlock(self):
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        self.lock()
        return self

    def __exit__(self, *exc_info):
        self.unlock()

    @staticmethod
    def append_line(path, line, fsync):
        """Append ``line`` (bytes ending in a newline) as one write; undo a partial write."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        if os.geteuid() == 0:
            # As root, a link planted in place of a list must not redirect our writes.
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise BotDetectorError('refusing to append to %s: it is a symbolic link (running as root)' % path)
            raise BotDetectorError('cannot append to %s: %s' % (path, exc.strerror))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise BotDetectorError('refusing to append to %s: not a regular file' % path)
            size = info.st_size
            if size and os.pread(fd, 1, size - 1) != b'\n':
                line = b'\n' + line   # never glue our entry to an unterminated last line
            written = 0
            try:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                if fsync:
                    os.fsync(fd)
            except OSError as exc:
                try:
                    # Undo only when the file is exactly what it was plus our bytes: never
                    # take away what another writer appended meanwhile.
                    if written and os.fstat(fd).st_size == size + written:
                        os.ftruncate(fd, size)
                except OSError:
                    pass
                raise BotDetectorError('cannot append to %s: %s' % (path, exc.strerror))
        finally:
            os.close(fd)

    def block(self, address, count, note=None):
        """Append ``address`` to the blocklist, then its activity line; ``note`` (fleet,
        sync) marks a decision not taken by this host's own count: 'RPH=3000 (fleet)'."""
        self.append_line(self.blocklist, address + b'\n', fsync=True)
        entry = activity_added(date_default_format(), to_text(address), count, note)
        self.append_line(self.activity_log, to_bytes(entry) + b'\n', fsync=True)
