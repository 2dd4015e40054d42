# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The log formats as settings name them: ``log_format``'s choices, a log's format
(``log_formats`` overrides), nginx JSON's roles and key names (``log_json_fields``).

Here, not in the formats package, so that the settings' checks and a combined run load
none of the formats' code (formats/ reads the logs in these formats)."""

from __future__ import absolute_import, division, print_function

import re
import socket

from ..base.errors import bad_option

__metaclass__ = type

FORMATS = ('combined', 'vhost_combined', 'nginx_json', 'caddy', 'traefik', 'traefik_json', 'haproxy', 'w3c')
CHOICES = FORMATS + ('auto',)

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
JSON_ROLES = tuple(sorted(NGINX_KEYS))


def format_of(settings, path):
    """The format setting for ``path``: its ``log_formats`` entry (LOG=FORMAT), else ``log_format``."""
    for item in settings.log_formats or ():
        log, dummy, name = item.rpartition('=')
        if log == path:
            return name
    return settings.log_format


def parse_overrides(items, where='log_formats'):
    """Check ``LOG=FORMAT`` items."""
    for item in items or ():
        log, equals, name = item.rpartition('=')
        if not equals or not log or name not in CHOICES:
            raise bad_option('%s: %r must be LOG=FORMAT with FORMAT one of %s' % (where, item, ', '.join(CHOICES)))


# A combined line, as nginx and Apache write it: auto's test, and the warning of a log read as
# combined that is another format (drivers/format_hint.py), which a combined run pays for. It
# holds by the fields a client cannot write (the address, the time, the status): the Basic-auth
# user is the client's, which nginx writes unescaped (blanks and brackets too, never a quote), so
# the time is the one just before the request's opening quote (Apache writes an empty user ""); in
# the quoted fields nginx escapes a quote as \x22, Apache as \" (issue 44: a user 'a b' made a
# scraper's lines another format's).
TIME = br'\[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [-+]\d{4}\]'
QUOTED = br'"[^"\\]*(?:\\.[^"\\]*)*"'        # unrolled: a run of plain bytes at a time
_COMBINED = re.compile(br'^(\S+) \S+ (?:""|[^"\\]*(?:\\.[^"\\]*)*) ' + TIME + br' ' + QUOTED + br' \d{3} \S+ ' + QUOTED + br' ' + QUOTED + br'$')
# The usual line, a user without a blank and fields without an escape: the same test, 4 times faster.
_USUAL = re.compile(br'^(\S+) \S+ [^\s"\\]+ ' + TIME + br' "[^"\\]*" \d{3} \S+ "[^"\\]*" "[^"\\]*"$')


def combined_address(line):
    """The address field of a combined line (bytes), None for a line of another shape."""
    line = line.rstrip(b'\r')
    match = _USUAL.match(line) or (line.endswith(b'"') and b'] "' in line and _COMBINED.match(line))
    return match.group(1) if match else None


def looks_combined(line):
    return combined_address(line) is not None


def holds_address(field):
    """Whether a line's address field (bytes) holds an IP address, not a name, 'host:port' or '-'."""
    try:
        text = field.decode('ascii')
    except (UnicodeDecodeError, AttributeError):
        return False
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, text)
            return True
        except (OSError, ValueError):
            pass
    return False
