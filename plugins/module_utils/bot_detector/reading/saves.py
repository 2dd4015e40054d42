# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state directory (``--state-dir``): one state file per log (state.py says what it
holds), read only when it is a regular file of this run's user, replaced atomically."""

from __future__ import absolute_import, division, print_function

import binascii
import errno
import json
import os
import re
import stat

from .state import FORMAT, FORMAT_NAME, HEAD_BYTES, EarlierFormat, LogState, Segment, StateError, typed_field, whole_count

__metaclass__ = type

from ..base.messages import STATE_IGNORED, STATE_OVER_BUDGET
from ..base.text import write_all


def state_path(state_dir, log):
    """The state file of ``log`` (an absolute path): its path with '%' and '/' escaped, so
    that two logs never share one; a long path is cut and given its CRC instead."""
    name = log.replace('%', '%25').replace('/', '%2F')
    if len(name) > 200:
        name = '%s-%08x' % (name[-180:], binascii.crc32(log.encode('utf-8', 'surrogateescape')) & 0xffffffff)
    return os.path.join(state_dir, name + '.json')


def load(state_dir, log, max_bytes=None):
    """(LogState or None, warning or None). No file is no state and no warning; a file that
    cannot be used (one larger than ``max_bytes``, the setting state_budget, too) is no state and one warning saying why."""
    path = state_path(state_dir, log)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None, None
        return None, STATE_IGNORED % (path, exc.strerror)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, STATE_IGNORED % (path, 'not a regular file')
        if info.st_uid != os.geteuid():
            return None, STATE_IGNORED % (path, 'owned by user %d, not by this run\'s' % info.st_uid)
        if max_bytes is not None and info.st_size > max_bytes:
            return None, STATE_IGNORED % (path, 'larger than %d bytes' % max_bytes)
        chunks = []
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        return None, STATE_IGNORED % (path, exc.strerror)
    finally:
        os.close(fd)
    try:
        return loads(b''.join(chunks), log), None
    except EarlierFormat:
        return None, None
    except StateError as exc:
        return None, STATE_IGNORED % (path, exc)


_PID = re.compile(r'[0-9]{1,7}\Z')


def remove_leftovers(directory):
    """Remove the temporary files of runs or followers that were killed before their rename
    (named .tmp-PID-..., the PID no longer running)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split('-', 2)
        # A PID is ASCII digits, at most pid_max (2**22): other names are not ours to remove.
        if name.startswith('.tmp-') and len(parts) == 3 and _PID.match(parts[1]) and not _running(int(parts[1])):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _running(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def drop(state_dir, log, why):
    """Remove the state file of ``log`` (its counts are past a budget); returns the warning."""
    path = state_path(state_dir, log)
    try:
        os.unlink(path)
    except OSError:
        pass
    return STATE_OVER_BUDGET % {'path': path, 'why': why}


def save(state_dir, states, max_bytes=None):
    """Replace each state's file atomically (a new file, mode 0600, fsync'ed, renamed over
    the old). Called under the run's lock, after the run's appends: a run killed before
    the rename leaves the previous state, which can only cost a cold run. A state larger
    than ``max_bytes`` is not written, and its old file is removed. Returns a warning, or
    None."""
    try:
        os.makedirs(state_dir, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(state_dir):
            return 'cannot create the state directory %s: %s' % (state_dir, exc.strerror)
    remove_leftovers(state_dir)
    over = []
    for state in states:
        path = state_path(state_dir, state.log)
        pieces = state.pieces(max_bytes)       # None as soon as it passes max_bytes: never more in memory
        size = None if pieces is None else sum(map(len, pieces))
        if pieces is None or (max_bytes is not None and size > max_bytes):
            over.append(drop(state_dir, state.log, 'larger than state_budget (%s bytes allowed)' % max_bytes if pieces is None else
                             'larger than state_budget (%d bytes, %d allowed)' % (size, max_bytes)))
            continue
        temporary = os.path.join(state_dir, '.tmp-%d-%s' % (os.getpid(), os.path.basename(path)))
        fd = None
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            for piece in pieces:
                write_all(fd, piece)
            os.fsync(fd)
            os.close(fd)
            fd = None
            os.rename(temporary, path)
        except OSError as exc:
            if fd is not None:
                os.close(fd)
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
            return 'cannot write the state file %s: %s' % (path, exc.strerror)
    return '\n'.join(over) or None


def _pair(doc, name, where):
    value = typed_field(doc, name, list, where)
    if len(value) != 2 or not all(whole_count(v) and v >= 0 for v in value):
        raise StateError('%s: %s is not two whole numbers' % (where, name))
    return value


def loads(data, log):
    """A LogState from the file's bytes; its sections are checked against their CRC-32s
    and parsed when needed. Raises StateError naming what is wrong."""
    cut = data.find(b'\n')
    try:
        doc = json.loads(data[:cut if cut != -1 else len(data)].decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:     # RecursionError: nested too deep
        raise StateError('not JSON (%s)' % exc)
    found = doc.get('format') if isinstance(doc, dict) else None
    if found != FORMAT:
        error = EarlierFormat if isinstance(found, str) and found.startswith(FORMAT_NAME) else StateError
        raise error('not a state file of this version (format %r)' % (found,))
    if doc.get('log') != log:
        raise StateError('the state of another log (%r)' % (doc.get('log'),))
    settings = typed_field(doc, 'settings', dict, 'state')
    now = typed_field(doc, 'now', (int, float), 'state')
    horizon = typed_field(doc, 'horizon', (int, float), 'state')
    stamps = typed_field(doc, 'stamps', list, 'state')
    if not all(isinstance(s, str) and len(s) == 14 and s.isascii() for s in stamps):
        raise StateError('stamps: not hour stamps')
    stamps = [s.encode('ascii') for s in stamps]
    files = typed_field(doc, 'files', list, 'state')
    if not 1 <= len(files) <= 2:
        raise StateError('files: one or two expected')
    segments, position = [], cut + 1
    for i, item in enumerate(files):
        where = 'files[%d]' % i
        try:
            head = binascii.unhexlify(typed_field(item, 'head', str, where))
        except (binascii.Error, ValueError):
            raise StateError('%s: head is not hex' % where)
        segment = Segment(typed_field(item, 'dev', int, where), typed_field(item, 'ino', int, where), head,
                          typed_field(item, 'offset', int, where), typed_field(item, 'gzip', bool, where))
        if segment.offset < 0 or len(head) > HEAD_BYTES:
            raise StateError('%s: offset or head out of range' % where)
        if item.get('before') is not None:
            segment.before = _pair(item, 'before', where)
        if item.get('compressed') is not None:
            segment.compressed = _pair(item, 'compressed', where)
        for entry in typed_field(item, 'sections', list, where):
            stamp = typed_field(entry, 'stamp', str, where).encode('ascii', 'replace')
            kept = entry.get('parts') if isinstance(entry, dict) and 'counts' not in entry else None
            pairs = [_pair(entry, 'top', where)] + ([_pair(entry, 'counts', where)] if kept is None else [
                _pair({'part': part}, 'part', where) for part in typed_field(entry, 'parts', list, where)])
            parts, crcs = [], []
            for length, crc in pairs:
                raw = data[position:position + length]
                position += length
                if len(raw) != length or binascii.crc32(raw) != crc:
                    raise StateError('%s: the section of %s is damaged or cut short' % (where, stamp.decode('ascii')))
                parts.append(raw)
                crcs.append(crc)
            if kept is not None:        # counts past count_budget, in parts (kept.py)
                parts, crcs = [parts[0], parts[1:]], [crcs[0], crcs[1:]]
            if stamp not in stamps or stamp in segment.counts.stamps():
                raise StateError('%s: a section of %s, not tracked or twice' % (where, stamp.decode('ascii')))
            segment.counts._raw[stamp] = (parts[0], parts[1], '%s %s' % (where, stamp.decode('ascii')), crcs)  # pylint: disable=protected-access
        segments.append(segment)
    if position != len(data):
        raise StateError('%d bytes after the last section' % (len(data) - position))
    return LogState(log, settings, now, horizon, stamps, segments)
