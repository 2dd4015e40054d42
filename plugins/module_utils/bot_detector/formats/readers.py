# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Access logs in other formats than combined (setting ``log_format``; issue 27).

Each line of a log in format F is turned into the bytes of its combined twin, the line
nginx would have written for the same request with ``log_format combined``: the same
client address, local time, request line, status, bytes, referer and user agent, ``-``
for a field F does not log. The tally counts the twins as it counts a combined log's lines
(Tally.chunk, the one place), so every rule, the precise mode, the state, follow mode and
rotated or gzip files work unchanged. ``combined`` has no reader: its path is untouched.

Only lines that can count are decoded: a line whose raw bytes hold none of the job
prefixes' paths (``Reader.needles``) has a twin without a job prefix (with the campaign profile,
which counts assets and trap hits as well, every line is decoded). Of the others, a
line that does not parse is counted as unparsed (``Reader.unparsed``, the first kept as
an example). json_logs.py holds the JSON formats, text_logs.py Traefik, HAProxy
and W3C; vhost_combined and auto live here.
"""

from __future__ import absolute_import, division, print_function

import os
import re
from itertools import compress, repeat
from operator import contains, not_, truth

from ..base.clock import LocalTime
from ..base.text import NOT_WHITESPACE
from .escaping import probe

__metaclass__ = type

HEAD_BYTES = 64 * 1024      # what auto and w3c read of a log's start

# A needle written as itself in any format (nginx's escape=json escapes none of these characters;
# a JSON line holding an escape is decoded all the same: Reader._with_needles).
_PLAIN_NEEDLE = re.compile(r"^[A-Za-z0-9/._~:%=?+,;!*'()@$ -]+$")


def twin(address, when, request, status, size, referer, agent):
    """The combined line (str, escaped fields) of one request."""
    return '%s - - [%s] "%s" %s %s "%s" "%s"' % (address, when, request, status, size, referer, agent)


def needles_of(job_prefixes, json_escapes, query_apart=False):
    """The texts a raw line must hold one of to have a twin that holds a job prefix: each
    prefix's path ('GET /job/' -> '/job/'), as the formats log the path apart from the
    method (with ``query_apart``, W3C, up to its '?'). None (every line is decoded) when a
    prefix holds a character a format may escape."""
    found = []
    for prefix in job_prefixes:
        path = prefix.split(' ', 1)[1] if ' ' in prefix else prefix
        path = path.split('?', 1)[0] if query_apart else path
        if not path or (json_escapes and _PLAIN_NEEDLE.match(path) is None) or not path.isascii():
            return None
        found.append(path.encode('ascii'))
    return shortest(found)


def shortest(needles):
    """Fewer, shorter needles that every line holding one of ``needles`` holds one of (a
    pass less each): two sharing their first 4 bytes or more become that common start
    ('/job/', '/jobs/' -> '/job'), and one holding another is left out."""
    needles = sorted(set(needles))
    merged = True
    while merged:
        merged = False
        for i, a in enumerate(needles):
            for b in needles[i + 1:]:
                common = len(os.path.commonprefix([a, b]))
                if common >= 4 and (common < len(a) or common < len(b)):
                    needles = sorted(set(needles) - {a, b} | {a[:common]})
                    merged = True
                    break
            if merged:
                break
    return [n for n in needles if not any(m != n and m in n for m in needles)]


class Reader:
    """Turns chunks of one log's lines into their twins. Subclasses define ``parse(line)``:
    the twin (bytes or str) or None for a line that does not parse."""

    name = None
    json = False
    needs_head = False          # bind(head) before reading (reader_for)
    contiguous_parts = False    # forked workers read one part each (w3c: a part's start searches back)
    query_apart = False         # the URI's query logged apart from its path (w3c)
    # Each line's first bracketed timestamp is its time, before any text a client sends, as in the
    # combined format: the seek may probe for it (tally.seek_plan). Elsewhere such a text is a
    # client's (a user agent's), and the log is read whole.
    clf_times = False
    # A line's own time is written as the combined format writes it: a line without the
    # text of a stamp or date the tally counts ('21/Nov/2026:04') cannot be counted (in_windows).
    # b'': every line's; a key: only in a line holding it, where nothing is escaped.
    date_marker = None

    def __init__(self, settings):
        self.settings = settings
        # The campaign profile counts assets and trap hits too, in lines without a job page's path.
        self.needles = None if getattr(settings, 'campaigns', False) else needles_of(settings.job_prefixes, self.json, self.query_apart)
        self.clock = LocalTime()
        self.unparsed = 0
        self.example = None
        self.proxies = None
        self.times = {}             # JSON formats: time values read, and their combined text
        self.stamps = None          # the stamps the tally counts (Tally.chunk sets them)
        self.braced = None          # JSON formats: the chunk, when each of its lines starts with '{'
        self.dated = (None, None, None)     # (the chunk last asked, its end, dates_in's answer)
        if settings.trusted_proxies and self.json:
            from .proxies import TrustedProxies      # only where trusted_proxies is set
            self.proxies = TrustedProxies(settings.trusted_proxies)

    def bind(self, head):
        """This reader for a file starting with ``head`` (w3c reads its #Fields: there)."""
        return self

    def start_at(self, fd, start):
        """Before the lines of ``fd`` from ``start`` (a line start) are read (chunks.count_range)."""

    def stop_at(self, fd, end):
        """After the lines of ``fd`` up to ``end`` were read."""

    def skipped(self, lines):
        """Whole lines of a stream before the first read (a compressed file read on from an
        offset), in order; None first, at the stream's start."""

    def fresh(self):
        """A reader with the same settings and counts at zero (a forked worker's, a file's)."""
        other = self.__class__.__new__(self.__class__)
        other.__dict__.update(self.__dict__)
        other.unparsed, other.example = 0, None
        return other

    def failed(self, line):
        """A line that does not parse: counted, the first kept as the warning's example."""
        self.unparsed += 1
        if self.example is None:
            self.example = line[:300]

    def candidates(self, lines, joined=None):
        """The lines whose twins may hold a job prefix, and a date the tally counts where
        the raw line tells (C-level passes). ``joined``: ``lines`` joined by newlines (the
        chunk), when at hand: the windows go first, and a chunk of other hours (most of a
        day's log) is then told by passes over it, without the needles' pass."""
        if joined is None:
            return self.in_windows(self._with_needles(lines))
        return self._with_needles(self.in_windows(lines, joined))

    def in_windows(self, lines, joined=None):
        """The lines of ``lines`` that may hold a time the tally counts. ``joined``: the
        lines joined by newlines, when the caller has them."""
        marker, stamps = self.date_marker, self.stamps
        if marker is None or not stamps or not lines:
            return lines
        if joined is None:
            joined = b'\n'.join(lines)
        dates = self.dates_in(joined)
        if not dates:
            dated = None
        elif len(dates) == 1:
            dated = list(map(contains, lines, repeat(dates[0])))
        else:
            finder = re.compile(b'|'.join(re.escape(d) for d in dates))
            dated = list(map(truth, map(finder.search, lines)))
        if dated is not None and all(dated):
            return lines
        if not marker:      # every line's time is written as the combined format writes it
            return [] if dated is None else list(compress(lines, dated))
        # Without the date: left out only when its time is surely that key's.
        if dated is None:
            undated, kept = lines, []
        else:
            undated, kept = list(compress(lines, map(not_, dated))), list(compress(lines, dated))
        from . import times      # JSON formats only: the others' runs load none of it
        text = joined if dated is None else b'\n'.join(undated)
        if not times.all_dated_by(marker, text, len(text)):
            kept.extend(compress(undated, map(not_, times.dated_by(marker, undated))))
        return kept

    def dates_in(self, joined, end=None, first=False):
        """The probes (``probe``) of the tally's stamps in ``joined[:end]`` (none in a chunk of
        other hours): of the stamps, or for more than 3 (an incremental run's day of hours) their
        dates. With ``first``, only the first found (a chunk of the windows' hours is then not
        searched to its end for the others)."""
        stamps = self.stamps
        if not stamps:
            return []
        end = len(joined) if end is None else end
        if self.dated[0] is joined and self.dated[1] == end:     # asked again of the same chunk: the same answer
            return self.dated[2]
        dates = set(stamps) if len(stamps) <= 3 else set(stamp[:12] for stamp in stamps)
        probes = sorted(set(map(probe, dates)))
        found = []      # their common start (the hours' date) not there, none is: one pass, not one each
        if len(probes) < 2 or joined.find(os.path.commonprefix(probes), 0, end) != -1:
            for date in probes:
                if joined.find(date, 0, end) != -1:
                    found.append(date)
                    if first:
                        return found
        self.dated = (joined, end, found)
        return found

    def _with_needles(self, lines, joined=None):
        """The lines holding a needle; in JSON, also those holding an escape, which may spell one.
        ``joined``: the lines joined by newlines, when at hand (the chunk)."""
        if self.needles is None or not lines:
            return lines
        joined = b'\n'.join(lines) if joined is None else joined
        present = [n for n in self.needles if n in joined]
        if len(present) > 1:        # several paths: one regex pass
            finder = re.compile(b'|'.join(re.escape(n) for n in present))
            hits = list(map(truth, map(finder.search, lines)))
        else:
            hits = list(map(contains, lines, repeat(present[0]))) if present else [False] * len(lines)
        if self.json and b'\\' in joined:
            hits = list(map(max, hits, map(contains, lines, repeat(b'\\'))))
        return list(compress(lines, hits))

    def translate(self, buf, limit):
        """The twins (joined by newlines) of the whole lines of ``buf[:limit]``, and whether
        a line parsed (the tally's ``stamped``: the log is read)."""
        region = buf[:limit] if limit is not None and limit < len(buf) else buf
        if self.date_marker == b'' and self.stamps and not self.dates_in(region):
            # Every line's time written as combined, and no stamp's text: in_windows keeps no line
            # (a chunk of other hours, most of a day's log), told with no line split off.
            text = NOT_WHITESPACE.search(region)
            if text is None:
                return b'', False
            end = region.find(b'\n', text.start())
            return b'', self.parse(region[region.rfind(b'\n', 0, text.start()) + 1:end if end != -1 else len(region)]) is not None
        lines = region.split(b'\n')
        first = next((line for line in lines if line.strip()), None)
        chosen = self.candidates(lines, region)
        example = self.example
        twins = self.parse_all(chosen)
        if example is None and self.example is not None:    # the first in the log (parse_all takes them in groups)
            self.example = next((line for line in chosen if line.strip() and self.parse(line) is None), self.example)[:300]
        read = bool(twins)
        if not read and first is not None and first not in chosen:
            read = self.parse(first) is not None        # one line tells whether the log is read
        self.shape_check(buf, limit, lines, chosen)
        if twins and not isinstance(twins[0], bytes):
            return '\n'.join(twins).encode('utf-8', 'surrogateescape'), read
        return b'\n'.join(twins), read

    def parse_all(self, lines):
        """The twins of the lines of ``lines`` that parse; each other one not blank is counted."""
        twins = []
        parse = self.parse
        for line in lines:
            made = parse(line)
            if made is None:
                if line.strip():
                    self.failed(line)
            else:
                twins.append(made)
        return twins

    def shape_check(self, buf, limit, lines, chosen=()):
        """Count lines not even shaped as this format (cheap): the JSON formats' lines not
        starting with '{'. Line formats check only the lines they parse."""


class VhostCombined(Reader):
    """Apache's vhost_combined: '%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i" "%{User-Agent}i"'.
    The twin is the line without its first field: done for every line at once in C."""

    name = 'vhost_combined'
    clf_times = True

    def translate(self, buf, limit):
        lines = buf[:limit].split(b'\n') if limit is not None and limit < len(buf) else buf.split(b'\n')
        cut = list(map(bytes.partition, lines, repeat(b' ')))
        twins = [rest for dummy, space, rest in cut if space]
        if len(twins) < len(lines):
            for line, (dummy, space, dummy2) in zip(lines, cut):
                if not space and line.strip():
                    self.failed(line)
        return b'\n'.join(twins), bool(twins)

    def parse(self, line):
        head, space, rest = line.partition(b' ')
        return rest if space else None
