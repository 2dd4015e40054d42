# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The campaign profile's counting (setting ``campaigns``; issue 45): in the same pass as the
rules' line filter, and into the same counter, what a log shows of an address's behaviour.

Keys of several kinds side by side in one Counter per window (one ``count_budget``, one
spill, one state): an address (the rules' key, counted exactly as without the profile) and,
for each address, its signals, each key a tab, a letter and the address (a log's first field
never holds a tab, as awk splits fields at blanks and tabs, so no address is ever taken for a
signal; a state file holds keys apart by spaces):

- ``b'\ta'+address``: requests for assets (CSS, JS, images, fonts): what a browser loads after a page;
- ``b'\tr'+address``: job-page requests (lines the rules count) with a referer;
- ``b'\tt'+address``: requests for a trap path (``trap_paths``), less those a bot or the
  search engine names (the rules never count those).

Networks and the distinct addresses of a network are not counted here: they are sums over
the address keys (decision/campaigns.py), so the one pass holds one key an address.
"""

from __future__ import absolute_import, division, print_function

import re
from itertools import compress, repeat
from operator import itemgetter

__metaclass__ = type

SIGNAL = b'\t'          # the first byte of a signal's key; an address's never is
ASSET, REFERRED, TRAP = b'\ta', b'\tr', b'\tt'
_ASSET = re.compile(br'"(?:GET|HEAD) [^ "?]*\.(?:css|js|mjs|png|jpe?g|gif|svg|webp|avif|ico|woff2?)[ ?]')
_REFERER = re.compile(br'" [0-9]{3} (?:[0-9]+|-) "[^-"]')      # combined: status, size, then a referer not "-"


def trap_pattern(trap_paths):
    """A regex finding a request line for one of ``trap_paths`` (any method), or None."""
    if not trap_paths:
        return None
    paths = b'|'.join(re.escape(path) for path in _trap_bytes(trap_paths))
    return re.compile(br'"[A-Z]+ (?:' + paths + br')')


def _trap_bytes(trap_paths):
    return [path.encode('utf-8') if not isinstance(path, bytes) else path for path in trap_paths]


class CampaignFilter:
    """The rules' line filter (``base``) and the signals, behind the same interface
    (tally.Tally calls ``kept``, ``count_kept`` and ``count_into``)."""

    def __init__(self, base, trap_paths=(), search_engine=b'Google'):
        self.base = base
        self._traps = trap_pattern(trap_paths)
        self._trap_paths = [path for path in _trap_bytes(trap_paths or ()) if b'\n' not in path]   # on no line
        self._search_engine = search_engine if isinstance(search_engine, bytes) else search_engine.encode('utf-8')
        # A line longer than a chunk is judged by its stand-in (chunks.LongLine): its address
        # key as the rules count it; its signals are not counted.
        self.needles = getattr(base, 'needles', None)
        self._whole = None     # (lines, signal lines) that the last ``kept`` gave

    @property
    def spillable(self):
        return getattr(self.base, 'spillable', False)

    @property
    def spill_codec(self):
        return getattr(self.base, 'spill_codec', None)

    def _signal_lines(self, lines, kept):
        """Each signal line as its key's two bytes followed by the line (ASSET + line): the
        lines of assets and traps among ``lines``, the kept job lines with a referer."""
        marked = list(map(ASSET.__add__, compress(lines, map(_ASSET.search, lines))))
        marked.extend(map(REFERRED.__add__, compress(kept, map(_REFERER.search, kept))))
        if self._traps is not None:
            candidates = self._trap_candidates(lines)
            hits = list(compress(candidates, map(self._traps.search, candidates)))
            marked.extend(TRAP + line for line in hits
                          if b'bot' not in line.lower() and self._search_engine not in line)
        return marked

    def _trap_candidates(self, lines):
        """The lines holding a trap path (what the trap regex needs in a line to match), found
        by bytes.find in the lines joined: a trap is on few lines, and a regex pass over all
        of them cost as much as the rules' filter."""
        joined = b'\n'.join(lines)
        found = []
        find, rfind = joined.find, joined.rfind
        for path in self._trap_paths:
            pos = find(path)
            while pos != -1:
                end = find(b'\n', pos + len(path))
                end = len(joined) if end == -1 else end
                found.append((rfind(b'\n', 0, pos) + 1, end))
                pos = find(path, end)
        if len(self._trap_paths) > 1:     # a line holding two paths is one line, in the lines' order
            found = sorted(set(found))
        return [joined[start:end] for start, end in found]

    def kept(self, lines):
        """(lines to count: the rules' kept lines, then the signal lines; joined; how to cut
        the rules' first fields)."""
        kept, joined, first_fields = self.base.kept(lines)
        marked = self._signal_lines(lines, kept)
        # All of them (a time-ordered log's stamp selects every line) hold as many signal lines
        # as were marked, when no rules' line starts as one does (a tab).
        self._whole = None if joined.startswith(SIGNAL) or b'\n' + SIGNAL in joined else (
            len(kept) + len(marked), len(marked))
        if marked:
            kept = kept + marked
            joined = joined + b'\n' + b'\n'.join(marked) if joined else b'\n'.join(marked)
        return kept, joined, first_fields

    def count_kept(self, lines, counter, first_fields):
        """Count ``lines``, some of those ``kept`` gave, in its order: the rules' own first (by
        their count), then the signal lines (by their keys), those that start with the tab."""
        if self._whole is not None and len(lines) == self._whole[0]:
            signals = self._whole[1]
        else:
            signals = sum(map(bytes.startswith, lines, repeat(SIGNAL)))
        if signals:
            counter.update(signal_keys(lines[len(lines) - signals:]))
            lines = lines[:len(lines) - signals]
        self.base.count_kept(lines, counter, first_fields)

    def count_stand_in(self, lines, counter):
        """A long line's stand-in (chunks.LongLine): its address key only (the keys counted)."""
        return self.base.count_into(lines, counter)

    def count_into(self, lines, counter):
        """Count the rules' keys of ``lines`` and their signals."""
        kept = self.base.keep_all(lines) if hasattr(self.base, 'keep_all') else self.base.kept(lines)[0]
        self.base.count_into(lines, counter)
        counter.update(signal_keys(self._signal_lines(lines, kept)))


# Each match a whole marked line: its two bytes, the first field; no '^' (tried at every byte).
_SIGNAL_KEY = re.compile(b'(' + SIGNAL + b'[a-z])[ ' + SIGNAL + b']*([^ ' + SIGNAL + b'\n]*)[^\n]*')


def signal_keys(marked):
    """The keys of marked lines: their two bytes and the line's first field (awk's: up to a
    blank or a tab). Each is the line up to its first space unless a field starts with a
    blank or holds a tab besides the marker's (one search of the keys joined tells): then
    by one regex pass over the lines joined."""
    if not marked:
        return []
    keys = list(map(itemgetter(0), map(bytes.split, marked, repeat(b' '), repeat(1))))
    joined = b''.join(keys)
    if len(joined) - len(joined.replace(SIGNAL, b'')) == len(keys) and min(map(len, keys)) > len(ASSET):
        return keys
    return list(map(b''.join, _SIGNAL_KEY.findall(b'\n'.join(marked))))
