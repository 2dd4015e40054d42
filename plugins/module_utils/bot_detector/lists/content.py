# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the list files (what is made of one kept while the file is unchanged: parsed_list),
and ensuring entries in one (the address_list module)."""

from __future__ import absolute_import, division, print_function

import errno
import os
import stat

from ..base.errors import BotDetectorError, bad_option
from ..base.text import to_bytes, to_text
from .writer import BlocklistWriter

__metaclass__ = type

READ_BLOCK = 1024 * 1024


# The null device (character device 1:3, /dev/null): read as empty, as the reference's grep
# reads it. Other devices never end (/dev/zero, /dev/urandom) or are no list: refused.
NULL_DEVICE = (1, 3)


def read_list(path, strict=False):
    """A list file's content for the search. Missing, unreadable or not a regular file (a
    directory, a FIFO that would block, a device that never ends) counts as empty, as a failed
    grep does (rule 5.6); the null device is empty, without a word.
    ``strict`` (status, which must not report a list it cannot read as empty): only a
    missing file or the null device is empty; the rest raises BotDetectorError naming the file."""
    return _read(path, strict)[0]


def _identity(info):
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _read(path, strict):
    """(content, identity): identity is the regular file's, when it did not change while it
    was read; else None (nothing to keep)."""
    def unreadable(why):
        if strict:
            raise BotDetectorError('cannot read %s: %s' % (path, why))
        return b'', None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return (b'', None) if exc.errno == errno.ENOENT else unreadable(exc.strerror)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            if stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == NULL_DEVICE:
                return b'', None
            return unreadable('not a regular file')
        chunks = []
        while True:
            chunk = os.read(fd, READ_BLOCK)
            if not chunk:
                break
            chunks.append(chunk)
        identity = _identity(info)
        return b''.join(chunks), identity if _identity(os.fstat(fd)) == identity else None
    except OSError as exc:
        return unreadable(exc.strerror)
    finally:
        os.close(fd)


# What was made of a list file (parsed_list), while it stays the same: {path: (identity, {parse: made})}.
_KEPT = {}


def parsed_list(path, parse, strict=False):
    """``parse(content)`` of the list file ``path`` read as read_list reads it, made once and kept
    while the file stays the same file with the same size, modification and change times
    (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns): a follower's recheck of an unchanged
    100,000-line allow-list costs a stat, not a parse. ``parse`` (a function of the module
    level: it is the key) must not change what it returns; callers share it."""
    kept = _KEPT.get(path)
    if kept is not None and parse in kept[1]:
        try:
            if _identity(os.stat(path)) == kept[0]:
                return kept[1][parse]
        except OSError:
            pass
    content, identity = _read(path, strict)
    made = parse(content)
    if identity is not None:
        if kept is None or kept[0] != identity:
            kept = _KEPT[path] = (identity, {})
        kept[1][parse] = made
    return made


def count_lines(content):
    return content.count(b'\n') + int(bool(content) and not content.endswith(b'\n'))


def ensure_lines(path, entries, check_mode=False):
    """Append each of ``entries`` that is not yet a line of ``path`` (exact match, blanks
    around a line ignored), in order, under the same lock as the detector's appends.
    The file is created (0644) when absent and otherwise only appended to. Returns the
    entries appended (in check mode: that would be)."""
    wanted = []
    for entry in entries:
        data = to_bytes(entry).strip()
        if not data or b'\n' in data or b'\r' in data:
            raise bad_option('an entry must be one non-empty line, got %r' % (entry,))
        if data not in wanted:
            wanted.append(data)
    writer = BlocklistWriter(path, None)
    if not check_mode:
        writer.lock()
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            raise BotDetectorError('%s is not a regular file' % path)
        present = set(line.strip() for line in read_list(path).split(b'\n'))
        missing = [entry for entry in wanted if entry not in present]
        if not check_mode:
            for entry in missing:
                writer.append_line(path, entry + b'\n', fsync=True)
    finally:
        writer.unlock()
    return [to_text(entry) for entry in missing]


def entries(content):
    """The entries of a list's content: its lines with blanks around them removed, empty
    lines and comments ('#' first) left out, in order, once each."""
    seen, found = set(), []
    for line in content.split(b'\n'):
        line = line.strip()
        if line and not line.startswith(b'#') and line not in seen:
            seen.add(line)
            found.append(line)
    return found
