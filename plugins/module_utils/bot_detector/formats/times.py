# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast paths of the JSON formats (issue 27) that read time: the lines of a chunk whose own
time lies in no hour the tally counts, left out before any of them is decoded (TimeFilter; for
nginx's $time_local, all_dated_by and dated_by); and a decoded line's twin at once (plain_twin).
formats/layouts.py turns the lines of a log's usual layout into twins without decoding them.

A line's time is read by one regex over the chunk's lines joined (``TimeFilter.finder``):
only its distinct values, an hour of ISO-8601 text with its zone or a hundred seconds of
an epoch (a few per chunk), are placed in time. When one of them meets no window, the
lines holding it are left out by C-level passes, unless the line could still count or be
read otherwise: it holds a backslash (an escape), a stamp's probe (a referer may), its time
key more than once, a time key that comes first (``before``), or (``flat``) a nested
object. Such lines are kept: the tally decides on them, as on every other line."""

from __future__ import absolute_import, division, print_function

import re
import time
from itertools import compress, repeat
from operator import contains, eq, not_, truth

from ..base.clock import _ISO, hour_stamp, utc_seconds
from ..reading.logfile import stamp_clock
from .escaping import CLF_BYTES, ESCAPE_TEXT, probe

__metaclass__ = type

# Minutes and seconds of an hour's times LocalTime.iso8601 reads; a leap second (:60, the next
# minute's first) is not matched, so its line is kept (the tally decides).
_MINUTE = br'[0-5]\d:[0-5]\d(?:[.,]\d+)?'
_ISO_HOUR = re.compile(br'(\d{4})-(\d{2})-(\d{2})[T ](\d{2})$')


def plain_twin(address, when, method, uri, proto, status, size, referer, agent):
    """A decoded line's twin at once, when its values are as usual: text (status and size
    integers), address and user agent not empty, no referer or one not empty, nothing the
    combined format escapes; else None (the caller builds it field by field, text_field)."""
    # Exactly int: JSON's true and false decode to bool, a subclass of int.
    if (isinstance(address, str) and address and isinstance(method, str) and isinstance(uri, str) and isinstance(proto, str)
            and status.__class__ is int and size.__class__ is int and isinstance(agent, str) and agent
            and (referer is None or (isinstance(referer, str) and referer))
            and ESCAPE_TEXT.search(address + method + uri + proto + agent + (referer or '')) is None):
        return '%s - - [%s] "%s %s %s" %d %d "%s" "%s"' % (address, when, method, uri, proto, status, size, referer or '-', agent)
    return None


def second_of(value):
    """A time value as the key of its second: epoch seconds as an integer, ISO-8601 text
    without its fraction (the twin's time has none); else as it is."""
    if isinstance(value, float) and -1e15 < value < 1e15:
        return int(value)
    if isinstance(value, str) and len(value) > 21 and value[19] == '.' and value[4] == '-' and value[20] in '0123456789':
        zone = value[20:].lstrip('0123456789')
        if zone[:1] in ('Z', '+', '-'):
            return value[:19] + zone
    return value


def time_filter(names, doc):
    """The TimeFilter of the time key a line of the log uses (the first of ``names`` in
    ``doc``), by the form of its value: ISO-8601 text with a zone, or epoch seconds; None
    for $time_local (Reader.date_marker's) or a value of another form."""
    key = next((k for k in names if k in doc), None)
    value = doc.get(key)
    if key is None or key == 'time_local' or not key.isascii() or '"' in key or '\\' in key:
        return None
    before = names[:names.index(key)]
    if isinstance(value, str) and _ISO.match(value) and _ISO.match(value).group(7):
        return TimeFilter(key, 'iso', before)
    if (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
            isinstance(value, str) and value[:1].isdigit() and value.replace('.', '', 1).isdigit()):
        return TimeFilter(key, 'epoch', before)
    return None


class TimeFilter:
    """Leaves out lines whose ``key`` holds a time in no counted hour. ``kind``: 'iso'
    (ISO-8601 text with a zone) or 'epoch' (seconds, a number or its text)."""

    def __init__(self, key, kind, before=(), flat=True):
        head = re.escape(b'"' + key.encode('ascii') + b'":')
        self.kind = kind
        if kind == 'iso':
            self.finder = re.compile(head + br'"(\d{4}-\d{2}-\d{2}[T ]\d{2}):' + _MINUTE + br'(Z|[+-]\d{2}:?\d{2})"')
        else:
            # An epoch's thousands of seconds (17 minutes): a chunk's few, most outside the windows.
            self.finder = re.compile(head + br'"?(\d{1,9})\d{3}(?:\.\d*)?"?[,}]')
        # The key, counted and looked for as a name: JSON allows a blank before its colon.
        self.head, self.pattern_head = b'"' + key.encode('ascii') + b'"', head
        self.before = [b'"' + k.encode('ascii') + b'"' for k in before]
        # all_outside's needles: five bytes are looked for faster than a longer text (CPython's
        # search for six or more takes another loop): the key's name's last five, counted; of each
        # key that comes first, five its own name does not hold, looked for (else all of it).
        self.head_part = self.head[-6:-1] if len(self.head) > 6 else self.head
        self.before_parts = list(dict.fromkeys(next((k[i:i + 5] for i in range(len(k) - 4) if k[i:i + 5] not in self.head), k)
                                               for k in self.before))
        # Five bytes the key's name holds once and each key that comes first holds too (time_iso8601's
        # and time_local's '"time'): counted, one a line tells both (one count, not a search each).
        self.shared_part = next((part for part in (self.head[i:i + 5] for i in range(len(self.head) - 4))
                                 if self.head.count(part) == 1 and all(part in k for k in self.before)), None) if before else None
        self.flat = flat
        self._windows = (None, None)
        self.placed, self.shaped = {}, {}      # items placed in time; all_outside's regexes by items

    def keep(self, lines, stamps, joined=None, braced=None):
        """The lines of ``lines`` that may count under ``stamps`` (a list, in order).
        ``joined``: the lines joined by newlines, when at hand; ``braced``: the same object
        when each line starts with '{'."""
        if not stamps or not lines:
            return lines
        windows, keeper, literals = self._windows_of(stamps)
        if joined is None:
            joined = b'\n'.join(lines)
        found = self.finder.findall(joined)
        out = set(item for item in set(found) if self._outside(item, windows))
        if not out:
            return lines
        heads = list(map(bytes.count, lines, repeat(self.head))) if len(found) == len(lines) else None
        if heads is not None and heads.count(1) == len(lines):
            # Each line holds its key once, and so one match: found[i] is line i's.
            hits = list(map(out.__contains__, found))
        else:
            hits = list(map(truth, map(self._dropper(out).search, lines)))
        if not any(hits):
            return lines
        if all(hits):       # a chunk of other hours: its passes over the lines as they are
            kept, outside = [], lines
        else:
            kept, outside, heads = list(compress(lines, map(not_, hits))), list(compress(lines, hits)), None
            joined, braced = b'\n'.join(outside), None
        if any(literal in joined for literal in literals):
            back = list(map(truth, map(keeper.search, outside)))
        else:
            back = [False] * len(outside)
        once = list(map(eq, heads or map(bytes.count, outside, repeat(self.head)), repeat(1)))
        # Flat (no nested object): one '{' each; when each line starts with one, one count tells.
        if self.flat and not (joined is braced and len(joined) - len(joined.replace(b'{', b'')) == len(outside)):
            once = list(map(min, once, map(eq, map(bytes.count, outside, repeat(b'{')), repeat(1))))
        kept.extend(compress(outside, map(max, back, map(not_, once))))
        return kept

    def _windows_of(self, stamps):
        """(the instants of ``stamps``, a regex of the texts that keep a line, those texts), cached."""
        key = frozenset(stamps)
        if self._windows[0] != key:
            texts = sorted(set(map(probe, key)))
            literals = [b'\\'] + texts + self.before
            self._windows = (key, (instants_of(key), re.compile(b'|'.join(re.escape(s) for s in literals)), literals))
            self.placed, self.shaped = {}, {}
        return self._windows[1]

    def sampled(self, text, end, stamps):
        """The times of a few lines of ``text[:end]`` (the first, the last and seven between; None
        when one has none) and whether each is in no counted hour: (frozenset, bool)."""
        found = []
        for at in range(0, end, max(1, end // 8)):
            start = text.rfind(b'\n', 0, at) + 1 if at else 0
            stop = text.find(b'\n', at, end)
            found.append(self.finder.search(text, start, end if stop == -1 else stop))
        found.append(self.finder.search(text, text.rfind(b'\n', 0, end) + 1, end))
        if None in found:
            return None
        items = frozenset(match.groups() if self.kind == 'iso' else match.group(1) for match in found)
        windows = self._windows_of(stamps)[0]
        return items, all(self._outside(item, windows) for item in items)

    def all_outside(self, text, end, stamps, sampled=None):
        """Whether keep leaves out every line of ``text[:end]`` (whole lines, holding no probe of
        ``stamps``: the caller's search), told by passes over the text as it is (a chunk of other
        hours, most of a day's log): the times ``sampled`` (its answer, or asked here) in no
        counted hour; no escape, no key that comes first; one '{' a line (when flat), its first
        byte, and the key once; each line's time one of them (a search for a newline not
        followed by the first line's bytes before the key, the key and one of those times, none
        found; else a regex of those times, the rest of the line and the next line's '{': as many
        matches as newlines). Else False: keep tells line by line."""
        sampled = self.sampled(text, end, stamps) if sampled is None else sampled
        if sampled is None or not sampled[1] or not text.startswith(b'{') or text.find(b'\\', 0, end) != -1 or (
                self.shared_part is None and any(text.find(k, 0, end) != -1 for k in self.before_parts)):
            return False
        lines = len(text) - len(text.replace(b'\n', b'')) - text.count(b'\n', end) + 1
        if (self.flat and len(text) - len(text.replace(b'{', b'')) - text.count(b'{', end) != lines) or (
                text.count(self.shared_part or self.head_part, 0, end) != lines):
            return False
        # The key where the first line has it, after the same few bytes of keys and values: '{' (the
        # key first), Caddy's '{"level":"info",': a search for a line that does not start with them,
        # the key and one of those times (no match a line), not a match a line. The same bytes from
        # a line's start are the same tokens, so the key is where it is on the first line (as the
        # match a line, nested only where the lines may nest: not flat). Else (an address before
        # the key, say) the match a line.
        newline = text.find(b'\n', 0, end)
        at = text.find(self.head + b':', 0, end if newline == -1 else newline)
        if 0 < at <= 256 and self._shaped(sampled[0], text[:at]).search(text, 0, end) is None:
            return True
        return len(self._shaped(sampled[0], None).findall(text, 0, end)) == lines - 1

    def _shaped(self, items, lead):
        """all_outside's regex of the key with a time of ``items``: of a line that does not start
        with ``lead``, the key and such a time; without ``lead``, the key so, the rest of its line
        and the next line's '{' (cached)."""
        key = (items, lead)
        if key not in self.shaped:
            if len(self.shaped) > 64:
                self.shaped.clear()
            dropper = self._dropper(items).pattern
            self.shaped[key] = re.compile(b'\\n(?!' + re.escape(lead) + dropper + b')' if lead else dropper + br'()[^\n]*\n\{')
        return self.shaped[key]

    def _dropper(self, out):
        """A regex matching the key with one of the values of ``out``."""
        if self.kind == 'iso':
            return re.compile(self.pattern_head + b'"(?:' + b'|'.join(
                re.escape(hour) + b':' + _MINUTE + re.escape(zone) for hour, zone in out) + b')"')
        return re.compile(self.pattern_head + b'"?(?:' + b'|'.join(re.escape(s) for s in out) + br')\d{3}(?:\.\d*)?"?[,}]')

    def _outside(self, item, windows):
        """Whether every instant ``item`` stands for meets no window (cached)."""
        found = self.placed.get(item)
        if found is None:
            span = self._span(item)
            found = span is not None and not any(start < span[1] and span[0] < end for start, end in windows)
            if len(self.placed) > 4096:
                self.placed.clear()
            self.placed[item] = found
        return found

    def _span(self, item):
        """[start, end) epoch seconds of the times ``item`` stands for; None when it is no time."""
        if self.kind != 'iso':       # and a second more: a fraction may round up into it
            start = int(item) * 1000
            return start, start + 1001
        hour, zone = item
        match = _ISO_HOUR.match(hour)
        if match is None:
            return None
        year, month, day, hour = (int(g) for g in match.groups())
        if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24):
            return None
        offset = 0 if zone == b'Z' else (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60) * (-1 if zone[:1] == b'-' else 1)
        start = utc_seconds(year, month, day, hour, 0, 0) - offset
        return start, start + 3600


def instants_of(stamps):
    """[(start, end)] epoch seconds whose local hour stamp is one of ``stamps``: each found
    within 15 hours of the stamp read as UTC in steps of 15 minutes, where the zone's offsets
    there are multiples of them (every zone's today); else of a minute, or of a second (a
    POSIX TZ such as XXX-0:07, an old date's local mean time). Merged."""
    found = []
    for stamp in stamps:
        text = stamp.decode('ascii')
        center = stamp_clock(stamp)
        offsets = set(time.localtime(at).tm_gmtoff for at in range(center - 15 * 3600, center + 15 * 3600, 900))
        step = next(step for step in (900, 60, 1) if not any(offset % step for offset in offsets))
        for at in range(center - 15 * 3600, center + 15 * 3600, step):
            if hour_stamp(at) == text:
                found.append((at, at + step))
    merged = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


_UNSHAPED = {}


def _unshaped(marker):
    """A regex of the key of ``marker`` ('"time_local":"') not followed by its colon and a
    combined time in quotes: a blank before the colon, another type of value, its name a value."""
    if marker not in _UNSHAPED:
        _UNSHAPED[marker] = re.compile(re.escape(marker[:-2]) + b'(?!:"' + CLF_BYTES + b'")')
    return _UNSHAPED[marker]


_SHAPED_LINES = {}


def _shaped_lines(marker):
    """Regexes of lines whose key ``marker`` holds a combined time in quotes: (a newline whose
    line does not end with it and '}', or whose next line does not start with '{': looked for,
    the key last on each line, as nginx's usual layout has it; the same of a line not starting
    with '{' and it: the key first; and the key so, the rest of its line and the next line's '{':
    one match a line at most, the key anywhere)."""
    if marker not in _SHAPED_LINES:
        shaped = re.escape(marker) + CLF_BYTES + b'"'
        _SHAPED_LINES[marker] = (re.compile(br'\n(?:(?<!' + shaped + br'\}\n)|(?!\{))'),
                                 re.compile(br'\n(?!\{' + shaped + b')'), re.compile(shaped + br'()[^\n]*\n\{'))
    return _SHAPED_LINES[marker]


def all_dated_by(marker, text, end):
    """Whether dated_by holds for every line of ``text[:end]`` (whole lines; a chunk of other
    hours, most of a day's log), told by passes over the text as it is, no line split off: no
    escape; one '{' a line, its first byte, and one part of the key's name (``marker[4:9]``,
    its '_'): the key nowhere else; the last line dated_by, and each other its key with a
    combined time (_shaped_lines: at its end, or its start, as the first line has it, a search
    for a line where it is not, no match a line; else as many matches as newlines). Counts of
    one byte by replace (memchr), several times faster than bytes.count. False: some line may
    not be (dated_by tells which)."""
    if not text.startswith(b'{') or text.find(b'\\', 0, end) != -1:
        return False
    lines = len(text) - len(text.replace(b'\n', b'')) - text.count(b'\n', end) + 1
    last = text.rfind(b'\n', 0, end) + 1
    if not (len(text) - len(text.replace(b'{', b'')) - text.count(b'{', end) == lines
            and text.count(marker[4:9], 0, end) == lines and dated_by(marker, [text[last:end]])[0]):
        return False
    at_end, at_start, anywhere = _shaped_lines(marker)
    if text.startswith(b'{' + marker):
        first = text.find(b'\n', 0, end)
        return at_start.search(b'\n' + text[:end if first == -1 else first]) is None and at_start.search(text, 0, end) is None
    return at_end.search(text, 0, end) is None or len(anywhere.findall(text, 0, end)) == lines - 1


def dated_by(marker, lines):
    """Whether each line's time is surely a time after ``marker`` (a JSON key) as the combined
    format writes it: no escape, no nested object, the key there, and each time it is, before
    such a time (the line's is the last: none holds a date of the windows, so none can count)."""
    unshaped = _unshaped(marker)
    return list(map(all, zip(map(not_, map(contains, lines, repeat(b'\\'))), map(contains, lines, repeat(marker)),
                             map(not_, map(unshaped.search, lines)),
                             map(eq, map(bytes.count, lines, repeat(b'{')), repeat(1)))))
