# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the list files, and ensuring entries in one (the address_list module)."""

from __future__ import absolute_import, division, print_function

import errno
import os
import stat

from ..base.errors import BotDetectorError, bad_option
from ..base.text import to_bytes, to_text
from .writer import BlocklistWriter

__metaclass__ = type

READ_BLOCK = 1024 * 1024


def read_list(path, strict=False):
    """A list file's content for the search. Missing, unreadable or not a regular file (a
    directory, a FIFO that would block) counts as empty, as a failed grep does (rule 5.6).
    ``strict`` (status, which must not report a list it cannot read as empty): only a
    missing file is empty; the rest raises BotDetectorError naming the file."""
    def unreadable(why):
        if strict:
            raise BotDetectorError('cannot read %s: %s' % (path, why))
        return b''
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return b'' if exc.errno == errno.ENOENT else unreadable(exc.strerror)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return unreadable('not a regular file')
        chunks = []
        while True:
            chunk = os.read(fd, READ_BLOCK)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    except OSError as exc:
        return unreadable(exc.strerror)
    finally:
        os.close(fd)


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
