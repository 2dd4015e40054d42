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

- ``b'\ta'+address``: requests for assets (CSS, JS, images, fonts): what a browser loads after a
  page; a line whose request, the quoted field after the time's ``]``, is ``GET`` or ``HEAD`` of
  a path ending in an asset's extension (before a blank, the query, or the request's end: a
  request line without its protocol, as a W3C log's twin has);
- ``b'\tr'+address``: job-page requests (lines the rules count) with a referer;
- ``b'\tt'+address``: requests for a trap path (``trap_paths``), less those a bot or the
  search engine names (the rules never count those);
- ``b'\tw'+address+b'/'+job id``: job-page requests with a referer, by the job id in their path
  (the first run of digits after the job prefix): the ids an address looked at as a browser
  would, so that one walking ids in order while faking assets and referers shows (decision/
  campaigns.py: ``campaign_walk_ids``).

Networks and the distinct addresses of a network are not counted here: they are sums over
the address keys (decision/campaigns.py), so the one pass holds one key an address. ``split``
takes a window's counts apart again, into the address keys and each signal's.
"""

from __future__ import absolute_import, division, print_function

import re
from collections import Counter
from itertools import compress, repeat
from operator import itemgetter, methodcaller, not_

from .spill import parts

__metaclass__ = type

SIGNAL = b'\t'          # the first byte of a signal's key; an address's never is
ASSET, REFERRED, TRAP, WALK = b'\ta', b'\tr', b'\tt', b'\tw'
# Matched where the request starts, after the time field's "] ", not searched for in the line: no
# user agent, referer or user name holding such a text is taken for the request.
_REQUEST_AT = b'] "'
_ASSET = re.compile(br'\] "(?:GET|HEAD) [^ "?]*\.(?:css|js|mjs|png|jpe?g|gif|svg|webp|avif|ico|woff2?)[ ?"]')
_REFERER = re.compile(br'" [0-9]{3} (?:[0-9]+|-) "[^-"]')      # combined: status, size, then a referer not "-"


def trap_pattern(trap_paths):
    """A regex finding a request line for one of ``trap_paths`` (any method), or None."""
    if not trap_paths:
        return None
    paths = b'|'.join(re.escape(path) for path in _trap_bytes(trap_paths))
    return re.compile(br'"[A-Z]+ (?:' + paths + br')')


def job_id_pattern(job_prefixes):
    """A regex whose group 1 is the job id of a job-page request line: the first run of digits
    in its path after a job prefix (before a blank, a quote or the query)."""
    prefixes = b'|'.join(re.escape(prefix.encode('utf-8') if not isinstance(prefix, bytes) else prefix)
                         for prefix in job_prefixes)
    return re.compile(b'(?:' + prefixes + b')[^ "?0-9]*([0-9]+)')


def _trap_bytes(trap_paths):
    return [path.encode('utf-8') if not isinstance(path, bytes) else path for path in trap_paths]


class CampaignFilter:
    """The rules' line filter (``base``) and the signals, behind the same interface
    (tally.Tally calls ``kept``, ``count_kept``, ``signal_groups`` and ``count_into``)."""

    def __init__(self, base, trap_paths=(), search_engine=b'Google', job_prefixes=()):
        self.base = base
        self._job_id = job_id_pattern(job_prefixes) if job_prefixes else None
        self._traps = trap_pattern(trap_paths)
        self._trap_paths = [path for path in _trap_bytes(trap_paths or ()) if b'\n' not in path]   # on no line
        self._search_engine = search_engine if isinstance(search_engine, bytes) else search_engine.encode('utf-8')
        # A line longer than a chunk is judged by its stand-in (chunks.LongLine): its address
        # key as the rules count it; its signals are not counted.
        self.needles = getattr(base, 'needles', None)
        self._last = ()

    @property
    def spillable(self):
        return getattr(self.base, 'spillable', False)

    @property
    def spill_codec(self):
        return getattr(self.base, 'spill_codec', None)

    def _signal_lines(self, lines, text=None, limit=None):
        """[(signal, its lines)]: the lines of assets and traps among ``lines`` (``text[:limit]``:
        them joined, when the caller has it); the lines themselves, not copies (the tally
        selects each stamp's among them)."""
        groups = [(ASSET, list(compress(lines, map(_ASSET.match, lines, map(bytes.find, lines, repeat(_REQUEST_AT))))))]
        if self._traps is not None:
            candidates = self._trap_candidates(b'\n'.join(lines) if text is None else text, limit)
            hits = compress(candidates, map(self._traps.search, candidates))
            groups.append((TRAP, [line for line in hits if b'bot' not in line.lower() and self._search_engine not in line]))
        return [(signal, found) for signal, found in groups if found]

    def _trap_candidates(self, joined, limit=None):
        """The lines of ``joined[:limit]`` holding a trap path (what the trap regex needs in a
        line to match), found by bytes.find: a trap is on few lines, and a regex pass over
        all of them cost as much as the rules' filter."""
        limit = len(joined) if limit is None else limit
        found = []
        find, rfind = joined.find, joined.rfind
        for path in self._trap_paths:
            pos = find(path, 0, limit)
            while pos != -1:
                end = find(b'\n', pos + len(path), limit)
                end = limit if end == -1 else end
                found.append((rfind(b'\n', 0, pos) + 1, end))
                pos = find(path, end, limit)
        if len(self._trap_paths) > 1:     # a line holding two paths is one line, in the lines' order
            found = sorted(set(found))
        return [joined[start:end] for start, end in found]

    def kept(self, lines):
        """The rules' (lines to count, joined, how to cut their first fields); the signal
        lines among ``lines`` wait for ``signal_groups``."""
        kept, joined, first_fields = self.base.kept(lines)
        self._last = lines
        return kept, joined, first_fields

    def count_kept(self, lines, counter, first_fields):
        """The rules' count of ``lines`` (some that ``kept`` kept) and their referers' signals."""
        return self._referred(lines, self.base.count_kept(lines, counter, first_fields), counter)

    def _referred(self, kept, keys, counter):
        """Count the signals of the job lines ``kept`` (the rules' ``keys``: their first fields)
        that came with a referer: each under its key, and its job id (WALK). Returns all keys."""
        if not keys:
            return keys
        found = list(map(_REFERER.search, kept))
        referred = list(compress(keys, found))
        more = _count_under(REFERRED, referred, counter)
        if referred and self._job_id is not None:
            ids = list(map(self._job_id.search, compress(kept, found)))
            walks = list(map(b''.join, zip(repeat(WALK), compress(referred, ids), repeat(b'/'),
                                           map(methodcaller('group', 1), filter(None, ids)))))
            counter.update(walks)
            more.extend(walks)
        return keys + more

    def signal_groups(self, text, limit):
        """[(lines, count(lines, counter, ignored))]: the asset and trap lines among the lines
        of the last ``kept`` (``text[:limit]``: them joined), a group a signal, each counted by
        its own key (the signal and the line's first field)."""
        lines, self._last = self._last, ()
        return [(found, _counter_of(signal)) for signal, found in self._signal_lines(lines, text, limit)]

    def count_stand_in(self, lines, counter):
        """A long line's stand-in (chunks.LongLine): its address key only (the keys counted)."""
        return self.base.count_into(lines, counter)

    def count_into(self, lines, counter):
        """Count the rules' keys of ``lines`` and their signals."""
        kept = self.base.keep_all(lines) if hasattr(self.base, 'keep_all') else self.base.kept(lines)[0]
        keys = self._referred(kept, self.base.count_into(lines, counter), counter)
        for signal, found in self._signal_lines(lines):
            keys = (keys or []) + _counter_of(signal)(found, counter)
        return keys


def _counter_of(signal):
    def count(lines, counter, dummy=None):
        """Count ``lines`` under ``signal``'s keys; the keys counted (Tally notes them)."""
        return _count_under(signal, first_fields(lines), counter)
    return count


def _count_under(signal, keys, counter):
    """Count ``keys`` (addresses, one a line) under ``signal``'s keys; those keys, each once.
    An address has many lines (a page's assets): counted first, then marked once each."""
    per_address = Counter(keys)
    marked = dict(zip(map(signal.__add__, per_address), per_address.values()))
    counter.update(marked)
    return list(marked)


_FIELD = re.compile(b'[^ \t]+')    # awk's first field: the first run of characters other than blanks


def first_fields(lines):
    """awk's first field of each line: the line up to its first space, unless a field
    starts with a blank or holds a tab (one search of them joined tells), then by a regex."""
    keys = list(map(itemgetter(0), map(bytes.partition, lines, repeat(b' '))))     # as rules._first_fields_at_space
    if keys and (b'\t' in b''.join(keys) or not min(map(len, keys))):
        return [match.group(0) if match else b'' for match in map(_FIELD.search, lines)]
    return keys


def split(counter):
    """(Counter of the address keys, {signal: {address: count}}) of one window's counts: by
    C-level passes over each part's keys (tens of thousands a window), its parts disjoint."""
    addresses, signals = Counter(), dict((signal, {}) for signal in (ASSET, REFERRED, TRAP, WALK))
    for part in parts(counter):
        keys = list(part)
        # By each key's first and second bytes, integers (no new objects); by slices when a key is
        # too short for that (b'', or the signal's byte alone: never in a real count).
        short = b'' in part or SIGNAL in part
        marked = list(map(bytes.startswith, keys, repeat(SIGNAL)) if short else map(_TAB, map(itemgetter(0), keys)))
        dict.update(addresses, zip(compress(keys, map(not_, marked)), compress(part.values(), map(not_, marked))))
        if not any(marked):
            continue
        keys, counts = list(compress(keys, marked)), list(compress(part.values(), marked))
        kinds = list(map(itemgetter(slice(0, 2) if short else 1), keys))
        for kind in set(kinds):
            mine = list(map(kind.__eq__, kinds))
            dict.update(signals.setdefault(kind if short else SIGNAL + bytes(bytearray([kind])), {}),
                        zip(map(itemgetter(slice(2, None)), compress(keys, mine)), compress(counts, mine)))
    return addresses, signals


_TAB = SIGNAL[0].__eq__      # a key's first byte is the signal's
