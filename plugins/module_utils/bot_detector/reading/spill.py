# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Counting in bounded memory (issue 19): past a budget of distinct keys, a window's
counts are spilled to hash-partitioned files in a private directory (budget.py says where,
and what happens when there is none), as GNU sort spills its runs, and read back one
partition at a time, each exact.

A ``SpillCounter`` is a Counter (the counting code updates it in C as any other) that also
owns partition files: its true counts are its entries plus the keys in its files. Whoever
reads one whole goes through ``parts()``: exact Counters over disjoint sets of keys, none
with more than the budget's distinct keys (a partition too large is split again on more
bits of the hash). Keys are bytes (the spec rules' first fields); a file holds each key
once per request, newline-terminated, so a key's count is the number of its lines.

The hash is Python's own for bytes (SipHash with a per-process random key): an attacker
who cannot read the process's memory cannot choose addresses that fall in one partition.
"""

from __future__ import absolute_import, division, print_function

import binascii
import fcntl
import heapq
import os
from bisect import bisect_left
from collections import Counter
from itertools import chain, compress, repeat
from operator import add, floordiv, gt, sub

from ..base import messages
from ..base.text import write_all
from . import budget as budget_of
from .budget import OWNER_FILE, PREFIX, sweep

__metaclass__ = type

FANOUT = 256                  # partitions per spill
LOOKUPS = 256                 # keys a carried summary looks up in their partitions (_carry_summary)
LIGHT_DRIFT = 4               # spills of once-counted keys a summary is carried over before a reading
READ_BYTES = 1024 * 1024      # a partition file is read back in pieces of this size
HASH_LOW, HASH_HIGH = -(1 << 63), 1 << 63


class Codec:
    """How a counter's keys go to partitions and files: the spec rules' keys (bytes), by
    their own hash, a line each. Precise rules have theirs (precise.SpillCodec): every key
    of one group in one partition, so that a part ranks its groups whole."""

    hash = staticmethod(hash)

    @staticmethod
    def encode(keys):
        """``keys`` as lines (bytes without a newline), in order."""
        return keys

    @staticmethod
    def decode(piece):
        """The keys of ``piece``, lines joined by newlines."""
        return piece.split(b'\n')


BYTES = Codec()


class Session:
    """One run's spill area: the budget (distinct keys held in memory by one process, all
    windows together: the setting count_budget), and a private directory (mode 0700) made in
    ``base`` (budget.base_for: ``state_dir``'s spill, else TMPDIR; one only this user writes,
    budget.private) at the first spill, or before workers fork, and removed with every
    file in it when the session ends, also on failure. When it cannot be made or a spill
    fails (a full disk, a quota; ``problem`` says why), ``usable`` is False from then on and
    the counts stay in memory (``hold``): one warning, and past budget.memory_keys the
    smallest counts are dropped, with a second. ``warn``: the driver's warning line (the
    process that made the session only: a forked worker's are found again by its parent)."""

    def __init__(self, budget, state_dir=None, create=True, warn=None):
        self.budget = budget
        self.base = budget_of.base_for(state_dir)
        self.create = create and bool(state_dir)    # make the state directory's spill when absent (not TMPDIR; not
        #                                             for --status and reports: they write nothing)
        self.warn = warn
        self.directory = None
        self.usable = True
        self.problem = None
        self._memory_keys = None      # budget.memory_keys, once needed
        self._warned = set()
        self._serial = 0
        self._owner = os.getpid()
        self._lock = None             # OWNER_FILE, locked while the directory is in use
        self.codec = BYTES            # the counting rules' (tally.Tally sets it)
        self.summaries = False        # rank spilled counts from a summary of their files (a follower)
        try:
            sweep(budget_of.private(self.base, create=False))
        except (OSError, budget_of.Refused):
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def ready(self):
        """Make the directory now (before workers fork: every process's files go in it)."""
        if self.directory is None and self.usable:
            path = None
            try:
                base = budget_of.private(self.base, self.create)
                made = os.path.join(base, '%s%d-%s' % (PREFIX, os.getpid(), binascii.hexlify(os.urandom(6)).decode()))
                os.mkdir(made, 0o700)         # fails if anything is there already
                path = made
                self._lock = os.open(os.path.join(path, OWNER_FILE), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                fcntl.flock(self._lock, fcntl.LOCK_EX)      # held until this process ends, kill -9 included
            except (OSError, budget_of.Refused) as exc:
                if self._lock is not None:
                    os.close(self._lock)
                    self._lock = None
                try:
                    if path is not None:
                        _remove(path)       # what it made of it: a full disk can take a directory, not its lock file
                except OSError:
                    pass
                self.refuse(exc)
                return False
            self.directory = path
        return self.usable

    def refuse(self, exc):
        """No spilling from now on: ``exc`` (OSError, budget.Refused) said why."""
        self.usable = False
        if self.problem is None:
            where = self.base or 'a directory'
            self.problem = '%s: %s' % (where, exc.strerror or exc) if isinstance(exc, OSError) else str(exc)

    def hold(self, counters):
        """Counts past the budget that cannot spill: kept in memory (one warning), and past
        budget.memory_keys the smallest dropped down to half of it (a second warning)."""
        if self._memory_keys is None:
            self._memory_keys = budget_of.memory_keys(self.budget)
        self._say('memory', messages.SPILL_IN_MEMORY % {'budget': self.budget, 'problem': self.problem, 'limit': self._memory_keys})
        if sum(map(len, counters)) > self._memory_keys:
            dropped, floor = budget_of.drop_smallest(counters, self._memory_keys // 2)
            self._say('dropped', messages.SPILL_DROPPED % {'limit': self._memory_keys, 'dropped': dropped, 'floor': floor})

    def _say(self, what, line):
        if what not in self._warned and self.warn is not None and os.getpid() == self._owner:
            self._warned.add(what)
            self.warn(line)

    def close(self):
        if self.directory is not None and os.getpid() == self._owner:     # never a forked worker
            _remove(self.directory)
            os.close(self._lock)
            self.directory = self._lock = None

    def counter(self, low=HASH_LOW, high=HASH_HIGH):
        return SpillCounter(self, low, high)

    def new_file(self, tag):
        if not self.ready():
            raise OSError('no private directory for the counts')
        self._serial += 1
        return os.path.join(self.directory, '%d-%d-%s' % (os.getpid(), self._serial, tag))


def _remove(directory):
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


class SpillCounter(Counter):
    """A Counter whose keys in [low, high) of the hash may partly be in files (``files``:
    one list of paths per partition of the range, FANOUT of them once it spilled)."""

    def __init__(self, session=None, low=HASH_LOW, high=HASH_HIGH):
        super(SpillCounter, self).__init__()
        self.session, self.low, self.high = session, low, high
        self.files = None
        self._own = None              # the partition files this counter appends to (made at its first spill)
        self._summary = None          # (heavy, light) of the files' counts (summary()), until they change

    def __reduce__(self):       # a forked worker sends its counts back pickled: its files too
        return (_rebuild, (dict(self), self.files, self.low, self.high))

    def copy(self):
        twin = SpillCounter(self.session, self.low, self.high)
        dict.update(twin, self)
        twin.files = None if self.files is None else [list(paths) for paths in self.files]
        return twin

    @property
    def codec(self):
        return BYTES if self.session is None else self.session.codec

    @property
    def spilled(self):
        return self.files is not None

    def absorb(self, other):
        """Add ``other`` (a Counter, or a SpillCounter of the same range: its files are
        taken over; one kept in parts by a state file, kept.KeptCounter, read a part at a time)
        into this one."""
        if isinstance(other, SpillCounter) and other.spilled and other.files is None:
            for part in other.parts():
                self.absorb(part)
            return
        if isinstance(other, SpillCounter) and other.files is not None:
            self._summary = None
            if self.files is None:
                self.files = [[] for dummy in range(FANOUT)]
            for mine, theirs in zip(self.files, other.files):
                mine.extend(theirs)
        if other:
            self.update(other.elements())       # counted in C
        if self.session is not None and len(self) > self.session.budget and self.session.ready():
            self.spill()

    def bounds(self):
        step = (self.high - self.low) // FANOUT
        return [self.low + step * i for i in range(1, FANOUT)]

    def spill(self):
        """Write the entries held in memory to the partition files, and forget them. Returns
        whether they were written: when the session cannot (no private directory, a write
        failed: a full disk, a quota), what this spill wrote is taken back, the session refuses
        from then on (Session.refuse) and the entries stay in memory, unchanged."""
        if not self:
            return True
        if self.session is None or not self.session.ready():
            return False
        carried = self._carry_summary()
        fresh = self.files is None
        if fresh:
            self.files = [[] for dummy in range(FANOUT)]
        if self._own is None:
            self._own = [None] * FANOUT
        codec = self.codec
        # Each key's partition, (hash - low) // step, in C-level passes; then the keys dealt
        # to their partitions in one plain loop (a sort by hash took ten times as long).
        keys = list(self)
        step = (self.high - self.low) // FANOUT
        places = map(min, map(floordiv, map(sub, map(codec.hash, keys), repeat(self.low)), repeat(step)), repeat(FANOUT - 1))
        chosen_by_part = [[] for dummy in range(FANOUT)]
        appends = [chosen.append for chosen in chosen_by_part]
        for key, place in zip(keys, places):
            appends[place](key)
        del keys, appends
        once = max(self.values()) == 1         # a churn's keys: once each, joined in one C call
        written = []        # (part, path, its size before, made now): what a failure takes back
        try:
            for part, chosen in enumerate(chosen_by_part):
                if not chosen:
                    continue
                made = self._own[part] is None
                if made:
                    self._own[part] = self.session.new_file('%d' % part)
                    self.files[part].append(self._own[part])
                if once:
                    data = b'\n'.join(codec.encode(chosen)) + b'\n'
                else:
                    counts = list(map(self.get, chosen))
                    data = b'\n'.join(chain.from_iterable(map(repeat, codec.encode(chosen), counts))) + b'\n'
                written.append((part, self._own[part], None, made))
                fd = os.open(self._own[part], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written[-1] = (part, self._own[part], os.fstat(fd).st_size, made)
                    write_all(fd, data)
                finally:
                    os.close(fd)
        except OSError as exc:
            self._take_back(written, fresh)
            self.session.refuse(exc)
            return False
        self.clear()
        if carried is not None:         # the few keys to count exactly, now that they are written
            heavy, light, base, exact = carried
            heavy.update(self.file_counts(exact))
            self._summary = heavy, light, base
        return True

    def _take_back(self, written, fresh):
        """Undo a failed spill's writes: each file back to its size before it (a file it made:
        removed), so that no key is both in a file and in memory."""
        for part, path, size, made in written:
            try:
                if made:
                    os.unlink(path)
                elif size is not None:
                    os.truncate(path, size)
            except OSError:
                pass
            if made:
                self.files[part].remove(path)
                self._own[part] = None
        if fresh:
            self.files = self._own = None

    def _carry_summary(self):
        """Before a spill: the summary (summary()) carried over it without reading the files
        again, as (heavy, light, keys to look up once written), or None (read again when
        asked). A heavy key's count grows by its entry; a key counted once here may now
        have light + 1; one counted more is looked up (at most LOOKUPS of them). After a
        few spills (light at most LIGHT_DRIFT over its last reading) the files are read."""
        summary, self._summary = self._summary, None
        if summary is None:
            return None
        heavy, light, base = summary
        known = [key for key in heavy if key in self]
        heavy = dict(heavy)
        heavy.update(zip(known, map(add, map(heavy.get, known), map(self.get, known))))
        many = list(compress(self.keys(), map(gt, self.values(), repeat(1))))
        exact = [key for key in many if key not in summary[0]] if len(many) <= LOOKUPS + len(known) else None
        if exact is None or len(exact) > LOOKUPS or len(heavy) + len(exact) > max(1, self.session.budget // 4):
            return None
        if len(exact) + len(known) < len(self):     # some key counted once here, not heavy
            light += 1
        if light > base + LIGHT_DRIFT:
            return None
        return heavy, light, base, exact

    def discard(self):
        """Forget the counts and remove their files (those it wrote, and those it took
        over from others: not for a counter whose files a copy() shares). A follower's
        windows move on: their files must not pile up."""
        self.clear()
        self._summary = None
        for path in [path for paths in (self.files or ()) for path in paths]:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.files = self._own = None

    def summary(self):
        """(heavy, light) of the counts in the files alone: ``heavy`` {key: count} of every
        key counted more than ``light`` times there (at most a quarter of the budget of
        them), every other key at most ``light`` times. Read once after each spill: a
        follower that decides twice a second ranks from it (rules.top_records) without
        reading the files each time."""
        if self._summary is None:
            files_only = SpillCounter(self.session, self.low, self.high)
            files_only.files = self.files
            cap = max(1, self.session.budget // 4)
            heavy, light = {}, 1
            for part in files_only.parts():
                keys = list(compress(part.keys(), map(gt, part.values(), repeat(light))))
                heavy.update(zip(keys, map(part.__getitem__, keys)))
                if len(heavy) > cap:
                    light = heapq.nlargest(cap // 2 or 1, heavy.values())[-1]
                    heavy = dict((key, count) for key, count in heavy.items() if count > light)
            self._summary = heavy, light, light      # the last, the light of the last reading
        return self._summary[:2]

    def file_counts(self, keys):
        """{key: count in the files} of a few ``keys``, reading only their partitions."""
        found = dict((key, 0) for key in keys)
        if self.files is None:
            return found
        codec, step, by_part = self.codec, (self.high - self.low) // FANOUT, {}
        for key in keys:
            by_part.setdefault(min(FANOUT - 1, (codec.hash(key) - self.low) // step), []).append(key)
        for part, wanted in by_part.items():
            for path in self.files[part]:
                for keys_read in _read_keys(path, codec):
                    for key in wanted:
                        found[key] += keys_read.count(key)
        return found

    def parts(self):
        """Exact Counters over disjoint sets of keys, together all of them, each of at most
        the budget's distinct keys (plus one read piece's)."""
        if self.files is None:
            yield self
            return
        bounds = [self.low] + self.bounds() + [self.high]
        codec = self.codec
        keys = sorted(self, key=codec.hash)
        hashes = list(map(codec.hash, keys))
        for part in range(FANOUT):
            first, last = bisect_left(hashes, bounds[part]), bisect_left(hashes, bounds[part + 1])
            counter = Counter()
            dict.update(counter, zip(keys[first:last], map(self.__getitem__, keys[first:last])))
            deeper = None
            for path in self.files[part]:
                for keys_read in _read_keys(path, codec):
                    target = counter if deeper is None else deeper
                    target.update(keys_read)
                    if deeper is None and len(counter) > self.session.budget and bounds[part + 1] - bounds[part] > FANOUT:
                        deeper = SpillCounter(self.session, bounds[part], bounds[part + 1])
                        dict.update(deeper, counter)
                        counter = None
                        deeper.spill()
                    elif deeper is not None and len(deeper) > self.session.budget:
                        deeper.spill()
            if deeper is not None:
                try:
                    yield from deeper.parts()
                finally:
                    deeper.discard()        # its files were this reading's only
            elif counter:
                yield counter


def _rebuild(entries, files, low, high):
    counter = SpillCounter(None, low, high)
    dict.update(counter, entries)
    counter.files = files
    return counter


def _read_keys(path, codec):
    """The keys of a partition file, in lists of about READ_BYTES of them."""
    with open(path, 'rb') as handle:
        carry = b''
        while True:
            piece = handle.read(READ_BYTES)
            if not piece:
                return
            piece = carry + piece
            cut = piece.rfind(b'\n')
            carry = piece[cut + 1:]
            if cut != -1:
                yield codec.decode(piece[:cut])


def total(counters):
    """The sum of ``counters`` in a new counter (a spilled one keeps its files)."""
    counters = sorted(counters, key=lambda c: (spilled(c), len(c)), reverse=True)
    first = counters[0].copy()
    for counter in counters[1:]:
        if isinstance(first, SpillCounter):
            first.absorb(counter)
        elif counter:
            first.update(counter.elements())       # counted in C, not a loop over the keys
    return first


def parts(counter):
    """The exact parts of any window's counter (a plain Counter is one part)."""
    if isinstance(counter, SpillCounter):
        return counter.parts()
    return iter((counter,))


def spilled(counter):
    return isinstance(counter, SpillCounter) and counter.spilled
