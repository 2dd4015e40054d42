# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replacing a file atomically: a temporary file in the same directory, written, fsync'ed,
given the owner and mode of the file it replaces, renamed over it, the directory fsync'ed.
For the blocklist (unblock, expiry) and the metrics file."""

from __future__ import absolute_import, division, print_function

import errno
import os
import stat

from ..base.errors import BotDetectorError
from ..base.text import write_all

__metaclass__ = type

# The temporary file beside the file replaced: '.ipblocklist.txt.<random>.bot-detector-tmp'.
TEMP_SUFFIX = '.bot-detector-tmp'


def read_for_rewrite(path):
    """The content and stat of ``path`` (the blocklist, its links resolved by
    writer.rewrite_target), read through a descriptor that follows no link: (b'', None)
    when it does not exist. A link (one put there since) or anything but a regular file is
    refused, since replacing it would put a regular file in its place."""
    content, info, fd = open_for_rewrite(path)
    if fd is not None:
        os.close(fd)
    return content, info


def open_for_rewrite(path):
    """read_for_rewrite's (content, stat), and the descriptor it read through, left open
    (None when the file does not exist): what others append to the file until it is
    replaced can be read from it afterwards."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return b'', None, None
        if exc.errno == errno.ELOOP:
            raise BotDetectorError('refusing to rewrite %s: it became a symbolic link' % path)
        raise BotDetectorError('cannot read %s: %s' % (path, exc.strerror))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BotDetectorError('refusing to rewrite %s: not a regular file' % path)
        chunks = []
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                return b''.join(chunks), info, fd
            chunks.append(chunk)
    except OSError as exc:
        os.close(fd)
        raise BotDetectorError('cannot read %s: %s' % (path, exc.strerror))
    except BaseException:
        os.close(fd)
        raise


def replace_file(path, content, info=None, before_rename=None):
    """Replace ``path`` by ``content`` atomically, with the owner and mode in ``info`` (a
    stat; None: this user's, 0644): a reader sees the old file or the new one, never a
    part; a crash leaves the old one. ``before_rename(stat of the new file)``, when given, is
    called once the new file is written, just before the rename: False, or an exception, leaves the file as it
    is (False: returns False)."""
    import tempfile     # a replacement only: it imports shutil, random and the compressors (4 ms a run)
    directory, base = os.path.split(os.path.abspath(path))
    _remove_stale_temporaries(directory, base)
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(prefix='.%s.' % base, suffix=TEMP_SUFFIX, dir=directory)
        try:
            write_all(fd, content)
            if info is not None and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                os.fchown(fd, info.st_uid, info.st_gid)
            os.fchmod(fd, 0o644 if info is None else stat.S_IMODE(info.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_rename is not None and not before_rename(os.lstat(temporary)):
            return False
        os.rename(temporary, path)
        temporary = None
        _fsync_directory(directory)
        return True
    except OSError as exc:
        raise BotDetectorError('cannot replace %s: %s' % (path, exc.strerror or exc))
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _remove_stale_temporaries(directory, base):
    """Temporary files a killed run left: under the lock no other run is writing one."""
    prefix = '.%s.' % base
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(TEMP_SUFFIX):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _fsync_directory(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
