# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a follower with a fleet store hands over (issue 43): the keys counted since the last
hand-over (``Changed``, noted where the counts are made: tally.py, from the keys the rules'
count functions return), and a window's counts as they were at the hand-over (``Snapshot``),
read later by the push thread. Neither holds a copy of every count: ``Changed`` holds at most
its bound of keys (a share of count_budget; past it, a window is handed whole, which the
store's absolute counts make safe), and a spilled window's snapshot is its entries in memory
(within count_budget) and the length of each of its spill files (append-only while the window
is in play), read up to that length.
"""

from __future__ import absolute_import, division, print_function

import os
from collections import Counter
from itertools import compress

from .spill import FANOUT, SpillCounter

__metaclass__ = type

# A spill file is read by the push thread in pieces this small: each C call on one (a split, a
# count) holds the interpreter under a millisecond, so the follower's decisions never wait long.
PIECE = 64 * 1024


def addresses_only(pairs):
    """The (key, count) ``pairs`` whose key is an address (bytes), sorted: the precise rules'
    crawler claims, (address, crawler) keys until the host verified them, are decided by each
    host alone (only it verifies them), never summed by the fleet."""
    return sorted(pair for pair in pairs if isinstance(pair[0], bytes))


class Changed:
    """Per window stamp, the keys counted since they were last taken (``take``), at most
    ``bound`` keys in all: past it, the largest sets are dropped and their stamps noted as
    changed whole (``take`` answers None for them)."""

    def __init__(self, bound):
        self.bound = max(1, bound)
        self.keys = {}          # stamp: set of keys
        self.whole = set()      # stamps changed past the bound: handed whole
        self.held = 0

    def note(self, stamp, keys):
        """``keys`` counted under ``stamp`` (None: keys not known, the window changed whole)."""
        if keys is None:
            self.held -= len(self.keys.pop(stamp, ()))
            self.whole.add(stamp)
            return
        if not keys or stamp in self.whole:
            return
        found = self.keys.get(stamp)
        if found is None:
            found = self.keys[stamp] = set()
        before = len(found)
        found.update(keys)      # in C
        self.held += len(found) - before
        if self.held > self.bound:
            for largest in sorted(self.keys, key=lambda s: len(self.keys[s]), reverse=True):
                self.held -= len(self.keys.pop(largest))
                self.whole.add(largest)
                if self.held <= self.bound // 2:
                    break

    def take(self, stamp):
        """The keys of ``stamp`` counted since the last take (a set), or None: changed whole."""
        if stamp in self.whole:
            self.whole.discard(stamp)
            self.held -= len(self.keys.pop(stamp, ()))
            return None
        found = self.keys.pop(stamp, set())
        self.held -= len(found)
        return found

    def keep_only(self, stamps):
        """Forget the stamps not in ``stamps`` (hours out of play, hours not yet windows)."""
        for stamp in [s for s in self.keys if s not in stamps]:
            self.held -= len(self.keys.pop(stamp))
        self.whole &= set(stamps)


class Snapshot:
    """A window's counts at the hand-over: of ``keys`` (a set), or of every key (``keys`` None,
    ``whole``). ``batches()`` yields its (key, absolute count) pairs, sorted, a part at a time."""

    def __init__(self, counter, keys=None):
        self.keys = keys
        self.whole = keys is None
        self.files = self.low = self.high = self.codec = None
        if isinstance(counter, SpillCounter) and counter.spilled:
            self.low, self.high, self.codec = counter.low, counter.high, counter.codec
            self.files = [[(path, os.path.getsize(path)) for path in paths] for paths in counter.files]
        if keys is None:
            self.memory = dict(counter)        # within count_budget: the rest is in the files
        else:
            held = [key for key in keys if key in counter] if self.files is not None else list(keys)
            self.memory = dict(zip(held, map(counter.__getitem__, held)))      # in C

    def __len__(self):
        return len(self.memory) if self.keys is None else len(self.keys)

    def batches(self):
        """Lists of (key, count), sorted; a spilled window's a partition at a time (its files
        read up to their length at the hand-over). Raises OSError when a file is gone (the
        window left play)."""
        if self.files is None:
            yield addresses_only(self.memory.items())
            return
        step = (self.high - self.low) // FANOUT
        if self.keys is not None:       # the partitions of these keys only
            wanted = self.keys
            found = Counter(self.memory)
            for part in sorted(set(min(FANOUT - 1, (self.codec.hash(key) - self.low) // step) for key in wanted)):
                for path, size in self.files[part]:
                    for keys_read in _read_upto(path, size, self.codec):
                        found.update(compress(keys_read, map(wanted.__contains__, keys_read)))
            yield addresses_only(found.items())
            return
        by_part = [[] for dummy in range(FANOUT)]
        for key in self.memory:
            by_part[min(FANOUT - 1, (self.codec.hash(key) - self.low) // step)].append(key)
        sent = False
        for part, paths in enumerate(self.files):
            found = Counter(dict((key, self.memory[key]) for key in by_part[part]))
            by_part[part] = None
            for path, size in paths:
                for keys_read in _read_upto(path, size, self.codec):
                    found.update(keys_read)
            if found or (part == FANOUT - 1 and not sent):      # at least one batch: a push of the window
                sent = True
                yield addresses_only(found.items())


def _read_upto(path, size, codec):
    """The keys in the first ``size`` bytes of a spill file (whole lines), a piece at a time."""
    with open(path, 'rb') as handle:
        carry, left = b'', size
        while left > 0:
            piece = handle.read(min(PIECE, left))
            if not piece:
                break
            left -= len(piece)
            piece = carry + piece
            cut = piece.rfind(b'\n')
            carry = piece[cut + 1:]
            if cut != -1:
                yield codec.decode(piece[:cut])
