# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast paths of the JSON formats (issue 27): the lines of a chunk whose own time lies
in no hour the tally counts, left out before any of them is decoded (TimeFilter; for nginx's
$time_local, all_dated_by and dated_by), and the lines of a log's usual layout turned into
twins without decoding them (Layout: nginx JSON's, Traefik's; CaddyLayout).

A line's time is read by one regex over the chunk's lines joined (``TimeFilter.finder``):
only its distinct values, an hour of ISO-8601 text with its zone or a hundred seconds of
an epoch (a few per chunk), are placed in time. When one of them meets no window, the
lines holding it are left out by C-level passes, unless the line could still count or be
read otherwise: it holds a backslash (an escape), a stamp's probe (a referer may), its time
key more than once, a time key that comes first (``before``), or (``flat``) a nested
object. Such lines are kept: the tally decides on them, as on every other line."""

from __future__ import absolute_import, division, print_function

import json
import re
from itertools import compress, repeat
from operator import add, contains, eq, itemgetter, not_, truth

from .formats import _CLF_BYTES, _ESCAPE_TEXT, _ISO, probe
from .logfile import utc_seconds

__metaclass__ = type

# Minutes and seconds of an hour's times LocalTime.iso8601 reads; a leap second (:60, the next
# minute's first) is not matched, so its line is kept (the tally decides).
_MINUTE = br'[0-5]\d:[0-5]\d(?:[.,]\d+)?'
_ISO_HOUR = re.compile(br'(\d{4})-(\d{2})-(\d{2})[T ](\d{2})$')
# Printable ASCII but backslash, and the newline that joins lines: the bytes a fast
# layout's values may hold as the combined format writes them (formats.escaped's others).
PLAIN = bytes(range(0x20, 0x7f)).replace(b'\\', b'') + b'\n'
# A layout's values: any bytes but a quote (plain_lines has checked them: one pass in C,
# faster than a class); the roles' not empty; a $time_local as the combined format writes it.
_VALUE_ANY = b'[^"]*'
_VALUE_SOME = b'[^"]+'
_INTEGER = b'0|-?[1-9]\\d*'      # as Python writes the integer JSON reads ('-0', '01' are not)
_SCALAR = b'(?:"[^"]*"|-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][-+]?\\d+)?|true|false|null)'     # another key's
LAYOUT_ROLES = ('address', 'time', 'request', 'method', 'uri', 'protocol', 'status', 'bytes', 'referer', 'user_agent')
Match = type(re.match(b'', b''))


def plain_lines(lines, plain_bytes=PLAIN):
    """(the lines holding only ``plain_bytes``, the others): one pass over them joined when
    all do."""
    if not lines:
        return lines, []
    if not b'\n'.join(lines).translate(None, plain_bytes):
        return lines, []
    plain = list(map(not_, map(bytes.translate, lines, repeat(None), repeat(plain_bytes))))
    return list(compress(lines, plain)), list(compress(lines, map(not_, plain)))


def plain_twin(address, when, method, uri, proto, status, size, referer, agent):
    """A decoded line's twin at once, when its values are as usual: text (status and size
    integers), address and user agent not empty, no referer or one not empty, nothing the
    combined format escapes; else None (the caller builds it field by field, text_field)."""
    # Exactly int: JSON's true and false decode to bool, a subclass of int.
    if (isinstance(address, str) and address and isinstance(method, str) and isinstance(uri, str) and isinstance(proto, str)
            and status.__class__ is int and size.__class__ is int and isinstance(agent, str) and agent
            and (referer is None or (isinstance(referer, str) and referer))
            and _ESCAPE_TEXT.search(address + method + uri + proto + agent + (referer or '')) is None):
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
            self.finder = re.compile(head + br'"?(\d{1,9})\d{2}(?:\.\d*)?"?[,}]')
        # The key, counted and looked for as a name: JSON allows a blank before its colon.
        self.head, self.pattern_head = b'"' + key.encode('ascii') + b'"', head
        self.before = [b'"' + k.encode('ascii') + b'"' for k in before]
        self.flat = flat
        self._windows = (None, None)
        self.placed = {}

    def keep(self, lines, stamps, joined=None, braced=None):
        """The lines of ``lines`` that may count under ``stamps`` (a list, in order).
        ``joined``: the lines joined by newlines, when at hand; ``braced``: the same object
        when each line starts with '{'."""
        if not stamps or not lines:
            return lines
        key = frozenset(stamps)
        if self._windows[0] != key:
            texts = sorted(set(map(probe, key)))
            literals = [b'\\'] + texts + self.before
            self._windows = (key, (instants_of(key), re.compile(b'|'.join(re.escape(s) for s in literals)), literals))
            self.placed = {}
        windows, keeper, literals = self._windows[1]
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

    def _dropper(self, out):
        """A regex matching the key with one of the values of ``out``."""
        if self.kind == 'iso':
            return re.compile(self.pattern_head + b'"(?:' + b'|'.join(
                re.escape(hour) + b':' + _MINUTE + re.escape(zone) for hour, zone in out) + b')"')
        return re.compile(self.pattern_head + b'"?(?:' + b'|'.join(re.escape(s) for s in out) + br')\d{2}(?:\.\d*)?"?[,}]')

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
            start = int(item) * 100
            return start, start + 101
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
    in 15-minute steps (every zone's offset is a multiple of 15 minutes) within 15 hours of
    the stamp read as UTC, merged."""
    from .clock import hour_stamp
    from .logfile import stamp_clock
    found = []
    for stamp in stamps:
        text = stamp.decode('ascii')
        center = stamp_clock(stamp)
        for at in range(center - 15 * 3600, center + 15 * 3600, 900):
            if hour_stamp(at) == text:
                found.append((at, at + 900))
    merged = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


class Layout:
    """nginx_json's usual line: its keys in its order, every value a string of printable
    ASCII without quotes or backslashes. One regex matches such lines, and their twins are
    made by C-level passes over all of them, without decoding them (twins)."""

    def __init__(self, pattern, pick, template, clf):
        self.pattern = pattern      # the line's regex: a group per key, and a last, empty one
        self.pick = pick            # the groups of the twin's columns (the empty one for a role absent)
        self.template = template
        self.clf = clf              # its time a $time_local (else converted, the reader's ``when``)

    @classmethod
    def of(cls, line, doc, role_key):
        """The layout of ``line`` (decoded: ``doc``; ``role_key``: each role's key in it, or
        None); False when it has none: a value not a string, an odd key, a role missing."""
        keys = list(doc)
        if not all(isinstance(v, str) for v in doc.values()) or any('"' in k or '\\' in k or not k.isascii() for k in keys):
            return False
        if role_key['address'] is None or role_key['time'] is None or role_key['status'] is None:
            return False
        clf = role_key['time'] == 'time_local'
        required = set(role_key[r] for r in ('address', 'time', 'request', 'method', 'uri', 'status', 'bytes'))
        # A compact line (no blank between its tokens, as nginx writes it): its separators exactly.
        blank = b'' if json.dumps(doc, separators=(',', ':')).encode('ascii') == line else b'[ \\t]*'
        parts = []
        for key in keys:
            value = _CLF_BYTES if clf and key == role_key['time'] else (_VALUE_SOME if key in required else _VALUE_ANY)
            parts.append(blank + b'"' + re.escape(key.encode('ascii')) + b'"' + blank + b':' + blank + b'"(' + value + b')"' + blank)
        pattern = re.compile(b'\\{' + b','.join(parts) + b'\\}[ \\t\\r]*()$')
        if role_key['request'] is not None:
            roles, request = ('address', 'time', 'request'), b'%s'
        elif role_key['method'] is not None and role_key['uri'] is not None:
            roles = ('address', 'time', 'method', 'uri') + (('protocol',) if role_key['protocol'] else ())
            request = b'%s %s %s' if role_key['protocol'] else b'%s %s'
        else:
            return False
        groups = [len(keys) if role_key[role] is None else keys.index(role_key[role])
                  for role in roles + ('status', 'bytes', 'referer', 'user_agent')]
        return cls(pattern, itemgetter(*groups), b'%s - - [%s] "' + request + b'" %s %s "%s" "%s"', clf)

    @classmethod
    def of_traefik(cls, line, doc):
        """Traefik's JSON line (flat: text, integers and other scalars) whose twin formats_fast.
        plain_twin makes at once; False for another (its twin is made field by field)."""
        status = 'DownstreamStatus' if 'DownstreamStatus' in doc else 'OriginStatus'
        kinds = {'ClientHost': _VALUE_SOME, 'request_User-Agent': _VALUE_SOME, 'request_Referer': _VALUE_SOME,
                 'StartLocal': _VALUE_ANY, 'RequestMethod': _VALUE_ANY, 'RequestPath': _VALUE_ANY, 'RequestProtocol': _VALUE_ANY,
                 status: _INTEGER, 'DownstreamContentSize': _INTEGER}
        roles = ('ClientHost', 'StartLocal', 'RequestMethod', 'RequestPath', 'RequestProtocol', status,
                 'DownstreamContentSize', 'request_Referer', 'request_User-Agent')
        keys = list(doc)
        if (any(doc.get(key).__class__ is not (int if kinds[key] is _INTEGER else str) for key in roles
                if key in doc or key not in ('RequestPath', 'RequestProtocol', 'request_Referer'))
                or any(isinstance(v, (dict, list)) for v in doc.values())
                or any('"' in k or '\\' in k or not k.isascii() for k in keys)):
            return False
        blank = b'' if json.dumps(doc, separators=(',', ':')).encode('ascii') == line else b'[ \\t]*'
        parts = []
        for key in keys:
            kind = kinds.get(key)
            value = _SCALAR if kind is None else (b'(' + kind + b')' if kind is _INTEGER else b'"(' + kind + b')"')
            parts.append(blank + b'"' + re.escape(key.encode('ascii')) + b'"' + blank + b':' + blank + value + blank)
        pattern = re.compile(b'\\{' + b','.join(parts) + b'\\}[ \\t\\r]*()$')
        grouped = [key for key in keys if key in kinds]
        groups = [grouped.index(key) if key in doc else len(grouped) for key in roles]
        proto = b'%s' if 'RequestProtocol' in doc else b'-'
        return cls(pattern, itemgetter(*[g for g, key in zip(groups, roles) if key != 'RequestProtocol' or key in doc]),
                   b'%s - - [%s] "%s %s ' + proto + b'" %s %s "%s" "%s"', False)

    def twins(self, lines, reader):
        """(twins of the lines the layout matches, joined, the other lines): matched, cut
        into columns and formatted by C-level passes over all of them; a time converted
        by ``reader.when``, cached in ``reader.times``."""
        lines, slow = plain_lines(lines)     # a value with an escape, a control or non-ASCII: decoded
        rows, lines = self._rows(lines, slow)
        if rows and not self.clf:
            times = reader.times
            if len(times) > 65536:
                times.clear()
            whens = list(map(itemgetter(1), rows))
            for when in set(whens).difference(times):
                stamp = reader.when(when.decode('ascii'))
                times[when] = None if stamp is None else stamp.encode('ascii')
            stamps = list(map(times.__getitem__, whens))
            if None in stamps:      # no time: those lines are decoded (and fail there)
                keep = list(map(truth, stamps))
                slow.extend(compress(lines, map(not_, keep)))
                rows, stamps = list(compress(rows, keep)), list(compress(stamps, keep))
            if rows:        # none left when no line had a time
                table = list(zip(*rows))
                table[1] = stamps
                rows = list(zip(*table))
        if not rows:
            return b'', slow
        # A value holds no quote: '""' is an empty referer or user agent, '-' in the twin.
        return b'\n'.join(map(self.template.__mod__, rows)).replace(b'""', b'"-"'), slow

    def _rows(self, lines, slow):
        """(the twins' columns of the lines the pattern matches, those lines); the others
        go to ``slow``."""
        matches = list(map(self.pattern.match, lines))
        hits = list(map(truth, matches))
        if not all(hits):
            slow.extend(compress(lines, map(not_, hits)))
            matches, lines = list(compress(matches, hits)), list(compress(lines, hits))
        return list(map(self.pick, map(Match.groups, matches))), lines


# Caddy's headers object (values without quotes): any, each a list of text, the user agent's
# and the referer's captured where one holds one value (twice: the first header, then the
# others; a header there twice is left to decoding, Caddy.twin_of's other path).
_CADDY_HEADER = (b'(?:"User-Agent":\\["([^"]+)"\\]|"Referer":\\["([^"]+)"\\]|'
                 b'"[^"]*":\\[(?:"[^"]*"(?:,"[^"]*")*)?\\])')
_CADDY_HEADERS = b'\\{((?:' + _CADDY_HEADER + b'(?:,' + _CADDY_HEADER + b')*)?)\\}'
_NO_REFERER = {None: b''}
# Another key's object in Caddy's line: headers (``resp_headers``), or scalars only (``tls``).
_ANY_HEADERS = b'\\{(?:"[^"]*":\\[(?:"[^"]*"(?:,"[^"]*")*)?\\](?:,"[^"]*":\\[(?:"[^"]*"(?:,"[^"]*")*)?\\])*)?\\}'
_FLAT_OBJECT = b'\\{(?:"[^"]*":' + _SCALAR + b'(?:,"[^"]*":' + _SCALAR + b')*)?\\}'


def _other_value(value):
    """The pattern of a value of Caddy's line that its twin does not take (JSON as Caddy writes
    it): a scalar, a headers object, an object of scalars; None for another."""
    if isinstance(value, dict):
        if all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in value.values()):
            return _ANY_HEADERS
        if not any(isinstance(v, (dict, list)) for v in value.values()):
            return _FLAT_OBJECT
        return None
    return None if isinstance(value, list) else _SCALAR


class CaddyLayout(Layout):
    """Caddy's usual line (formats_json.Caddy): its keys in its order, the request an object
    of text values and its headers (any, each a list of text), ``ts`` a number, status and
    size integers. The user agent and referer are found in the headers of each line."""

    @classmethod
    def of(cls, line, doc):
        """The layout of ``line`` (decoded: ``doc``), or False."""
        request = doc.get('request')
        if not isinstance(request, dict) or not isinstance(request.get('headers'), dict):
            return False
        address = 'client_ip' if 'client_ip' in request else 'remote_ip'
        roles = {address: _VALUE_SOME, 'method': _VALUE_ANY, 'uri': _VALUE_ANY, 'proto': _VALUE_ANY}
        if (json.dumps(doc, separators=(',', ':')).encode('utf-8') != line or not request.get(address)
                or not all(isinstance(request.get(key, ''), str) for key in roles) or 'method' not in request
                or doc.get('ts').__class__ not in (int, float) or doc.get('status').__class__ is not int
                or doc.get('size').__class__ is not int
                or any(_other_value(value) is None for key, value in request.items() if key != 'headers')
                or any(_other_value(value) is None for key, value in doc.items() if key != 'request')):
            return False
        inner = []
        for key, item in request.items():
            value = _CADDY_HEADERS if key == 'headers' else (
                b'"(' + roles[key] + b')"' if key in roles else _other_value(item))
            inner.append(b'"' + re.escape(key.encode('ascii')) + b'":' + value)
        parts = []
        for key, item in doc.items():
            value = {'ts': b'(-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)', 'status': b'(' + _INTEGER + b')',
                     'size': b'(' + _INTEGER + b')', 'request': b'\\{' + b','.join(inner) + b'\\}'}.get(key)
            parts.append(b'"' + re.escape(key.encode('ascii')) + b'":' + (value or _other_value(item)))
        pattern = re.compile(b'\\{' + b','.join(parts) + b'\\}[ \\t\\r]*()$')
        grouped = []        # the pattern's groups in order: the headers' five (the object, two pairs)
        for key in doc:
            if key == 'request':
                for inner_key in request:
                    grouped.extend(['headers', 'agent', 'referer', 'agent2', 'referer2'] if inner_key == 'headers' else
                                   [inner_key] if inner_key in roles else [])
            elif key in ('ts', 'status', 'size'):
                grouped.append(key)
        at = dict((key, grouped.index(key)) for key in grouped)
        columns = [at[address], at['ts'], at['method'], at.get('uri', len(grouped))] + ([at['proto']] if 'proto' in at else []) + [
            at['status'], at['size'], at['headers'], at['referer'], at['referer2'], at['agent'], at['agent2']]
        proto = b'%s' if 'proto' in request else b'-'
        return cls(pattern, itemgetter(*columns), b'%s - - [%s] "%s %s ' + proto + b'" %s %s "%s" "%s"', False)

    def _rows(self, lines, slow):
        """Layout's, the headers' five columns replaced by the referer ('' when none) and the
        user agent, for a line with one of each header at most (the user agent there)."""
        rows, lines = Layout._rows(self, lines, slow)
        if not rows:
            return rows, lines
        headers, referers, referers2, agents, agents2 = list(zip(*map(itemgetter(-5, -4, -3, -2, -1), rows)))
        referers = [a or b for a, b in zip(referers, referers2)]
        agents = [a or b for a, b in zip(agents, agents2)]
        usual = list(map(min, map(eq, map(bytes.count, headers, repeat(b'"User-Agent":')), repeat(1)), map(truth, agents),
                         map(eq, map(bytes.count, headers, repeat(b'"Referer":')), map(truth, referers))))
        if not all(usual):      # a header twice, with several values or none: decoded
            slow.extend(compress(lines, map(not_, usual)))
            rows, lines = list(compress(rows, usual)), list(compress(lines, usual))
            agents, referers = list(compress(agents, usual)), list(compress(referers, usual))
        columns = zip(map(_NO_REFERER.get, referers, referers), agents)
        return list(map(add, map(itemgetter(slice(0, -5)), rows), columns)), lines


_UNSHAPED = {}


def _unshaped(marker):
    """A regex of the key of ``marker`` ('"time_local":"') not followed by its colon and a
    combined time in quotes: a blank before the colon, another type of value, its name a value."""
    if marker not in _UNSHAPED:
        _UNSHAPED[marker] = re.compile(re.escape(marker[:-2]) + b'(?!:"' + _CLF_BYTES + b'")')
    return _UNSHAPED[marker]


_SHAPED_LINES = {}


def _shaped_lines(marker):
    """A regex of ``marker`` with a combined time in quotes, the rest of its line and the next
    line's '{': one match a line at most (its line's end is in it)."""
    if marker not in _SHAPED_LINES:
        _SHAPED_LINES[marker] = re.compile(re.escape(marker) + _CLF_BYTES + br'"()[^\n]*\n\{')
    return _SHAPED_LINES[marker]


def all_dated_by(marker, text, end):
    """Whether dated_by holds for every line of ``text[:end]`` (whole lines; a chunk of other
    hours, most of a day's log), told by passes over the text as it is, no line split off: no
    escape; as many newlines as matches of _shaped_lines (each line but the last: its key with
    a combined time, the next starting with '{'), and the last line so; one '{' a line, and one
    part of the key's name (``marker[4:9]``, its '_'): the key nowhere else. Counts of one byte
    by replace (memchr), several times faster than bytes.count. False: some line may not be
    (dated_by tells which)."""
    if not text.startswith(b'{') or text.find(b'\\', 0, end) != -1:
        return False
    lines = len(text) - len(text.replace(b'\n', b'')) - text.count(b'\n', end) + 1
    last = text.rfind(b'\n', 0, end) + 1
    return (len(text) - len(text.replace(b'{', b'')) - text.count(b'{', end) == lines
            and text.count(marker[4:9], 0, end) == lines
            and len(_shaped_lines(marker).findall(text, 0, end)) == lines - 1
            and dated_by(marker, [text[last:end]])[0])


def dated_by(marker, lines):
    """Whether each line's time is surely a time after ``marker`` (a JSON key) as the combined
    format writes it: no escape, no nested object, the key there, and each time it is, before
    such a time (the line's is the last: none holds a date of the windows, so none can count)."""
    unshaped = _unshaped(marker)
    return list(map(all, zip(map(not_, map(contains, lines, repeat(b'\\'))), map(contains, lines, repeat(marker)),
                             map(not_, map(unshaped.search, lines)),
                             map(eq, map(bytes.count, lines, repeat(b'{')), repeat(1)))))
