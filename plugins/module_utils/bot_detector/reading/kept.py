# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a state file (state.py) keeps an hour's counts past count_budget (issue 39): in parts,
each a section of disjoint keys (state.Sections writes and reads one), so that a busy log's
state is kept and its next run reads only the new bytes. Imported by state.py only when an
hour's counts are that many: a cron run of a log within the budget loads none of it.

A ``KeptCounter`` stands for such an hour read from a state file: its parts as they were
written (each parsed only while it is read, one at a time: never all of the hour's counts in
memory) and, in memory, what later reading added. ``parts()`` merges the added counts into
the part that holds their key (a key is in one part at most), and the keys no part holds
into one part more: exact Counters over disjoint keys, which the ranking reads one at a time
(spill.parts), as it reads spilled counts. The spec rules' counts only (bytes keys): precise
rules' counts past count_budget keep no state.
"""

from __future__ import absolute_import, division, print_function

from collections import Counter

from ..base.errors import BotDetectorError
from .spill import SpillCounter, parts as parts_of, spilled
from .tally import largest

__metaclass__ = type


class KeptCounter(SpillCounter):
    """An hour's counts kept in parts by a state file (the module's docstring): ``stored``, the
    parts' sections (bytes, their checksums checked), and the counts added since in memory."""

    def __init__(self, stored, codec, where='state', session=None):
        super(KeptCounter, self).__init__(session)
        self.stored = list(stored)
        self.codec_of_parts = codec     # state.Sections: how a part is written and read
        self.where = where

    def __reduce__(self):
        return (_rebuild_kept, (dict(self), self.stored, self.codec_of_parts, self.where))

    @property
    def spilled(self):
        return True

    def copy(self):
        twin = KeptCounter(self.stored, self.codec_of_parts, self.where, self.session)
        dict.update(twin, self)
        return twin

    def absorb(self, other):
        """Add ``other``: a Counter goes to memory (merged into the parts when they are read);
        another counter spilled to files is read a part at a time."""
        if spilled(other):
            for part in parts_of(other):
                self.absorb(part)
            return
        if other:
            self.update(other.elements())       # counted in C
        if self.session is not None and len(self) > self.session.budget:
            for dummy in self.parts():      # merged into the parts now: memory back under the budget
                pass

    def spill(self):
        """Nothing to write: the parts are in the state file, and what it adds past the budget
        goes into them (absorb); tally.Tally spills its own counters only."""
        return True

    def discard(self):
        """Forget the counts (the state file keeps its own copy: nothing to remove)."""
        self.clear()
        self.stored = []

    def parts(self):
        """The stored parts, each with the added counts of the keys it holds merged into it
        (and written back as a section: the added entries leave memory), then the added keys
        no part holds as one part more. Each step leaves the counter whole, so a reading
        stopped half-way (kept_parts past max_bytes) loses nothing."""
        codec = self.codec_of_parts
        for i, raw in enumerate(list(self.stored)):
            try:
                part = codec.read(raw, '%s part %d' % (self.where, i))
            except codec.error as exc:   # its checksum was right: not a disk's damage
                raise BotDetectorError('the state file is damaged (%s); remove it, the next run starts cold' % exc)
            added = [key for key in self if key in part] if len(self) < len(part) else [key for key in part if key in self]
            if added:
                part.update(dict(zip(added, map(self.get, added))))
                self.stored[i] = codec.write(part)
                for key in added:
                    del self[key]
            yield part
        if self:
            part = Counter()
            dict.update(part, self)
            self.stored.append(codec.write(part))
            self.clear()
            yield part


def _rebuild_kept(entries, stored, codec, where):
    counter = KeptCounter(stored, codec, where)
    dict.update(counter, entries)
    return counter


def kept_parts(counter, codec, top_entries, with_top=True, max_bytes=None):
    """(first entries of a spilled counter in sort -nr order, as tally.largest gives them, or None;
    the sections of its parts): read once, a part at a time. The parts hold disjoint keys, so
    the first entries of all are among each part's first entries. None as soon as the
    sections pass ``max_bytes``."""
    sections, candidates, size = [], Counter(), 0
    for part in parts_of(counter):
        sections.append(codec.write(part))
        size += len(sections[-1])
        if max_bytes is not None and size > max_bytes:
            return None
        if with_top:
            dict.update(candidates, largest(part, top_entries))
    return (largest(candidates, top_entries) if with_top else None), sections
