# -*- coding: utf-8 -*-
"""Combined log lines rendered into the other formats the command reads (issue 27), each
with its combined twin: the line the format's line must count as (a field the format does
not log is '-'). For the twin tests, the property test and the benchmark. Time zone: the
process's local one, as the combined lines were written in it."""

import json
import re
import time

MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')
COMBINED = re.compile(br'^(\S+) (\S+) (\S+) \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([-+])(\d{2})(\d{2})\] '
                      br'"([^"\\]*)" (\d{3}) (\d+|-) "([^"\\]*)" "([^"\\]*)"$')
FORMATS = ('vhost_combined', 'nginx_json', 'caddy', 'traefik', 'traefik_json', 'haproxy', 'w3c')
W3C_HEADER = (b'#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n#Date: 2026-01-01 00:00:00\n'
              b'#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) '
              b'cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n')


class Entry:
    def __init__(self, match):
        g = [x.decode('utf-8', 'surrogateescape') for x in match.groups()]
        self.address, self.ident, self.user = g[0], g[1], g[2]
        day, month, year, hour, minute, second, sign, oh, om = g[3:12]
        self.clock = '%s/%s/%s:%s:%s:%s' % (day, month, year, hour, minute, second)
        self.zone = sign + oh + om
        offset = (int(oh) * 3600 + int(om) * 60) * (-1 if sign == '-' else 1)
        import calendar
        clock = calendar.timegm((int(year), MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second)))
        # nginx writes the local clock with the offset cut to whole minutes (C's division): where the
        # zone's offset has seconds, the instant is the clock less the whole offset.
        local = time.localtime(clock - offset).tm_gmtoff
        self.epoch = clock - (local if local % 60 and int(local / 60) * 60 == offset else offset)
        self.request, self.status, self.size, self.referer, self.agent = g[12:17]
        self.line = match.group(0)


def parse(line):
    match = COMBINED.match(line)
    return Entry(match) if match else None


def _iso(epoch, utc=True, fraction='.123456789'):
    if utc:
        return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(epoch)) + fraction + 'Z'
    t = time.localtime(epoch)
    minutes = int(t.tm_gmtoff / 60)     # as nginx and Go write it: the offset's seconds cut
    return time.strftime('%Y-%m-%dT%H:%M:%S', t) + '%s%02d:%02d' % ('+' if minutes >= 0 else '-', abs(minutes) // 60, abs(minutes) % 60)


def _b(text):
    return text.encode('utf-8', 'surrogateescape')


def _twin(e, request=None, size=None, referer=None, agent=None, user=None):
    return _b('%s %s %s [%s %s] "%s" %s %s "%s" "%s"' % (
        e.address, '-' if user is not None else e.ident, e.user if user is None else user, e.clock, e.zone,
        e.request if request is None else request, e.status, e.size if size is None else size,
        e.referer if referer is None else referer, e.agent if agent is None else agent))


def render(fmt, e, style=0):
    """(the line in ``fmt``, its combined twin), bytes without newlines. ``style`` picks one
    of a format's variants (nginx_json: key names and time forms)."""
    if fmt == 'vhost_combined':
        return b'jobs.example.com:443 ' + e.line, e.line
    if fmt == 'traefik':
        return e.line + b' 7 "web@docker" "http://10.0.0.2:80" 3ms', e.line
    twin = _twin(e, user='-')
    if fmt == 'nginx_json':
        doc = {'remote_addr': e.address, 'status': e.status, 'body_bytes_sent': e.size,
               'http_referer': '' if e.referer == '-' else e.referer, 'http_user_agent': e.agent}
        parts = e.request.split(' ')
        if style % 3 == 1 and len(parts) == 3:
            doc.update(request_method=parts[0], request_uri=parts[1], server_protocol=parts[2])
            doc['time_iso8601'] = _iso(e.epoch, utc=False)
        else:
            doc['request'] = e.request
            if style % 3 == 2:
                doc['msec'] = '%d.%03d' % (e.epoch, style % 1000)
            elif (style // 3) % 2:
                doc['time'] = '[%s %s]' % (e.clock, e.zone)     # "time":"[$time_local]", as configurations in the wild write it
            else:
                doc['time_local'] = '%s %s' % (e.clock, e.zone)
        if style % 2:
            doc = dict(reversed(list(doc.items())))      # any key order
        return _b(json.dumps(doc, ensure_ascii=False, separators=(',', ':'))), twin
    if fmt == 'caddy':
        parts = e.request.split(' ', 2)
        if len(parts) != 3:
            return None, None
        headers = {'User-Agent': [e.agent], 'Accept': ['*/*']}
        if e.referer != '-':
            headers['Referer'] = [e.referer]
        doc = {'level': 'info', 'ts': e.epoch + 0.5241024, 'logger': 'http.log.access', 'msg': 'handled request',
               'request': {'remote_ip': e.address, 'remote_port': '41342', 'client_ip': e.address, 'proto': parts[2],
                           'method': parts[0], 'host': 'jobs.example', 'uri': parts[1], 'headers': headers},
               'bytes_read': 0, 'user_id': '', 'duration': 0.0009, 'size': int(e.size), 'status': int(e.status)}
        return _b(json.dumps(doc, ensure_ascii=False, separators=(',', ':'))), twin
    if fmt == 'traefik_json':
        parts = e.request.split(' ', 2)
        if len(parts) != 3:
            return None, None
        doc = {'ClientAddr': '%s:53944' % e.address if ':' not in e.address else '[%s]:53944' % e.address,
               'ClientHost': e.address, 'DownstreamContentSize': int(e.size), 'DownstreamStatus': int(e.status),
               'RequestMethod': parts[0], 'RequestPath': parts[1], 'RequestProtocol': parts[2],
               'StartUTC': _iso(e.epoch), 'StartLocal': _iso(e.epoch, utc=False), 'request_User-Agent': e.agent,
               'RouterName': 'web@docker', 'level': 'info', 'msg': ''}
        if e.referer != '-':
            doc['request_Referer'] = e.referer
        return _b(json.dumps(doc, ensure_ascii=False, separators=(',', ':'))), twin
    if fmt == 'haproxy':
        if '|' in e.agent or '}' in e.agent or '{' in e.agent:
            return None, None
        prefix = 'Nov 21 04:13:43 lb haproxy[4242]: ' if style % 2 else ''
        line = '%s%s:41342 [%s.%03d] fe be/srv1 10/0/30/69/109 %s %s - - ---- 1/1/1/1/0 0/0 {%s|jobs.example} "%s"' % (
            prefix, e.address, e.clock, style % 1000, e.status, e.size, e.agent, e.request)
        return _b(line), _twin(e, referer='-', user='-')
    if fmt == 'w3c':
        parts = e.request.split(' ')
        if len(parts) != 3 or ' ' in e.referer:
            return None, None
        stem, question, query = parts[1].partition('?')
        agent = e.agent.replace(' ', '+')
        line = '%s %s 10.0.0.1 %s %s %s 443 - %s %s %s %s 0 0 15' % (
            time.strftime('%Y-%m-%d', time.gmtime(e.epoch)), time.strftime('%H:%M:%S', time.gmtime(e.epoch)),
            parts[0], stem, query if question else '-', e.address, agent, e.referer, e.status)
        request = '%s %s' % (parts[0], stem + ('?' + query if question else ''))
        return _b(line), _twin(e, request=request, size='-', agent=agent, user='-')
    raise ValueError(fmt)


def render_log(fmt, combined, style=0, vary=True):
    """(the log in ``fmt``, its twin log) of the combined log bytes ``combined``: lines
    that are not combined lines, or that the format cannot carry, are left out of both.
    With ``vary``, each line in another variant (key names, order, time form) than the
    previous; without, every line in variant ``style``, as a server writes its log."""
    lines, twins = [], []
    for i, raw in enumerate(combined.split(b'\n')):
        entry = parse(raw)
        if entry is None:
            continue
        line, twin = render(fmt, entry, style + i if vary else style)
        if line is None:
            continue
        lines.append(line)
        twins.append(twin)
    head = W3C_HEADER if fmt == 'w3c' else b''
    return head + b''.join(item + b'\n' for item in lines), b''.join(t + b'\n' for t in twins)
