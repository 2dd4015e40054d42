# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The line formats besides vhost_combined (readers.py): Traefik's common log format,
HAProxy's ``option httplog`` and the W3C extended format IIS writes."""

from __future__ import absolute_import, division, print_function

import os
import re
from itertools import compress, repeat
from operator import add, eq, itemgetter, not_, truth

from ..base.clock import utc_seconds
from ..reading import chunks
from ..values.log_formats import QUOTED, TIME
from .escaping import escaped
from .layouts import PLAIN, plain_lines
from .readers import HEAD_BYTES, Reader
from .times import instants_of

__metaclass__ = type

Match = type(re.match(b'', b''))


# A Traefik line whose user has no blank, as most: the twin is its combined part.
_TRAEFIK_USUAL = re.compile(br'^(\S+ \S+ \S+ \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [-+]\d{4}\] "[^"]*" \S+ \S+ "[^"]*" "[^"]*")'
                            br'(?: \d+ "[^"]*" "[^"]*" \d+ms)?\s*$')
# Any Traefik line: the user is the client's, written as sent (blanks, brackets, quotes), so its
# time is the last one followed by what Traefik writes after it (the request, whose path Go
# escapes, the status and size, the Referer and User-Agent Go quotes, a quote as \"), to the end.
TRAEFIK = re.compile(br'^(\S+ \S+ .+ ' + TIME + br' "[^"]*" \S+ \S+ ' + QUOTED + br' ' + QUOTED + br')'
                     br'(?: \d+ ' + QUOTED + br' ' + QUOTED + br' \d+ms)?\s*$')
_TRAEFIK_OWN = re.compile(br' \d+ ' + QUOTED + br' ' + QUOTED + br' \d+ms\s*$')


def traefik_address(line):
    """The address field of a Traefik line with Traefik's own fields (auto), else None."""
    if not line.rstrip().endswith(b'ms'):       # Traefik's duration ends its line: others fail at once
        return None
    match = _TRAEFIK_USUAL.match(line) or TRAEFIK.match(line)
    return line.partition(b' ')[0] if match and _TRAEFIK_OWN.match(line, match.end(1)) else None


class Traefik(Reader):
    """Traefik's common log format: combined, then the requests count, router, server URL
    and duration, which the twin leaves out."""

    name = 'traefik'
    clf_times = True
    date_marker = b''

    def parse(self, line):
        match = _TRAEFIK_USUAL.match(line) or TRAEFIK.match(line)
        return match.group(1) if match else None

    def parse_all(self, lines):
        """Reader.parse_all, by C-level passes over all of them: matched, the twin cut out."""
        matches = list(map(_TRAEFIK_USUAL.match, lines))
        hits = list(map(truth, matches))
        if all(hits):
            return list(map(Match.group, matches, repeat(1)))
        twins = Reader.parse_all(self, list(compress(lines, map(not_, hits))))
        return twins + list(map(Match.group, compress(matches, hits), repeat(1)))


_HAPROXY_LINE = (br'(\S+):\d+ \[((\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}:\d{2}:\d{2}))\.\d+\] +\S+ +\S+ +\S+ +(-?\d+) +\+?(-?\d+) '
                 br'+\S+ +\S+ +\S+ +\S+ +\S+ +(?:\{([^}]*)\} +)?(?:\{[^}]*\} +)?"([^"]*)"?\s*$')
# What syslog (or HAProxy's own log header) writes before the line, when anything: a priority,
# a timestamp, this host's name and the tag, or RFC 5424's header. A client writes none of it, so
# the line's address is where the server put it: searched anywhere in a line, an HAProxy-shaped
# Referer in another format's line read as one named the address it chose (issue 44).
_BSD_TIME = br'[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}'
_ISO_TIME = br'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[-+]\d{2}:?\d{2})'
_SYSLOG = (br'(?:<\d{1,3}>1 ' + _ISO_TIME + br' \S+ \S+ \S+ \S+ (?:-|(?:\[[^\]]*\])+) '
           br'|(?:<\d{1,3}>)?(?:(?:' + _BSD_TIME + br'|' + _ISO_TIME + br') (?:\S+ )?)?(?:[\w./-]+(?:\[\d+\])?: )?)')
HAPROXY = re.compile(br'^' + _SYSLOG + _HAPROXY_LINE)
# A line without a syslog prefix, matched where it starts: the same match as HAPROXY's, faster.
_HAPROXY_AT_START = re.compile(_HAPROXY_LINE)


def haproxy_address(line):
    """The address field of an HAProxy line (auto), else None."""
    match = HAPROXY.match(line)
    return match.group(1) if match else None


_NO_REQUEST = {b'': b'-'}


class Haproxy(Reader):
    """HAProxy's ``option httplog`` line, with or without a syslog prefix. The user agent is
    the request capture's field ``haproxy_user_agent_capture`` (1-based), else '-'."""

    name = 'haproxy'
    date_marker = b''

    def __init__(self, settings):
        super(Haproxy, self).__init__(settings)
        self.capture = settings.haproxy_user_agent_capture
        self.agents = {}        # request capture blocks read, and their user agent

    def parse(self, line):
        match = HAPROXY.match(line)
        if match is None:
            return None
        address, stamp, day, month, year, clock, status, size, captured, request = match.groups()
        request = escaped(request) if request else b'-'
        return b'%s - - [%s] "%s" %s %s "-" "%s"' % (escaped(address), self._when(stamp, day, month, year, clock), request,
                                                     status, size, self._agent(captured))

    def _agent(self, captured):
        """The user agent in the request capture block ``captured`` (None: none), escaped."""
        if self.capture and captured is not None:
            fields = captured.split(b'|')
            if len(fields) >= self.capture and fields[self.capture - 1]:
                return escaped(fields[self.capture - 1])
        return b'-'

    def _when(self, stamp, day, month, year, clock):
        """The stamp's time (no zone: local) as combined text, cached per second."""
        found = self.times.get(stamp)
        if found is None:
            if len(self.times) > 65536:
                self.times.clear()
            found = self.times[stamp] = self.clock.local_fields(
                day.decode(), month.decode(), year.decode(), clock.decode()).encode('ascii')
        return found

    def parse_all(self, lines):
        """Reader.parse_all, by C-level passes over all of them when nothing needs an escape:
        matched, cut into columns, the time and user agent looked up in caches."""
        lines, others = plain_lines(lines)      # a field to escape: those lines one by one
        twins = Reader.parse_all(self, others)
        matches = list(map(_HAPROXY_AT_START.match, lines))
        hits = list(map(truth, matches))
        if not all(hits):
            matches = list(map(HAPROXY.match, lines))
            hits = list(map(truth, matches))
        if not all(hits):
            twins.extend(Reader.parse_all(self, list(compress(lines, map(not_, hits)))))
            matches = list(compress(matches, hits))
        if not matches:
            return twins
        address, stamp, day, month, year, clock, status, size, captured, request = zip(*map(Match.groups, matches))
        if b'"' in b''.join(address) or b'"' in b''.join(filter(None, captured)):     # the request holds none
            return twins + Reader.parse_all(self, list(compress(lines, hits)))
        # This chunk's times in a dict of its own: _when may empty self.times meanwhile.
        times, distinct = self.times, set(stamp)
        known = dict((at, times[at]) for at in filter(times.__contains__, distinct))
        if len(known) < len(distinct):
            parts = dict(zip(stamp, zip(day, month, year, clock)))
            for at in distinct.difference(known):
                known[at] = self._when(at, *parts[at])
        agents = self.agents
        if len(agents) > 65536:
            agents.clear()
        for value in set(captured).difference(agents):
            agents[value] = self._agent(value)
        made = zip(address, map(known.__getitem__, stamp), map(_NO_REQUEST.get, request, request), status, size,
                   map(agents.__getitem__, captured))
        twins.extend(map(b'%s - - [%s] "%s" %s %s "-" "%s"'.__mod__, made))
        return twins


# A W3C line's date and time as IIS writes them, the first two fields (in_windows): its hour.
_W3C_HOUR = re.compile(br'\n(\d{4}-\d{2}-\d{2} \d{2}):[0-5]\d:[0-5]\d ')      # after a newline: a fast search
# The bytes a W3C line's fields may hold as the combined format writes them (escaping.escaped's
# others): its twin is then made without escaping a field (W3C.parse_all; HAProxy's lines quote
# the request, so Haproxy.parse_all takes plain_lines' bytes and looks for a quote elsewhere).
_ESCAPE_FREE = PLAIN.replace(b'"', b'')
_ABSENT_FIELD = {b'-': b''}     # cs-uri-query and cs-version: '-' when not logged
_W3C_TWIN_FIELDS = (b'c-ip', b'cs-username', b'date', b'time', b'cs-method', b'cs-uri-stem', b'cs-uri-query',
                    b'cs-version', b'sc-status', b'sc-bytes', b'cs(Referer)', b'cs(User-Agent)')


class W3C(Reader):
    """The W3C extended log format as IIS writes it: the fields from the last #Fields: line,
    time in UTC; a user agent or referer logged with '+' for spaces is kept as logged."""

    name = 'w3c'
    needs_head = True
    contiguous_parts = True
    query_apart = True

    def __init__(self, settings):
        super(W3C, self).__init__(settings)
        self.fields = None
        self.left = None        # (file, offset): where this reader's fields are those in force
        self.placed = {}        # in_windows: UTC hours, whether each meets no window
        self.shaped = {}        # _other_hours: its search by the hours sampled

    def start_at(self, fd, start):
        """The fields of the last #Fields: line before ``start`` (none at the file's start),
        unless this reader read on to there itself: a forked worker's part, an incremental
        run's or a follower's reading on, each from its own place."""
        if self.left != (os.fstat(fd)[1:3], start):
            self.fields = fields_before(fd, start)

    def stop_at(self, fd, end):
        self.left = (os.fstat(fd)[1:3], end)

    def skipped(self, lines):
        """The fields of the last #Fields: line of ``lines`` (at the stream's start, none)."""
        if lines is None:
            self.fields, self.left = None, None
            return
        at = (b'\n' + lines).rfind(b'\n#Fields:')
        if at != -1:
            end = lines.find(b'\n', at)
            self.fields = self._fields(lines[at:end if end != -1 else len(lines)].rstrip(b'\r'))

    def bind(self, head):
        # The last line that starts with #Fields: (a client's User-Agent may hold the text too).
        at = (b'\n' + head).rfind(b'\n#Fields:')
        if at != -1:
            other = self.fresh()
            other.fields = self._fields(head[at:head.find(b'\n', at) if b'\n' in head[at:] else len(head)])
            return other
        return self

    @staticmethod
    def _fields(line):
        """{field name: its column (the last, a name given twice)}, and under None the count of columns."""
        names = line[len(b'#Fields:'):].split()
        fields = dict((name, i) for i, name in enumerate(names))
        fields[None] = len(names)
        return fields

    def translate(self, buf, limit):
        chunk = buf[:limit] if limit is not None and limit < len(buf) else buf
        if b'#' not in chunk:
            if self._other_hours(chunk):        # one line tells whether the log is read
                newline = chunk.find(b'\n')
                return b'', self.parse(chunk if newline == -1 else chunk[:newline]) is not None
            return Reader.translate(self, chunk, None)
        out, read = [], False       # directives: each part with the fields in force there
        for part in re.split(br'(?m)^(?=#)', chunk):
            if part.startswith(b'#'):
                directive, dummy, part = part.partition(b'\n')
                if directive.startswith(b'#Fields:'):
                    self.fields = self._fields(directive.rstrip(b'\r'))
            if part:
                made, parsed = Reader.translate(self, part.rstrip(b'\n'), None)
                read = read or parsed
                if made:
                    out.append(made)
        return b'\n'.join(out), read

    def in_windows(self, lines, joined=None):
        """The lines that may count: all but those whose date and time, the first two fields
        as IIS writes them (in UTC), lie in an hour that meets no window and that hold no
        stamp's text (a URI may). A line whose time has another form is kept: parse decides."""
        fields, stamps = self.fields, self.stamps
        if not stamps or not lines or fields is None or fields.get(b'date') != 0 or fields.get(b'time') != 1:
            return lines
        if joined is None:
            joined = b'\n'.join(lines)
        found = _W3C_HOUR.findall(b'\n' + joined)
        distinct = set(found)
        out = set(hour for hour in distinct if self._outside(hour))
        if not out:
            return lines
        texts = self.dates_in(joined)
        if len(found) == len(lines) and len(out) == len(distinct) and not texts:
            return []       # each line's hour, none meeting a window (a chunk of other hours)
        starts = tuple(hour + b':' for hour in out)
        dropped = list(map(min, map(bytes.startswith, lines, repeat(starts)),
                           map(truth, map(_W3C_HOUR.match, map(add, repeat(b'\n'), lines)))))
        if texts:
            finder = re.compile(b'|'.join(re.escape(text) for text in texts))
            dropped = list(map(min, dropped, map(not_, map(finder.search, lines))))
        return list(compress(lines, map(not_, dropped)))

    def _other_hours(self, chunk):
        """Whether in_windows keeps no line of ``chunk`` (whole lines, no directive), told by
        passes over it as it is, no line split off (a chunk of other hours, most of a day's
        log): the hours of nine lines (the first, the last, seven between) meet no window, no
        stamp's text is there, and one search finds no line that does not start with one of
        those hours and a time."""
        fields = self.fields
        if not self.stamps or not chunk or fields is None or fields.get(b'date') != 0 or fields.get(b'time') != 1:
            return False
        hours = set()
        for at in list(range(0, len(chunk), max(1, len(chunk) // 8))) + [len(chunk)]:
            start = chunk.rfind(b'\n', 0, at) + 1
            match = _W3C_HOUR.match(b'\n' + chunk[start:start + 24])
            if match is None or not self._outside(match.group(1)):
                return False
            hours.add(match.group(1))
        if self.dates_in(chunk):
            return False
        key = frozenset(hours)
        if key not in self.shaped:
            if len(self.shaped) > 64:
                self.shaped.clear()
            self.shaped[key] = re.compile(br'\n(?!(?:' + b'|'.join(map(re.escape, sorted(hours))) + br'):[0-5]\d:[0-5]\d )')
        return self.shaped[key].search(chunk) is None

    def _outside(self, hour):
        """Whether the UTC hour ``hour`` (b'2026-11-21 03') meets no window (cached per stamps)."""
        key = frozenset(self.stamps)
        if self.placed.get(None) != key:
            self.placed = {None: key, 'windows': instants_of(key)}
        found = self.placed.get(hour)
        if found is None:
            start = utc_seconds(int(hour[:4]), int(hour[5:7]), int(hour[8:10]), int(hour[11:13]), 0, 0)
            found = self.placed[hour] = not any(low < start + 3600 and start < high for low, high in self.placed['windows'])
        return found

    def parse_all(self, lines):
        """Reader.parse_all, by C-level passes over all of them when their fields need no
        escape: split, picked, the request and time put together (a time cached per second)."""
        fields = self.fields
        joined = b'\n'.join(lines)
        if b'\r' in joined:        # CR LF (IIS): parse's rstrip of one, for all at once
            lines = (joined + b'\n').replace(b'\r\n', b'\n')[:-1].split(b'\n')
        if fields is None or not lines:
            return Reader.parse_all(self, lines)
        lines, others = plain_lines(list(compress(lines, map(bytes.strip, lines))), _ESCAPE_FREE)   # blank: none
        twins = Reader.parse_all(self, others)      # a field to escape: those lines one by one
        count = fields[None]
        rows = list(map(bytes.split, map(add, lines, repeat(b' -')), repeat(b' ')))     # '-': a field not logged
        shaped = list(map(eq, map(len, rows), repeat(count + 1)))
        if not all(shaped):
            twins.extend(Reader.parse_all(self, list(compress(lines, map(not_, shaped)))))
            rows = list(compress(rows, shaped))
        if not rows:
            return twins
        at = [fields.get(name, count) for name in _W3C_TWIN_FIELDS]
        ip, user, date, clock, method, stem, query, version, status, size, referer, agent = zip(*map(itemgetter(*at), rows))
        whens = list(map(add, map(add, date, repeat(b' ')), clock))
        times = self.times
        if len(times) > 65536:
            times.clear()
        for when in set(whens).difference(times):
            times[when] = self._when(*when.split(b' '))
        whens = list(map(times.__getitem__, whens))
        query = map(_ABSENT_FIELD.get, query, map(add, repeat(b'?'), query))
        version = map(_ABSENT_FIELD.get, version, map(add, repeat(b' '), version))
        made = zip(ip, user, whens, method, stem, query, version, status, size, referer, agent)
        if None in whens:       # no time: those lines do not parse
            for line in compress(list(compress(lines, shaped)), map(eq, whens, repeat(None))):
                self.failed(line)
            made = compress(made, whens)
        twins.extend(map(b'%s - %s [%s] "%s %s%s%s" %s %s "%s" "%s"'.__mod__, made))
        return twins

    def _when(self, date, clock):
        """A line's date and time (UTC) as local combined text; None when they are no time."""
        try:
            year, month, day = date.split(b'-')
            hour, minute, second = clock.split(b':')
            return self.clock.utc_fields(int(year), int(month), int(day), int(hour), int(minute), int(second[:2])).encode('ascii')
        except (ValueError, OverflowError, OSError):    # OSError: a year no clock shows
            return None

    def parse(self, line):
        fields = self.fields
        if fields is None:
            return None
        values = line.rstrip(b'\r').split(b' ')
        if len(values) != fields[None]:
            return None

        def get(name):
            at = fields.get(name)
            return values[at] if at is not None else b'-'
        when = self._when(get(b'date'), get(b'time'))
        if when is None:
            return None
        query = get(b'cs-uri-query')
        request = get(b'cs-method') + b' ' + get(b'cs-uri-stem') + (b'?' + query if query != b'-' else b'')
        version = get(b'cs-version')
        if version != b'-':
            request += b' ' + version
        return b'%s - %s [%s] "%s" %s %s "%s" "%s"' % (
            escaped(get(b'c-ip')), escaped(get(b'cs-username')), when, escaped(request),
            get(b'sc-status'), get(b'sc-bytes'), escaped(get(b'cs(Referer)')), escaped(get(b'cs(User-Agent)')))


def fields_before(fd, start):
    """W3C._fields of the last line starting with #Fields: that ends before ``start``, found
    searching back from it a block at a time; None when there is none. A line longer than
    one read whole (chunks.LONG_LINE_READ) is unparsed, not in force: passed over."""
    marker = b'\n#Fields:'
    end, size = start, max(HEAD_BYTES, 2 * len(marker))
    while end > 0:
        low = max(0, end - size)
        block = os.pread(fd, end - low, low)
        at = block.rfind(marker)
        if at != -1:
            begin = low + at + 1
        elif low == 0 and block.startswith(marker[1:]):
            begin = 0           # the file's first line
        else:
            end = low + len(marker) - 1 if low else 0       # a marker across two blocks: in the next
            continue
        line = os.pread(fd, min(start - begin, chunks.LONG_LINE_READ + 1), begin).split(b'\n', 1)[0]
        if len(line) <= chunks.LONG_LINE_READ:
            return W3C._fields(line.rstrip(b'\r'))
        end = begin + len(marker) - 2       # the search goes on before this marker
    return None


CLASSES = {'traefik': Traefik, 'haproxy': Haproxy, 'w3c': W3C}
