# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON formats of formats.py: nginx JSON (any key order, usual key names, others by
``log_json_fields``), Caddy's access log and Traefik's JSON access log; and the trusted
proxies whose X-Forwarded-For names the client.

Only the lines formats.Reader.candidates keeps are decoded (json.loads, in C); the rest
are only checked to start with '{'."""

from __future__ import absolute_import, division, print_function

import json
from itertools import compress, repeat
from operator import not_

from .formats import Reader, text_field, twin

__metaclass__ = type

# nginx_json: the key names recognised by default, first found wins (issue 27).
NGINX_KEYS = {
    'address': ('remote_addr', 'clientip', 'client_ip', 'client', 'remote_ip', 'ip'),
    'time': ('time_local', 'time_iso8601', '@timestamp', 'timestamp', 'time', 'date', 'msec'),
    'request': ('request',),
    'method': ('request_method',),
    'uri': ('request_uri', 'uri', 'path', 'url'),
    'protocol': ('server_protocol', 'protocol'),
    'status': ('status',),
    'bytes': ('body_bytes_sent', 'bytes_sent', 'size', 'bytes'),
    'referer': ('http_referer', 'http_referrer', 'referer', 'referrer'),
    'user_agent': ('http_user_agent', 'user_agent', 'agent', 'ua'),
    'forwarded_for': ('http_x_forwarded_for', 'x_forwarded_for'),
}
ROLES = tuple(sorted(NGINX_KEYS))


def _decode(line):
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class JsonReader(Reader):
    json = True

    def shape_check(self, buf, limit, lines, chosen=()):
        """Lines not starting with '{' (outside those decoded, which counted themselves)."""
        starts = list(compress(lines, map(not_, map(bytes.startswith, lines, repeat(b'{')))))
        if not starts:
            return
        skipped = set(map(id, chosen))
        for line in starts:
            if id(line) not in skipped and line.strip():
                self._failed(line)

    def when(self, value):
        """A time value as local combined text: epoch seconds (a number, or text as
        nginx's $msec), ISO-8601 with a zone, or already combined ($time_local)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.clock.epoch(value)
        if isinstance(value, str):
            if value[:1].isdigit() and value.replace('.', '', 1).isdigit():
                return self.clock.epoch(float(value))
            return self.clock.clf(value) or self.clock.iso8601(value)
        return None

    def client(self, address, forwarded):
        if self.proxies is not None and forwarded:
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

    def _first(self, doc, role):
        for key in self.keys[role]:
            value = doc.get(key)
            if value is not None and value != '':
                return value
        return None

    def parse(self, line):
        doc = _decode(line)
        if doc is None:
            return None
        first = self._first
        address, when = first(doc, 'address'), self.when(first(doc, 'time'))
        if address is None or when is None:
            return None
        request = first(doc, 'request')
        if request is None:
            method, uri = first(doc, 'method'), first(doc, 'uri')
            if method is None or uri is None:
                return None
            protocol = first(doc, 'protocol')
            request = '%s %s%s' % (method, uri, '' if protocol is None else ' ' + protocol)
        address = self.client(str(address), first(doc, 'forwarded_for'))
        return twin(text_field(address), when, text_field(request), text_field(first(doc, 'status')),
                    text_field(first(doc, 'bytes')), text_field(first(doc, 'referer')), text_field(first(doc, 'user_agent')))


def _header(headers, name):
    values = headers.get(name) if isinstance(headers, dict) else None
    if isinstance(values, list):
        return ', '.join(str(v) for v in values) if values else None
    return values


class Caddy(JsonReader):
    """Caddy's access log (``log`` directive, JSON encoder): epoch ``ts``, the request as
    an object with its headers."""

    name = 'caddy'

    def parse(self, line):
        doc = _decode(line)
        if doc is None or not isinstance(doc.get('request'), dict):
            return None
        request, when = doc['request'], self.when(doc.get('ts'))
        address = request.get('client_ip') or request.get('remote_ip')
        if address is None or when is None or request.get('method') is None:
            return None
        headers = request.get('headers') or {}
        address = self.client(str(address), _header(headers, 'X-Forwarded-For'))
        line = '%s %s %s' % (request.get('method'), request.get('uri', ''), request.get('proto', '-'))
        return twin(text_field(address), when, text_field(line), text_field(doc.get('status')),
                    text_field(doc.get('size')), text_field(_header(headers, 'Referer')),
                    text_field(_header(headers, 'User-Agent')))


class TraefikJson(JsonReader):
    """Traefik's access log with ``format: json`` (headers kept as request_<Name>)."""

    name = 'traefik_json'

    def parse(self, line):
        doc = _decode(line)
        if doc is None:
            return None
        address = doc.get('ClientHost')
        if not address and isinstance(doc.get('ClientAddr'), str):
            address = doc['ClientAddr'].rpartition(':')[0].strip('[]') or None
        when = self.when(doc.get('StartLocal')) or self.when(doc.get('StartUTC'))
        if address is None or when is None or doc.get('RequestMethod') is None:
            return None
        address = self.client(str(address), doc.get('request_X-Forwarded-For'))
        request = '%s %s %s' % (doc.get('RequestMethod'), doc.get('RequestPath', ''), doc.get('RequestProtocol', '-'))
        status = doc.get('DownstreamStatus', doc.get('OriginStatus'))
        return twin(text_field(address), when, text_field(request), text_field(status),
                    text_field(doc.get('DownstreamContentSize')), text_field(doc.get('request_Referer')),
                    text_field(doc.get('request_User-Agent')))


CLASSES = {'nginx_json': NginxJson, 'caddy': Caddy, 'traefik_json': TraefikJson}


def _is_caddy(line):
    doc = _decode(line)
    return doc is not None and 'ts' in doc and isinstance(doc.get('request'), dict)


def _is_traefik(line):
    doc = _decode(line)
    return doc is not None and ('StartUTC' in doc or 'ClientAddr' in doc) and 'RequestMethod' in doc


def _is_nginx(line):
    doc = _decode(line)
    if doc is None or _is_caddy(line) or _is_traefik(line):
        return False
    return (any(k in doc for k in NGINX_KEYS['address']) and any(k in doc for k in NGINX_KEYS['time'])
            and (any(k in doc for k in NGINX_KEYS['request']) or any(k in doc for k in NGINX_KEYS['method'])))


DETECTORS = [('nginx_json', _is_nginx), ('caddy', _is_caddy), ('traefik_json', _is_traefik)]


class TrustedProxies:
    """``trusted_proxies``: when the logged client is one of them, the client is the
    right-most X-Forwarded-For address that is not (nginx's real_ip_recursive); never the
    left-most, which the client writes. An entry that is no address ends the walk: the
    client is then the trusted proxy that passed it on."""

    def __init__(self, networks):
        import ipaddress
        self._address = ipaddress.ip_address
        self.networks = [ipaddress.ip_network(n, strict=False) for n in networks]
        self.cache = {}

    def trusted(self, text):
        found = self.cache.get(text)
        if found is None:
            try:
                address = self._address(text.strip())
            except ValueError:
                found = 'invalid'
            else:
                found = 'yes' if any(address in n for n in self.networks if n.version == address.version) else 'no'
            if len(self.cache) > 65536:
                self.cache.clear()
            self.cache[text] = found
        return found

    def client(self, address, forwarded):
        if self.trusted(address) != 'yes':
            return address
        for entry in reversed(str(forwarded).split(',')):
            entry = entry.strip()
            verdict = self.trusted(entry)
            if verdict == 'invalid':
                return address
            address = entry
            if verdict == 'no':
                return address
        return address
