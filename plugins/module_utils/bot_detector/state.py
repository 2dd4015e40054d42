# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incremental state of one log (``--state-dir``): what earlier runs counted, so that
the next run reads only the bytes appended since.

Per log, one JSON file in the state directory:

- the counting settings it was made under (state made under others is not used);
- ``now``, the time of the run that wrote it (a run at an earlier time starts cold);
- ``stamps``: the hour stamp texts it tracks, every hour from the previous one to
  HORIZON ahead at the time it was started; each line read has been counted under each
  of them it holds (the spec counts a line in a window when the window's hour text is
  anywhere in it, a referrer included), so the count of a window whose text is tracked
  is exact whatever the order of the lines. Stamps that no later run can have as a
  window are dropped, with their counts; a run whose window is not tracked starts cold;
- ``files``: the log (first) and, after a rotation, the file it was rotated to (LOG.1,
  or LOG.1.gz): device, inode, the file's first bytes, the offset read up to (a line
  start) and, per tracked stamp, the count per key.

The file is parsed with json (never pickle: nothing in it can run code) and checked
field by field; a damaged or foreign one (another user's, another log's, another
format's) is ignored with one warning, and the run starts cold.
"""

from __future__ import absolute_import, division, print_function

import binascii
import errno
import os
import stat
from collections import Counter
from itertools import chain, repeat

from .clock import hour_stamp

__metaclass__ = type

FORMAT = 'jobboard.bot_detector state 1'
HORIZON = 24 * 3600           # the stamps tracked reach this far ahead of the run that starts a state
STAMP_STEP = 300              # hour_stamp is sampled this often: every local hour lasts longer
HEAD_BYTES = 1024             # a file's identity: device, inode and its first bytes
MAX_STATE_BYTES = 512 * 1024 * 1024
# What decides which lines are counted and how, and which files are read: a state made
# under other values is not used.
COUNTING_SETTINGS = ('rules', 'job_prefixes', 'search_engine', 'crawlers', 'rotated', 'seek', 'seek_margin')


class StateError(Exception):
    """Why a state file cannot be used."""


def counting_settings(settings):
    return dict((name, getattr(settings, name)) for name in COUNTING_SETTINGS)


def stamps_in_play(now, horizon):
    """The hour stamps (bytes) some run at ``now`` or later, up to ``horizon``, can have as
    a window: hour_stamp of every instant from an hour before ``now`` to ``horizon``."""
    found = []
    epoch = now - 3600
    while True:
        stamp = hour_stamp(epoch).encode('ascii')
        if stamp not in found:
            found.append(stamp)
        if epoch >= horizon:
            return found
        epoch = min(horizon, (epoch // STAMP_STEP + 1) * STAMP_STEP)


class Segment:
    """One file of the state: its identity, how far it was read, and its counts per stamp."""

    def __init__(self, dev, ino, head, offset, gzip=False, counts=None):
        self.dev = dev
        self.ino = ino
        self.head = head              # its first bytes (at most HEAD_BYTES)
        self.offset = offset          # read up to here (a line start; for gzip, in the decompressed bytes)
        self.gzip = gzip
        self.counts = counts if counts is not None else {}    # {stamp: Counter}

    def matches(self, info, head):
        """True when the file of ``info`` (an fstat) starting with ``head`` holds this
        segment's bytes: its first bytes are ours and it is at least as long (a plain file;
        for gzip, the same file, unchanged)."""
        if not head.startswith(self.head):
            return False
        if self.gzip:
            return (info.st_dev, info.st_ino) == (self.dev, self.ino)
        return info.st_size >= self.offset

    def as_json(self):
        return {'dev': self.dev, 'ino': self.ino, 'head': binascii.hexlify(self.head).decode('ascii'),
                'offset': self.offset, 'gzip': self.gzip,
                'counts': dict((stamp.decode('ascii'), _flat(counter)) for stamp, counter in self.counts.items() if counter)}


class LogState:
    """The state of one log."""

    def __init__(self, log, settings, now, horizon, stamps, files):
        self.log = log
        self.settings = settings      # counting_settings() of the runs that made it
        self.now = now
        self.horizon = horizon
        self.stamps = stamps          # the tracked stamps (bytes)
        self.files = files            # [the log's Segment, the rotated file's Segment (optional)]

    def prune(self, now):
        """Drop the stamps no run at ``now`` or later can have as a window, and their counts."""
        keep = set(stamps_in_play(now, max(now, self.horizon)))
        self.stamps = [stamp for stamp in self.stamps if stamp in keep]
        for segment in self.files:
            for stamp in list(segment.counts):
                if stamp not in keep:
                    del segment.counts[stamp]

    def dumps(self):
        import json
        return json.dumps({'format': FORMAT, 'log': self.log, 'settings': self.settings, 'now': self.now,
                           'horizon': self.horizon, 'stamps': [s.decode('ascii') for s in self.stamps],
                           'files': [segment.as_json() for segment in self.files]},
                          separators=(',', ':'), sort_keys=True)


def _flat(counter):
    """A Counter as [key, count, key, count, ...]: keys as latin-1 text (every byte one
    character), a precise-rules claim (field, crawler) as 'field crawler' (a field holds no
    blank)."""
    keys = [key.decode('latin-1') if isinstance(key, bytes) else key[0].decode('latin-1') + ' ' + key[1]
            for key in counter]
    return list(chain.from_iterable(zip(keys, counter.values())))


def _counter(flat, where):
    if not isinstance(flat, list) or len(flat) % 2:
        raise StateError('%s: not a list of keys and counts' % where)
    keys, values = flat[0::2], flat[1::2]
    if not all(isinstance(k, str) for k in keys) or not all(type(v) is int and v > 0 for v in values):  # noqa: E721
        raise StateError('%s: a key that is not text or a count that is not a positive whole number' % where)
    try:
        if any(' ' in k for k in keys):
            keys = [(k.split(' ', 1)[0].encode('latin-1'), k.split(' ', 1)[1]) if ' ' in k else k.encode('latin-1')
                    for k in keys]
        else:
            keys = list(map(str.encode, keys, repeat('latin-1')))
    except UnicodeEncodeError:
        raise StateError('%s: a key with a character that is not a byte' % where)
    counter = Counter()
    dict.update(counter, zip(keys, values))
    if len(counter) != len(keys):
        raise StateError('%s: a key twice' % where)
    return counter


def _field(doc, name, kind, where):
    """doc[name], which must be of ``kind`` (a bool is no number here)."""
    value = doc.get(name) if isinstance(doc, dict) else None
    if kind is bool:
        valid = isinstance(value, bool)
    else:
        valid = isinstance(value, kind) and not isinstance(value, bool)
    if not valid:
        raise StateError('%s: %s missing or of the wrong type' % (where, name))
    return value


def loads(text, log):
    """A LogState from the file's text. Raises StateError naming what is wrong."""
    import json
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StateError('not JSON (%s)' % exc)
    if not isinstance(doc, dict) or doc.get('format') != FORMAT:
        raise StateError('not a state file of this version (format %r)' % (doc.get('format') if isinstance(doc, dict) else None,))
    if doc.get('log') != log:
        raise StateError('the state of another log (%r)' % (doc.get('log'),))
    settings = _field(doc, 'settings', dict, 'state')
    now = _field(doc, 'now', (int, float), 'state')
    horizon = _field(doc, 'horizon', (int, float), 'state')
    stamps = _field(doc, 'stamps', list, 'state')
    if not all(isinstance(s, str) and len(s) == 14 and s.isascii() for s in stamps):
        raise StateError('stamps: not hour stamps')
    stamps = [s.encode('ascii') for s in stamps]
    files = _field(doc, 'files', list, 'state')
    if not 1 <= len(files) <= 2:
        raise StateError('files: one or two expected')
    segments = []
    for i, item in enumerate(files):
        where = 'files[%d]' % i
        counts = _field(item, 'counts', dict, where)
        try:
            head = binascii.unhexlify(_field(item, 'head', str, where))
        except (binascii.Error, ValueError):
            raise StateError('%s: head is not hex' % where)
        segment = Segment(_field(item, 'dev', int, where), _field(item, 'ino', int, where), head,
                          _field(item, 'offset', int, where), _field(item, 'gzip', bool, where))
        if segment.offset < 0 or len(head) > HEAD_BYTES:
            raise StateError('%s: offset or head out of range' % where)
        for stamp, flat in counts.items():
            if stamp.encode('ascii', 'replace') not in stamps:
                raise StateError('%s: counts under %r, a stamp not tracked' % (where, stamp))
            segment.counts[stamp.encode('ascii')] = _counter(flat, '%s %s' % (where, stamp))
        segments.append(segment)
    return LogState(log, settings, now, horizon, stamps, segments)


def state_path(state_dir, log):
    """The state file of ``log`` (an absolute path): its path with '%' and '/' escaped, so
    that two logs never share one; a long path is cut and given its CRC instead."""
    name = log.replace('%', '%25').replace('/', '%2F')
    if len(name) > 200:
        name = '%s-%08x' % (name[-180:], binascii.crc32(log.encode('utf-8', 'surrogateescape')) & 0xffffffff)
    return os.path.join(state_dir, name + '.json')


def load(state_dir, log):
    """(LogState or None, warning or None). No file is no state and no warning; a file that
    cannot be used is no state and one warning saying why."""
    path = state_path(state_dir, log)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None, None
        return None, 'state file %s ignored: %s' % (path, exc.strerror)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, 'state file %s ignored: not a regular file' % path
        if info.st_uid != os.geteuid():
            return None, 'state file %s ignored: owned by user %d, not by this run\'s' % (path, info.st_uid)
        if info.st_size > MAX_STATE_BYTES:
            return None, 'state file %s ignored: larger than %d bytes' % (path, MAX_STATE_BYTES)
        chunks = []
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        return None, 'state file %s ignored: %s' % (path, exc.strerror)
    finally:
        os.close(fd)
    try:
        return loads(b''.join(chunks).decode('utf-8'), log), None
    except UnicodeDecodeError:
        return None, 'state file %s ignored: not UTF-8 text' % path
    except StateError as exc:
        return None, 'state file %s ignored: %s' % (path, exc)


def _remove_leftovers(state_dir):
    """Remove the temporary files of runs that were killed before their rename (named
    .tmp-PID-..., the PID no longer running)."""
    try:
        names = os.listdir(state_dir)
    except OSError:
        return
    for name in names:
        parts = name.split('-', 2)
        if name.startswith('.tmp-') and len(parts) == 3 and parts[1].isdigit() and not _running(int(parts[1])):
            try:
                os.unlink(os.path.join(state_dir, name))
            except OSError:
                pass


def _running(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def save(state_dir, states):
    """Replace each state's file atomically (a new file, mode 0600, fsync'ed, renamed over
    the old). Called under the run's lock, after the run's appends: a run killed before
    the rename leaves the previous state, which can only cost a cold run. Returns a
    warning, or None."""
    try:
        os.makedirs(state_dir, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(state_dir):
            return 'cannot create the state directory %s: %s' % (state_dir, exc.strerror)
    _remove_leftovers(state_dir)
    for state in states:
        path = state_path(state_dir, state.log)
        data = state.dumps().encode('utf-8')
        temporary = os.path.join(state_dir, '.tmp-%d-%s' % (os.getpid(), os.path.basename(path)))
        fd = None
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
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
    return None
