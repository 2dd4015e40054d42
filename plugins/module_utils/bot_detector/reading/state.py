# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incremental state of one log (``--state-dir``): what earlier runs counted, so that
the next run reads only the bytes appended since.

Per log, one file in the state directory (reading/saves.py): a header line of JSON, then per
segment and stamp two parts, whose lengths and CRC-32s the header gives:

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
  start), for a compressed file its size and modification time (an inode is reused once
  its file is deleted), and, per tracked stamp, the count per key.

Each stamp's counts are two parts: its first entries in ``sort -nr`` order (a line of
JSON, enough to rank an hour no new line touched without reading the rest), and all its
counts (_section): a JSON line of precise-rules claims, the keys joined by blanks (a first
field holds none), a newline, then the counts as unsigned 64-bit little-endian integers
in the keys' order. Binary counts, since every cron run reads and writes the current
hour's: written in a third of the time JSON took, read in two thirds.

The file is parsed with json and array (never pickle: nothing in it can run code) and
checked field by field; a damaged or foreign one (another user's, another log's) is
ignored with one warning, and the run starts cold; one of an earlier format, silently.
"""

from __future__ import absolute_import, division, print_function

import array
import binascii
import json
import os
import sys
from collections import Counter

from ..base.clock import hour_stamp
from ..base.errors import BotDetectorError
from .spill import spilled
from .tally import Prefix, largest

__metaclass__ = type

FORMAT = 'jobboard.bot_detector state 2'
FORMAT_NAME = 'jobboard.bot_detector state '    # what every format's name starts with
HORIZON = 24 * 3600           # the stamps tracked reach this far ahead of the run that starts a state
STAMP_STEP = 300              # hour_stamp is sampled this often: every local hour lasts longer
HEAD_BYTES = 1024             # a file's identity: device, inode and its first bytes
BEFORE_BYTES = 4096           # ... and the bytes before where it was read up to
TOP_ENTRIES = 100             # an hour's first entries kept apart: enough to rank it unread
# What decides which lines are counted and how, and which files are read: a state made
# under other values is not used.
COUNTING_SETTINGS = ('rules', 'job_prefixes', 'search_engine', 'crawlers', 'rotated', 'seek', 'seek_margin')
# The formats' and the campaign profile's counting settings (signals and traps are counted keys), only when set.
FORMAT_SETTINGS = ('log_format', 'log_formats', 'log_json_fields', 'trusted_proxies', 'haproxy_user_agent_capture',
                   'campaigns', 'trap_paths')


class StateError(Exception):
    """Why a state file cannot be used."""


def whole_count(value):
    """An int that is not a bool (JSON's true is no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


class EarlierFormat(StateError):
    """A state file of an earlier version of this product: not used, and no warning (the
    first run after an upgrade starts cold)."""


def counting_settings(settings):
    found = dict((name, getattr(settings, name)) for name in COUNTING_SETTINGS)
    # The formats' settings, only when set: a state saved before they existed stays usable.
    for name in FORMAT_SETTINGS:
        value = getattr(settings, name, None)
        if value and value != 'combined':
            found[name] = value
    return found


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


class Counts:
    """A segment's counts per stamp: {stamp: Counter}. Read from a file, each stamp's
    section is parsed only when asked for: an hour no new line touched is ranked from the
    first entries its file keeps (prefix) and written back as it was read."""

    def __init__(self, counters=None):
        self._counters = dict(counters or {})
        self._raw = {}                # stamp -> (top, counts, where, [their CRC-32s]): not parsed yet

    def get(self, stamp):
        """The Counter of ``stamp``, or None. Raises StateError for a damaged section."""
        if stamp in self._raw:
            top, raw, where, dummy = self._raw.pop(stamp)
            if isinstance(raw, list):
                from .kept import KeptCounter     # counts past count_budget only: a cron run within it loads none of it
                self._counters[stamp] = KeptCounter(raw, Sections, where)
            else:
                self._counters[stamp] = _section_counter(raw, where)
        return self._counters.get(stamp)

    def prefix(self, stamp):
        """A tally.Prefix of ``stamp``'s counts when they are not parsed yet, else None."""
        if stamp not in self._raw:
            return None
        top, dummy, where, dummy = self._raw[stamp]
        entries, complete = _top_entries(top, where)

        def load():
            try:
                return self.get(stamp)
            except StateError as exc:   # its checksum was right: not a disk's damage
                raise BotDetectorError('the state file is damaged (%s); remove it, the next run starts cold' % exc)
        return Prefix(entries, complete, load)

    def add(self, stamp, counter):
        """Add ``counter`` to ``stamp``'s counts (the smaller into the larger; counts
        spilled to files, spill.py, take the others in)."""
        if not counter and not spilled(counter):
            return
        mine = self.get(stamp)
        if spilled(counter) or spilled(mine):
            if not spilled(counter):
                mine, counter = counter, mine
            if mine is not None:
                counter.absorb(mine)
            self._counters[stamp] = counter
            return
        if mine is None or len(counter) > len(mine):
            mine, counter = counter, mine
            self._counters[stamp] = mine
        if counter:
            mine.update(counter.elements())     # counted in C, not a loop over the keys

    def unparsed(self):
        """The stamps whose section is not parsed yet (as read from the file)."""
        return list(self._raw)

    def stamps(self):
        return [stamp for stamp in list(self._counters) + list(self._raw)
                if stamp in self._raw or self._counters[stamp] or spilled(self._counters[stamp])]

    def drop(self, stamp):
        self._counters.pop(stamp, None)
        self._raw.pop(stamp, None)

    def sections(self, unranked=(), max_bytes=None):
        """[(stamp, top, counts, [their CRC-32s])] in stamp order: parsed ones serialised,
        the others as read, with the checksums they were read with; counts past count_budget
        as a list of parts and their CRC-32s (kept.py). The stamps ``unranked`` get no first
        entries: the next run will add to them (the current hour), so it would not rank them
        from those alone. None as soon as the counts pass ``max_bytes``."""
        out, size = [], 0
        for stamp in sorted(self.stamps()):
            if stamp in self._raw:
                top, raw, dummy, crcs = self._raw[stamp]
            elif spilled(self._counters[stamp]):
                from .kept import kept_parts      # counts past count_budget only: a cron run within it loads none of it
                found = kept_parts(self._counters[stamp], Sections, TOP_ENTRIES, stamp not in unranked,
                                   None if max_bytes is None else max_bytes - size)
                if found is None:
                    return None
                entries, raw = found
                top = _NO_TOP if stamp in unranked else _top_json(entries, False)
                crcs = [binascii.crc32(top), [binascii.crc32(part) for part in raw]]
            else:
                counter = self._counters[stamp]
                top, raw = _NO_TOP if stamp in unranked else _top_line(counter), _section(counter)
                crcs = [binascii.crc32(top), binascii.crc32(raw)]
            out.append((stamp, top, raw, crcs))
            size += sum(map(len, raw)) if isinstance(raw, list) else len(raw)
            if max_bytes is not None and size > max_bytes:
                return None
        return out


class Segment:
    """One file of the state: its identity, how far it was read, and its counts per stamp."""

    def __init__(self, dev, ino, head, offset, gzip=False, counts=None, before=None, compressed=None):
        self.dev = dev
        self.ino = ino
        self.head = head              # its first bytes (at most HEAD_BYTES)
        self.offset = offset          # read up to here (a line start; for gzip, in the decompressed bytes)
        self.gzip = gzip
        self.counts = counts if isinstance(counts, Counts) else Counts(counts)
        self.before = before          # [length, CRC-32] of the bytes just before ``offset`` (plain files)
        # gzip: [size, mtime in ns] of the compressed file read (a deleted file's inode is soon another's)
        self.compressed = compressed

    def unchanged(self, info):
        """Whether the compressed file ``info`` (its fstat) is the one this segment read whole."""
        return self.gzip and self.compressed == compressed_stat(info) and (info.st_dev, info.st_ino) == (self.dev, self.ino)

    def matches(self, fd, info, head):
        """True when the open file ``fd`` (``info``, its fstat; ``head``, its first bytes)
        holds this segment's bytes: the same first bytes, at least as long, the same bytes
        just before the offset (a file truncated and written again differs there); for
        gzip, the same file, unchanged."""
        if not head.startswith(self.head):
            return False
        if self.gzip:
            return self.unchanged(info)
        return info.st_size >= self.offset and (self.before is None or bytes_before(fd, self.offset) == self.before)


def compressed_stat(info):
    """[size, mtime in ns] of a compressed file (``info``, its fstat): with its device and inode, its identity."""
    return [info.st_size, info.st_mtime_ns]


def bytes_before(fd, offset):
    """[length, CRC-32] of the BEFORE_BYTES (or fewer) bytes of ``fd`` before ``offset``."""
    length = min(offset, BEFORE_BYTES)
    return before_of(os.pread(fd, length, offset - length))


def before_of(data):
    """Segment.before of ``data``, the BEFORE_BYTES (or fewer) bytes before an offset."""
    return [len(data), binascii.crc32(data)]


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
            for stamp in segment.counts.stamps():
                if stamp not in keep:
                    segment.counts.drop(stamp)

    def dumps(self, max_bytes=None):
        """The file's bytes (pieces(), joined), or None."""
        found = self.pieces(max_bytes)
        return None if found is None else b''.join(found)

    def pieces(self, max_bytes=None):
        """The file in pieces, written one after the other (never joined: a state past
        count_budget is not held twice): a header line (JSON), then for each segment and stamp
        its two parts (the module's docstring; counts past count_budget in parts, kept.py); the
        header gives each part's length and CRC-32. None as soon as the counts pass ``max_bytes``."""
        files, body, size = [], [], 0
        for segment in self.files:
            sections = segment.counts.sections(unranked=(hour_stamp(self.now).encode('ascii'),),
                                               max_bytes=None if max_bytes is None else max_bytes - size)
            if sections is None:
                return None
            files.append({'dev': segment.dev, 'ino': segment.ino, 'head': binascii.hexlify(segment.head).decode('ascii'),
                          'offset': segment.offset, 'gzip': segment.gzip, 'before': segment.before,
                          'compressed': segment.compressed,
                          'sections': [dict({'stamp': stamp.decode('ascii'), 'top': [len(top), crcs[0]]},
                                            **({'parts': [[len(part), crc] for part, crc in zip(raw, crcs[1])]}
                                               if isinstance(raw, list) else {'counts': [len(raw), crcs[1]]}))
                                       for stamp, top, raw, crcs in sections]})
            for dummy, top, raw, dummy in sections:
                body.extend([top] + raw if isinstance(raw, list) else [top, raw])
                size += len(body[-1]) if not isinstance(raw, list) else sum(map(len, raw))
        header = json.dumps({'format': FORMAT, 'log': self.log, 'settings': self.settings, 'now': self.now,
                             'horizon': self.horizon, 'stamps': [s.decode('ascii') for s in self.stamps],
                             'files': files}, separators=(',', ':'), sort_keys=True)
        return [header.encode('utf-8') + b'\n'] + body


def _top_line(counter):
    """The first TOP_ENTRIES of ``counter`` in sort -nr order, and whether that is all of
    them, as a line of JSON; none for precise-rules counts (ranked whole)."""
    if set(map(type, counter)) - {bytes}:
        return _NO_TOP
    entries = largest(counter, TOP_ENTRIES)
    return _top_json(entries, len(entries) == len(counter))


def _top_json(entries, complete):
    keys = [key.decode('latin-1') for key, count in entries]
    return json.dumps({'complete': complete, 'keys': keys, 'counts': [count for key, count in entries]},
                      separators=(',', ':')).encode('ascii') + b'\n'


# The first entries of counts that are to be read whole (the ranking then reads them all).
_NO_TOP = b'{"complete":false,"keys":[],"counts":[]}\n'


def _top_entries(raw, where):
    try:
        doc = json.loads(raw.decode('ascii'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:     # RecursionError: nested too deep
        raise StateError('%s: not JSON (%s)' % (where, exc))
    complete, keys, counts = (typed_field(doc, 'complete', bool, where), typed_field(doc, 'keys', list, where),
                              typed_field(doc, 'counts', list, where))
    if (len(keys) != len(counts) or set(map(type, keys)) - {str} or set(map(type, counts)) - {int}
            or (counts and min(counts) <= 0)):
        raise StateError('%s: first entries that are not keys and positive counts' % where)
    try:
        return list(zip([key.encode('latin-1') for key in keys], counts)), complete
    except UnicodeEncodeError:
        raise StateError('%s: a key with a character that is not a byte' % where)


def _section(counter):
    """One stamp's counts (the module's docstring), or one part of them (kept.py): precise-rules claims ((field, crawler)
    keys) as a JSON line of [field, crawler, count], the other keys joined by blanks, a
    newline, their counts as 64-bit little-endian integers."""
    try:
        keys = b' '.join(counter)
        counts, claims = array.array('Q', counter.values()), []
    except TypeError:       # claims among the keys
        plain = [(k, n) for k, n in counter.items() if isinstance(k, bytes)]
        keys = b' '.join(k for k, n in plain)
        counts = array.array('Q', [n for k, n in plain])
        claims = [[k[0].decode('latin-1'), k[1], n] for k, n in counter.items() if not isinstance(k, bytes)]
    if _SWAP:
        counts.byteswap()
    return json.dumps(claims, separators=(',', ':')).encode('ascii') + b'\n' + keys + b'\n' + counts.tobytes()


def _section_counter(raw, where):
    cut = raw.find(b'\n')
    end = raw.find(b'\n', cut + 1) if cut != -1 else -1
    if end == -1:
        raise StateError('%s: counts without their claims and keys lines' % where)
    try:
        claims = json.loads(raw[:cut].decode('ascii'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:     # RecursionError: nested too deep
        raise StateError('%s: claims not JSON (%s)' % (where, exc))
    if not isinstance(claims, list):
        raise StateError('%s: claims not a list' % where)
    if (len(raw) - end - 1) % 8:
        raise StateError('%s: counts cut short' % where)
    counts = array.array('Q')
    counts.frombytes(raw[end + 1:])
    if _SWAP:
        counts.byteswap()
    keys = raw[cut + 1:end].split(b' ') if counts else []
    if len(keys) != len(counts) or (not counts and end > cut + 1):
        raise StateError('%s: %d keys, %d counts' % (where, len(keys), len(counts)))
    if counts and min(counts) == 0:
        raise StateError('%s: a count that is not a positive whole number' % where)
    counter = Counter()
    dict.update(counter, zip(keys, counts))
    for claim in claims:
        if (not isinstance(claim, list) or len(claim) != 3 or not isinstance(claim[0], str)
                or not isinstance(claim[1], str) or not whole_count(claim[2]) or claim[2] <= 0):
            raise StateError('%s: a claim that is not [field, crawler, count]' % where)
        try:
            dict.__setitem__(counter, (claim[0].encode('latin-1'), claim[1]), claim[2])
        except UnicodeEncodeError:
            raise StateError('%s: a key with a character that is not a byte' % where)
    if len(counter) != len(keys) + len(claims):
        raise StateError('%s: a key twice' % where)
    return counter


# The counts are written little-endian whatever the host: a state directory moved between
# hosts reads the same numbers.
_SWAP = sys.byteorder != 'little'


class Sections:
    """How kept.py writes and reads the parts of an hour's counts past count_budget: as this
    module writes and reads an hour's counts (kept.py does not import this module)."""
    error = StateError
    write = staticmethod(_section)
    read = staticmethod(_section_counter)


def typed_field(doc, name, kind, where):
    """doc[name], which must be of ``kind`` (a bool is no number here)."""
    value = doc.get(name) if isinstance(doc, dict) else None
    if kind is bool:
        valid = isinstance(value, bool)
    else:
        valid = isinstance(value, kind) and not isinstance(value, bool)
    if not valid:
        raise StateError('%s: %s missing or of the wrong type' % (where, name))
    return value
