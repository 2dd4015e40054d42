# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON formats: nginx JSON (any key order, usual key names, others by
``log_json_fields``), Caddy's access log and Traefik's JSON access log (proxies.py: the trusted
proxies whose X-Forwarded-For names the client).

Only the lines readers.Reader.candidates keeps are read: those of the log's usual layout
(formats/layouts.py) by C-level passes, the others decoded (json.loads, in C); the rest are only checked
to start with '{'."""

from __future__ import absolute_import, division, print_function

import json
import re
from itertools import compress, repeat
from operator import itemgetter, not_

from ..values.log_formats import NGINX_KEYS
from . import times
from .escaping import ESCAPE_TEXT, text_field
from .layouts import LAYOUT_ROLES, CaddyLayout, Layout
from .readers import Reader, twin
from .times import TimeFilter, plain_twin, second_of, time_filter

__metaclass__ = type

PLAN_ROLES = ('address', 'time', 'request', 'method', 'uri', 'protocol', 'status', 'bytes', 'referer', 'user_agent',
              'forwarded_for')
_ABSENT = '\x00absent'       # a key no log has: a plan's stand-in for a role the line lacks


def _decode(line):
    """The object of one line, or None. UTF-8 (a BOM allowed), as the job paths' pass reads it:
    json.loads of bytes would also take UTF-16 and UTF-32. A line nginx wrote without
    ``escape=json`` (its default escaping: \\xHH in the strings, not JSON) is read as written."""
    try:
        # nginx's escape=json writes a client's bytes past ASCII as they came, UTF-8 or not: each
        # byte that is not is kept as itself (surrogateescape), as the line's other fields are.
        doc = json.loads(line.decode('utf-8-sig', 'surrogateescape'))
    except (ValueError, RecursionError):     # RecursionError: a line nested deeper than the stack
        if b'\\x' not in line:
            return None
        try:
            doc = json.loads(_NGINX_ESCAPE.sub(_unescape, line).decode('utf-8-sig', 'surrogateescape'))
        except (ValueError, RecursionError):
            return None
    return doc if isinstance(doc, dict) else None


# nginx's default escaping (ngx_http_log_escape): '"', '\\', bytes under 0x20 and over 0x7e
# as \xHH, byte by byte. An escaped backslash pair is taken first (escape=json's '\\\\x22').
_NGINX_ESCAPE = re.compile(br'\\\\|\\x([0-9A-Fa-f]{2})')


def _unescape(match):
    """The JSON text of one escape: a byte over 0x7e as itself (a UTF-8 sequence's part), the
    others as a JSON escape."""
    if match.group(1) is None:
        return match.group(0)
    byte = int(match.group(1), 16)
    return bytes((byte,)) if byte > 0x7E else b'\\u%04x' % byte


def decode_all(lines):
    """Each line's object, or None, line by line: one array of the lines joined could pair
    values with other lines (a line ending in an open array, another holding two values)."""
    return list(map(_decode, lines))


class JsonReader(Reader):
    json = True
    needs_head = True   # bind: the layout learnt from the log's start
    layout = None       # layouts.Layout of the log's lines (False: none; None: not yet learnt)
    layout_of = None    # the format's Layout of a line and its doc (None: every line decoded)
    time_filter = None  # times.TimeFilter of the log's time key

    def bind(self, head):
        """This reader, with the layout (and nginx_json's time key) of the first line of ``head``
        (the log's start) that decodes, or none: learnt once, before anything is read, so every
        chunk and forked worker reads the same way (a line the windows' pass keeps or leaves out)."""
        self.layout = False
        for line in head.split(b'\n')[:20]:
            if _decode(line) is not None:
                self._learn(line)
                break
        return self

    def translate(self, buf, limit):
        """The twins of the lines that may count: those of the log's usual layout
        (layouts.Layout, CaddyLayout) matched by one regex and made without decoding
        them, the rest decoded one by one."""
        layout = self.layout if self.proxies is None else False        # X-Forwarded-For: decoded
        end = len(buf) if limit is None else min(limit, len(buf))
        dated, sampled = False, None
        if self.stamps and self.time_filter is not None:
            sampled = self.time_filter.sampled(buf, end, self.stamps)
            dated = sampled is not None and not sampled[1]      # a line's time (of nine) in a counted hour
        # Else a stamp's probe (a chunk a sampled time places in the windows goes to the layout either way).
        dated = dated or bool(self.dates_in(buf, end, first=True))
        if self.stamps and not dated and (
                self.time_filter.all_outside(buf, end, self.stamps, sampled) if self.time_filter is not None else
                self.date_marker and times.all_dated_by(self.date_marker, buf, end)):
            # A chunk of other hours (most of a day's log), each line's time its $time_local's or
            # its time key's: none can count, and none is unparsed (each starts with '{'). No line
            # is split off.
            newline = buf.find(b'\n', 0, end)
            return b'', self.parse(buf[:end if newline == -1 else newline]) is not None
        lines = buf.split(b'\n')
        if end < len(buf):
            lines.pop()     # the unfinished line after ``limit`` (no copy of the chunk without it)
        if layout and dated and (layout.clf or self.time_filter is not None):
            # A chunk of the windows' hours: the lines of the layout become twins without the
            # windows' pass (the tally keeps those holding a stamp; a line that pass leaves out
            # has none in its twin), only the others go through it.
            fast, slow = layout.twins(self._with_needles(lines, buf[:end] if end < len(buf) else buf), self)
            slow = self.in_windows(slow)
        else:
            region = buf[:end] if end < len(buf) else buf
            self.braced_chunk(region, lines)
            chosen = self.candidates(lines, region)
            for line in chosen[:8] if layout is None else ():
                self._learn(line)
                if self.layout is not None:
                    layout = self.layout
                    break
            fast, slow = layout.twins(chosen, self) if layout else (b'', chosen)
        twins, missed, example = [], [], self.example
        for line, doc in zip(slow, decode_all(slow)):
            made = self.twin_of(doc) if doc is not None else None
            if made is None:
                self.failed(line)
                missed.append(line)
            else:
                twins.append(made)
        if example is None and missed:      # the first in the log (the lines with an escape come first here)
            missed = set(missed)
            self.example = next((line for line in lines if line in missed), self.example)[:300]
        read = bool(twins) or bool(fast)
        if not read:
            first = next((line for line in lines if line.strip()), None)
            read = first is not None and self.parse(first) is not None
        self.shape_check(buf, limit, lines, slow)     # the layout's lines start with '{'
        self.braced = None
        text = '\n'.join(twins).encode('utf-8', 'surrogateescape')
        if fast:
            text = fast + (b'\n' + text if text else b'')
        return text, read

    def _learn(self, line):
        """The layout of ``line`` (False: none)."""
        doc = _decode(line)
        if doc is not None:
            self.layout = self.layout_of(line, doc) if self.layout_of else False

    def in_windows(self, lines, joined=None):
        """Lines whose time (its key's, a TimeFilter's) is in a counted hour, or that hold a
        stamp's probe, or whose time this cannot read: the others cannot count."""
        if self.time_filter is not None:
            return self.time_filter.keep(lines, self.stamps, joined, self.braced)
        return Reader.in_windows(self, lines, joined)

    def parse(self, line):
        doc = _decode(line)
        return None if doc is None else self.twin_of(doc)

    def braced_chunk(self, region, lines):
        """Whether each line of ``region`` (``lines`` joined) starts with '{' (one count in
        C); ``self.braced`` is then ``region``, for the passes that need it too."""
        self.braced = region if region.count(b'\n{') + region.startswith(b'{') == len(lines) else None
        return self.braced is not None

    def shape_check(self, buf, limit, lines, chosen=()):
        """Lines not starting with '{' (outside those decoded, which counted themselves)."""
        if self.braced is not None or buf.count(b'\n{', 0, limit) + buf.startswith(b'{') == len(lines):
            return      # all do (one count in C)
        starts = list(compress(lines, map(not_, map(bytes.startswith, lines, repeat(b'{')))))
        if not starts:
            return
        skipped = set(map(id, chosen))
        for line in starts:
            if id(line) not in skipped and line.strip():
                self.failed(line)

    def when(self, value):
        """A time value as local combined text: epoch seconds (a number, or text as
        nginx's $msec), ISO-8601 with a zone, or already combined ($time_local, or it in
        brackets: "[$time_local]"). Cached by second: a second's lines share it. A value of
        another type (an array, an object, true: a client's or a broken writer's) is no time."""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return None
        cache = self.times
        value = second_of(value)
        found = cache.get(value)
        if found is None:
            if len(cache) > 65536:
                cache.clear()
            try:
                found = cache[value] = self._when(value)
            except (ValueError, OverflowError, OSError):     # NaN, 1e300: a time no clock shows
                found = None
        return found

    def _when(self, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.clock.epoch(value)
        if isinstance(value, str):
            if value[:1].isdigit() and value.replace('.', '', 1).isdigit():
                return self.clock.epoch(float(value))
            if value[:1] == '[' and value[-1:] == ']':    # "[$time_local]", as configurations in the wild write it
                return self.clock.clf(value[1:-1])
            return self.clock.clf(value) or self.clock.iso8601(value)
        return None

    def client(self, address, forwarded):
        if self.proxies is not None:
            return self.proxies.client(address, forwarded)
        return address


class NginxJson(JsonReader):
    """nginx ``log_format ... escape=json`` (or any JSON object per line)."""

    name = 'nginx_json'

    def __init__(self, settings):
        super(NginxJson, self).__init__(settings)
        keys = dict(NGINX_KEYS)
        for role, key in (getattr(settings, 'log_json_fields', None) or {}).items():
            keys[role] = (key,) + tuple(k for k in keys[role] if k != key)
        self.keys = keys
        self.plans = {}
        if keys['time'][0] == 'time_local':
            self.date_marker = b'"time_local":"'

    def _learn(self, line):
        """The layout of ``line`` (layouts.Layout; False: none) and the time filter
        of its time key."""
        doc = _decode(line)
        if doc is None:
            return          # not this line: the next one tells
        self.time_filter = time_filter(self.keys['time'], doc)
        role_key = dict((role, next((k for k in self.keys[role] if k in doc), None)) for role in LAYOUT_ROLES)
        self.layout = Layout.of(line, doc, role_key)

    def _plan(self, doc, keys):
        """For the keys of ``doc``, in their order: one itemgetter of each role's key, the
        first of the role's names present in the line (a role absent: _ABSENT, None)."""
        if len(self.plans) > 256:
            self.plans.clear()
        chosen = [next((k for k in self.keys[role] if k in doc), _ABSENT) for role in PLAN_ROLES]
        plan = self.plans[keys] = itemgetter(*chosen)
        return plan

    def twin_of(self, doc):
        keys = tuple(doc)
        plan = self.plans.get(keys) or self._plan(doc, keys)
        doc[_ABSENT] = None
        address, when, request, method, uri, protocol, status, size, referer, agent, forwarded = plan(doc)
        when = self.when(when)
        if address is None or address == '' or when is None:
            return None
        if request is None:
            if method is None or uri is None:
                return None
            request = '%s %s%s' % (method, uri, '' if protocol is None else ' ' + protocol)
        if self.proxies is not None:
            address = self.proxies.client(str(address), forwarded)
            if address is None:
                return None         # from no one: only trusted proxies (proxies.py)
        values = (address, request, status, size, referer, agent)
        if (all(isinstance(value, str) for value in values) and status and size
                and ESCAPE_TEXT.search(''.join(values)) is None):
            return '%s - - [%s] "%s" %s %s "%s" "%s"' % (address, when, request or '-', status, size, referer or '-', agent or '-')
        return twin(text_field(address), when, text_field(request), text_field(status), text_field(size),
                    text_field(referer), text_field(agent))


def _header(headers, name):
    values = headers.get(name) if isinstance(headers, dict) else None
    if isinstance(values, list):        # a value not text as JSON (escaping.text_field's reason)
        return ', '.join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values) if values else None
    return values


class Caddy(JsonReader):
    """Caddy's access log (``log`` directive, JSON encoder): epoch ``ts``, the request as
    an object with its headers."""

    name = 'caddy'
    layout_of = CaddyLayout.of

    def __init__(self, settings):
        super(Caddy, self).__init__(settings)
        self.time_filter = TimeFilter('ts', 'epoch', flat=False)    # its request is an object

    def twin_of(self, doc):
        if not isinstance(doc.get('request'), dict):
            return None
        request, headers = doc['request'], doc['request'].get('headers')
        if self.proxies is None and isinstance(headers, dict):      # the usual line: times.plain_twin
            agent, referer, when = headers.get('User-Agent'), headers.get('Referer'), self.when(doc.get('ts'))
            if (isinstance(agent, list) and len(agent) == 1 and when is not None and request.get('method') is not None
                    and (referer is None or (isinstance(referer, list) and len(referer) == 1))):
                made = plain_twin(request.get('client_ip') or request.get('remote_ip'), when, request.get('method'),
                                  request.get('uri', ''), request.get('proto', '-'), doc.get('status'), doc.get('size'),
                                  referer and referer[0], agent[0])
                if made is not None:
                    return made
        request, when = doc['request'], self.when(doc.get('ts'))
        address = request.get('client_ip') or request.get('remote_ip')
        if address is None or when is None or request.get('method') is None:
            return None
        headers = request.get('headers') or {}
        address = self.client(str(address), _header(headers, 'X-Forwarded-For'))
        if address is None:
            return None
        line = '%s %s %s' % (request.get('method'), request.get('uri', ''), request.get('proto', '-'))
        return twin(text_field(address), when, text_field(line), text_field(doc.get('status')),
                    text_field(doc.get('size')), text_field(_header(headers, 'Referer')),
                    text_field(_header(headers, 'User-Agent')))


class TraefikJson(JsonReader):
    """Traefik's access log with ``format: json`` (headers kept as request_<Name>)."""

    name = 'traefik_json'
    layout_of = Layout.of_traefik

    def __init__(self, settings):
        super(TraefikJson, self).__init__(settings)
        self.time_filter = TimeFilter('StartLocal', 'iso')      # the time the twin takes first

    def twin_of(self, doc):
        when = self.when(doc.get('StartLocal'))
        if self.proxies is None and when is not None and doc.get('RequestMethod') is not None:
            made = plain_twin(doc.get('ClientHost'), when, doc.get('RequestMethod'), doc.get('RequestPath', ''),
                              doc.get('RequestProtocol', '-'), doc.get('DownstreamStatus', doc.get('OriginStatus')),
                              doc.get('DownstreamContentSize'), doc.get('request_Referer'), doc.get('request_User-Agent'))
            if made is not None:
                return made
        address = doc.get('ClientHost')
        if not address and isinstance(doc.get('ClientAddr'), str):
            address = doc['ClientAddr'].rpartition(':')[0].strip('[]') or None
        when = self.when(doc.get('StartLocal')) or self.when(doc.get('StartUTC'))
        if address is None or when is None or doc.get('RequestMethod') is None:
            return None
        address = self.client(str(address), doc.get('request_X-Forwarded-For'))
        if address is None:
            return None
        request = '%s %s %s' % (doc.get('RequestMethod'), doc.get('RequestPath', ''), doc.get('RequestProtocol', '-'))
        status = doc.get('DownstreamStatus', doc.get('OriginStatus'))
        return twin(text_field(address), when, text_field(request), text_field(status),
                    text_field(doc.get('DownstreamContentSize')), text_field(doc.get('request_Referer')),
                    text_field(doc.get('request_User-Agent')))


CLASSES = {'nginx_json': NginxJson, 'caddy': Caddy, 'traefik_json': TraefikJson}


_LAST = [None, None]        # the last line auto asked of, and its object


def _decoded(line):
    """_decode, remembering the last line: auto asks each JSON format of one line in turn."""
    if _LAST[0] is not line:
        _LAST[:] = [line, _decode(line)]
    return _LAST[1]


def _field(value):
    """An address field's value as bytes ('-' where a line of the format has none)."""
    return value.encode('utf-8', 'surrogateescape') if isinstance(value, str) and value else b'-'


def _is_caddy(doc):
    return 'ts' in doc and isinstance(doc.get('request'), dict)


def _is_traefik(doc):
    return ('StartUTC' in doc or 'ClientAddr' in doc) and 'RequestMethod' in doc


def _caddy_address(line):
    doc = _decoded(line)
    if doc is None or not _is_caddy(doc):
        return None
    return _field(doc['request'].get('client_ip') or doc['request'].get('remote_ip'))


def _traefik_address(line):
    doc = _decoded(line)
    if doc is None or not _is_traefik(doc):
        return None
    host = doc.get('ClientHost')
    if not host and isinstance(doc.get('ClientAddr'), str):
        host = doc['ClientAddr'].rpartition(':')[0].strip('[]')
    return _field(host)


def _nginx_address(line):
    doc = _decoded(line)
    if doc is None or _is_caddy(doc) or _is_traefik(doc):
        return None
    if (any(k in doc for k in NGINX_KEYS['time'])
            and (any(k in doc for k in NGINX_KEYS['request']) or any(k in doc for k in NGINX_KEYS['method']))):
        return next((_field(doc[k]) for k in NGINX_KEYS['address'] if k in doc), None)
    return None


# auto's tests (formats/choice.py): a line's address field in the format, None for a line of another.
ADDRESSES = [('nginx_json', _nginx_address), ('caddy', _caddy_address), ('traefik_json', _traefik_address)]
