# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The line formats of formats.py besides vhost_combined: Traefik's common log format,
HAProxy's ``option httplog`` and the W3C extended format IIS writes."""

from __future__ import absolute_import, division, print_function

import os
import re

from .formats import HEAD_BYTES, Reader, escaped

__metaclass__ = type


_TRAEFIK = re.compile(br'^(\S+ \S+ \S+ \[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [-+]\d{4}\] "[^"]*" \S+ \S+ "[^"]*" "[^"]*")'
                      br'(?: \d+ "[^"]*" "[^"]*" \d+ms)?\s*$')


class Traefik(Reader):
    """Traefik's common log format: combined, then the requests count, router, server URL
    and duration, which the twin leaves out."""

    name = 'traefik'
    date_marker = b''

    def parse(self, line):
        match = _TRAEFIK.match(line)
        return match.group(1) if match else None


_HAPROXY = re.compile(
    br'(?:^|\s)(\S+):\d+ \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}:\d{2}:\d{2})\.\d+\] +\S+ +\S+ +\S+ +(-?\d+) +\+?(-?\d+) '
    br'+\S+ +\S+ +\S+ +\S+ +\S+ +(?:\{([^}]*)\} +)?(?:\{[^}]*\} +)?"([^"]*)"?\s*$')


class Haproxy(Reader):
    """HAProxy's ``option httplog`` line, with or without a syslog prefix. The user agent is
    the request capture's field ``haproxy_user_agent_capture`` (1-based), else '-'."""

    name = 'haproxy'
    date_marker = b''

    def __init__(self, settings):
        super(Haproxy, self).__init__(settings)
        self.capture = settings.haproxy_user_agent_capture

    def parse(self, line):
        match = _HAPROXY.search(line)
        if match is None:
            return None
        address, day, month, year, clock, status, size, captured, request = match.groups()
        agent = b'-'
        if self.capture and captured is not None:
            fields = captured.split(b'|')
            if len(fields) >= self.capture and fields[self.capture - 1]:
                agent = escaped(fields[self.capture - 1])
        when = self.clock.local_fields(day.decode(), month.decode(), year.decode(), clock.decode()).encode('ascii')
        request = escaped(request) if request else b'-'
        return b'%s - - [%s] "%s" %s %s "-" "%s"' % (escaped(address), when, request, status, size, agent)


class W3C(Reader):
    """The W3C extended log format as IIS writes it: the fields from the last #Fields: line,
    time in UTC; a user agent or referer logged with '+' for spaces is kept as logged."""

    name = 'w3c'
    needs_head = True

    def __init__(self, settings):
        super(W3C, self).__init__(settings)
        self.fields = None
        self.left = None        # (file, offset): where this reader's fields are those in force

    def start_at(self, fd, start):
        """The fields of the last #Fields: line before ``start`` (none at the file's start),
        unless this reader read on to there itself: a forked worker's part, an incremental
        run's or a follower's reading on, each from its own place."""
        if self.left != (os.fstat(fd)[1:3], start):
            self.fields = fields_before(fd, start)

    def stop_at(self, fd, end):
        self.left = (os.fstat(fd)[1:3], end)

    def bind(self, head):
        at = head.rfind(b'#Fields:', 0, head.find(b'\n', head.rfind(b'#Fields:')) if b'#Fields:' in head else 0)
        if at != -1 and (at == 0 or head[at - 1:at] == b'\n'):
            other = self.fresh()
            other.fields = self._fields(head[at:head.find(b'\n', at) if b'\n' in head[at:] else len(head)])
            return other
        return self

    @staticmethod
    def _fields(line):
        return dict((name, i) for i, name in enumerate(line[len(b'#Fields:'):].split()))

    def translate(self, buf, limit):
        chunk = buf[:limit] if limit is not None and limit < len(buf) else buf
        if b'#' not in chunk:
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

    def parse(self, line):
        fields = self.fields
        if fields is None:
            return None
        values = line.rstrip(b'\r').split(b' ')
        if len(values) != len(fields):
            return None

        def get(name):
            at = fields.get(name)
            return values[at] if at is not None else b'-'
        try:
            year, month, day = get(b'date').split(b'-')
            hour, minute, second = get(b'time').split(b':')
            when = self.clock.utc_fields(int(year), int(month), int(day), int(hour), int(minute), int(second[:2]))
        except ValueError:
            return None
        query = get(b'cs-uri-query')
        request = get(b'cs-method') + b' ' + get(b'cs-uri-stem') + (b'?' + query if query != b'-' else b'')
        version = get(b'cs-version')
        if version != b'-':
            request += b' ' + version
        return b'%s - %s [%s] "%s" %s %s "%s" "%s"' % (
            escaped(get(b'c-ip')), escaped(get(b'cs-username')), when.encode('ascii'), escaped(request),
            get(b'sc-status'), get(b'sc-bytes'), escaped(get(b'cs(Referer)')), escaped(get(b'cs(User-Agent)')))


def fields_before(fd, start):
    """W3C._fields of the last line starting with #Fields: that ends before ``start``, found
    searching back from it a block at a time; None when there is none."""
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
        line = os.pread(fd, min(start - begin, 1 << 16), begin).split(b'\n', 1)[0]
        return W3C._fields(line.rstrip(b'\r'))
    return None


CLASSES = {'traefik': Traefik, 'haproxy': Haproxy, 'w3c': W3C}
