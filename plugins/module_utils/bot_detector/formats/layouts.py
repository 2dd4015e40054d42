# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON formats' usual line turned into its twin without decoding it (issue 27): a log's
layout (Layout: nginx JSON's, Traefik's; CaddyLayout), its keys in their order, learnt from
one line of the log's start (JsonReader.bind); a chunk's lines of that layout matched and
formatted by C-level passes over all of them. formats/text_logs.py uses plain_lines too."""

from __future__ import absolute_import, division, print_function

import json
import re
from itertools import compress, repeat
from operator import eq, itemgetter, not_, truth

from .escaping import CLF_BYTES

__metaclass__ = type

# Printable ASCII but backslash, and the newline that joins lines: the bytes a fast
# layout's values may hold as the combined format writes them (escaping.escaped's others).
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


class Layout:
    """nginx_json's usual line: its keys in its order, every value a string of printable
    ASCII without quotes or backslashes. One regex matches such lines, and their twins are
    made by C-level passes over all of them, without decoding them (twins)."""

    def __init__(self, pattern, pick, template, clf):
        self.pattern = pattern      # the line's regex: a group per key, and a last, empty one
        # The same (its '$' left out) matching a line of a chunk: from the newline before it to the one after.
        self.in_chunk = re.compile(b'\\n' + pattern.pattern[:-1] + b'(?=\\n)')
        self.pick = pick            # the groups of the twin's columns (the empty one for a role absent)
        self.template = template
        self.clf = clf              # its time a $time_local (else converted, the reader's ``when``)
        # Between the twin's columns (it starts with one): the last with the newline that joins twins.
        self.separators = template.split(b'%s')[1:]
        self.separators[-1] += b'\n'

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
            value = CLF_BYTES if clf and key == role_key['time'] else (_VALUE_SOME if key in required else _VALUE_ANY)
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
        """Traefik's JSON line (flat: text, integers and other scalars) whose twin times.
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
        slow = []
        columns, lines = self._columns(lines, slow)
        if columns is None:
            return b'', slow
        if not self.clf:
            # This chunk's times in a dict of its own: reader.when may empty reader.times meanwhile.
            times, distinct, minutes = reader.times, set(columns[1]), {}
            known = dict((when, times[when]) for when in filter(times.__contains__, distinct))
            for when in distinct.difference(known):
                known[when] = _stamp(when, reader, minutes)
            if len(times) > 65536:
                times.clear()
            times.update(known)
            stamps = list(map(known.__getitem__, columns[1]))
            if None in stamps:      # no time: those lines are decoded (and fail there)
                keep = list(map(truth, stamps))
                slow.extend(compress(lines, map(not_, keep)))
                columns = [list(compress(column, keep)) for column in columns]
                stamps = list(compress(stamps, keep))
                if not stamps:
                    return b'', slow
            columns[1] = stamps
        return self._joined(columns), slow

    def _joined(self, columns):
        """The twins of the rows of ``columns``, joined: the columns and separators interleaved
        by slice assignments, one join. A value holds no quote: '""' is an empty referer or user
        agent, '-' in the twin."""
        count, width = len(columns[0]), 2 * len(columns)
        out = [None] * (width * count)
        for at, (column, separator) in enumerate(zip(columns, self.separators)):
            out[2 * at::width] = column
            out[2 * at + 1::width] = [separator] * count
        return b''.join(out)[:-1].replace(b'""', b'"-"')

    def _columns(self, lines, slow):
        """(the twins' columns of the lines the pattern matches (None: none), those lines); the
        others go to ``slow``. All of them matched at once (``in_chunk.findall`` over them joined:
        no Match object a line, no row picked) when each is plain and matches; else line by line."""
        if not lines:
            return None, lines
        joined = b'\n'.join([b''] + lines + [b''])
        if not joined.translate(None, PLAIN):
            found = self.in_chunk.findall(joined)
            if len(found) == len(lines):        # each match a whole line, from its start (no value holds a newline)
                return list(self.pick(list(zip(*found)))), lines
        lines, odd = plain_lines(lines)     # a value with an escape, a control or non-ASCII: decoded
        slow.extend(odd)
        matches = list(map(self.pattern.match, lines))
        hits = list(map(truth, matches))
        if not all(hits):
            slow.extend(compress(lines, map(not_, hits)))
            matches, lines = list(compress(matches, hits)), list(compress(lines, hits))
        return (list(self.pick(list(zip(*map(Match.groups, matches))))) if matches else None), lines


def _stamp(when, reader, minutes):
    """The twin's time of ``when``, a time value's text: for ISO-8601 of whole seconds and a zone
    ('2026-11-21T04:13:43+01:00', '...Z'), its minute's (``minutes``: converted once, at seconds
    00 and 59) with its second, where the minute's twin runs from :00 to :59 on one offset (not
    where the local offset has seconds or changes within the minute, nor for a leap second:
    converted each); else ``reader.when``'s (None: no time)."""
    if len(when) in (20, 25) and when[16:17] == b':' and when[17:19].isdigit() and when[17:19] < b'60':
        key = when[:16] + when[19:]
        minute = minutes.get(key)
        if minute is None:
            stamp = reader.when((when[:16] + b':00' + when[19:]).decode('ascii'))
            last = reader.when((when[:16] + b':59' + when[19:]).decode('ascii'))
            minute = minutes[key] = (stamp.encode('ascii') if stamp is not None and stamp[17:20] == ':00'
                                     and last == stamp[:18] + '59' + stamp[20:] else False)
        if minute:
            return minute[:18] + when[17:19] + minute[20:]
    stamp = reader.when(when.decode('ascii'))
    return None if stamp is None else stamp.encode('ascii')


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
    """Caddy's usual line (json_logs.Caddy): its keys in its order, the request an object
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

    def _columns(self, lines, slow):
        """Layout's, the headers' five columns replaced by the referer ('' when none) and the
        user agent, for a line with one of each header at most (the user agent there)."""
        columns, lines = Layout._columns(self, lines, slow)
        if columns is None:
            return columns, lines
        headers, referers, referers2, agents, agents2 = columns[-5:]
        referers = [a or b for a, b in zip(referers, referers2)]
        agents = [a or b for a, b in zip(agents, agents2)]
        usual = list(map(min, map(eq, map(bytes.count, headers, repeat(b'"User-Agent":')), repeat(1)), map(truth, agents),
                         map(eq, map(bytes.count, headers, repeat(b'"Referer":')), map(truth, referers))))
        columns = columns[:-5] + [list(map(_NO_REFERER.get, referers, referers)), agents]
        if not all(usual):      # a header twice, with several values or none: decoded
            slow.extend(compress(lines, map(not_, usual)))
            columns, lines = [list(compress(column, usual)) for column in columns], list(compress(lines, usual))
        return (columns if lines else None), lines
