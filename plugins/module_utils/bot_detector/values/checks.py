# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of settings' values that need more than their row (settings.py calls them), the fleet
store's URL read (and shown without its password), and the nearest known name to a mistyped
one, which the config file and the role both suggest."""

from __future__ import absolute_import, division, print_function

import re
import socket

from ..base.errors import bad_option
from .log_formats import JSON_ROLES

__metaclass__ = type


def check_server_ips(items):
    """Each server address is an IPv4 or IPv6 address: a typo would leave the server's own
    busy address to be blocked. Raises a bad option (exit 2) naming the first that is not."""
    for item in items or ():
        for family in (socket.AF_INET, socket.AF_INET6):
            try:
                socket.inet_pton(family, item.strip())
                break
            except (OSError, ValueError):
                continue
        else:
            raise bad_option('server_ips: %r is not an IP address' % (item,))


def check_formats(json_fields, trusted_proxies):
    """nginx JSON's key names and the trusted proxies' networks."""
    for role, key in (json_fields or {}).items():
        if role not in JSON_ROLES or not isinstance(key, str) or not key:
            raise bad_option('log_json_fields: %r must map one of %s to a key name' % (role, ', '.join(JSON_ROLES)))
    for item in trusted_proxies or ():
        import ipaddress        # only runs behind trusted proxies
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise bad_option('trusted_proxies: %r is not an address or CIDR network' % (item,))


# A fleet name's characters that glob patterns (the store role's ACL key pattern ~{NAME:*) or the
# keys' hash tag ({NAME:STAMP}) read: any of them lets one fleet's user reach another's keys.
FLEET_NAME_REFUSED = ('*', '?', '[', ']', '\\', '{', '}', ':')


def check_fleet(settings):
    """The fleet store's URL, and the names that go into its keys (exit 2 naming the fault)."""
    name = settings.fleet_name
    if name is not None and (not name or any(c in name for c in FLEET_NAME_REFUSED) or any(c.isspace() for c in name)):
        raise bad_option('fleet_name: must not hold %s or blanks (the ACL\'s key pattern ~{NAME:* and the keys\' '
                         'hash tag), got %r' % (' '.join(FLEET_NAME_REFUSED), name))
    host = settings.fleet_host
    # A blank would meet the store's own fields ('NAME twice' in a window's names hash); a control
    # character reaches the warnings that name the host.
    if host is not None and (not host or any(c in host for c in '{}') or any(c.isspace() or not c.isprintable() for c in host)):
        raise bad_option('fleet_host: must not hold braces, blanks or control characters, got %r' % (host,))
    if settings.fleet_store is not None:
        store = fleet_store_url(settings.fleet_store)
        if store['password'] is not None and settings.fleet_store_password_file:
            raise bad_option('fleet_store: the password is given twice, in the URL and in fleet_store_password_file')
    elif settings.fleet_store_password_file or settings.fleet_host is not None:
        raise bad_option('%s: needs fleet_store' % ('fleet_host' if settings.fleet_host else 'fleet_store_password_file'))


def redact_url(url):
    """``url`` with its password, if any, as ``***``: what logs, results and --status show. In any
    spelling: the user part runs to the last '@', and when it holds '/', '?', '#', '[' or ']' (a raw
    password a parser would cut) all but the scheme is hidden; a user name other than letters,
    digits and '._-' is hidden too (a password written there), and so is a user part without ':'
    (redis-cli -u reads it as the password), every query value but db's and cluster's, and a
    query field without '='."""
    scheme, sep, rest = url.partition('://')
    if not sep:
        scheme, rest = '', url
    user, at, host = rest.rpartition('@')
    if any(c in user for c in _RESERVED_IN_USER):
        return scheme + sep + '***'     # a password cut by a parser, or an '@' past the host: nothing of it shown
    if at:
        name, colon, dummy = user.partition(':')
        if not _PLAIN_USER.match(name) or not colon:       # no ':': the password, to redis-cli -u
            user = '***'
        else:
            user = name + colon + ('***' if colon else '')
    head, mark, query = host.partition('?')
    if mark:
        shown = []
        for field in query.split('&'):
            key, equals, dummy = field.partition('=')
            shown.append(field if key in ('db', 'cluster') else key + equals + '***' if equals else '***')
        host = head + mark + '&'.join(shown)
    return scheme + sep + user + at + host


_PLAIN_USER = re.compile(r'[A-Za-z0-9._-]*\Z')
# Characters a URL reserves that end its user part: a password holding one, written raw, is cut
# there by every URL parser (the rest read as a path or a query), so it is refused, never guessed.
_RESERVED_IN_USER = '/?#[]'


def fleet_store_url(url):
    """{scheme, host, port, path (unix), db, username, password, tls, cluster (True, False or None:
    ask the server)} of a fleet store URL; a bad one: one line naming it (password hidden), exit 2."""
    from urllib.parse import parse_qs, unquote, urlsplit   # only with a fleet store
    shown = redact_url(url)
    user = url.partition('://')[2].rpartition('@')[0]
    if any(c in user for c in _RESERVED_IN_USER):
        raise bad_option('fleet_store: %s: the user or password holds one of / ? # [ ] unencoded: write it percent-encoded '
                         '(%%2F for /) or give the password in fleet_store_password_file' % shown)
    try:
        parts = urlsplit(url)
        port = parts.port
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        # The parser's words may quote a piece of the user part (a port read from a password):
        # they are shown only when the URL holds nothing secret.
        detail = str(exc) if shown == url else 'a bad port, address or character'
        raise bad_option('fleet_store: %s is not a valid URL (%s)' % (shown, detail))
    store = {'scheme': parts.scheme, 'host': parts.hostname, 'port': port, 'path': None, 'tls': parts.scheme == 'rediss',
             'username': unquote(parts.username) if parts.username else None,
             'password': unquote(parts.password) if parts.password is not None else None}
    unknown = sorted(set(query) - {'db', 'cluster'})
    if parts.scheme not in ('redis', 'rediss', 'unix'):
        why = 'the scheme must be redis://, rediss:// (TLS) or unix://'
    elif unknown:
        why = 'unknown parameter %s (known: db, cluster)' % unknown[0]
    elif parts.scheme == 'unix' and (not parts.path or parts.path.rstrip('/') == ''):
        why = 'unix:// needs the socket\'s path: unix:///run/redis/redis.sock'
    elif parts.scheme != 'unix' and not parts.hostname:
        why = 'no host: redis://HOST:PORT/DB'
    elif parts.scheme != 'unix' and parts.path.strip('/') and not parts.path.strip('/').isdigit():
        why = 'the database must be a number (/0 to /15), got %r' % parts.path.strip('/')
    elif any(len(v) != 1 for v in query.values()) or query.get('cluster', ['no'])[0] not in ('yes', 'no', 'auto'):
        why = 'cluster must be yes, no or auto, once'
    elif 'db' in query and not query['db'][0].isdigit():
        why = 'db must be a number, got %r' % query['db'][0]
    else:
        why = None
    if why:
        raise bad_option('fleet_store: %s: %s' % (shown, why))
    if parts.scheme == 'unix':
        store['path'], store['db'] = parts.path, int(query.get('db', ['0'])[0])
    else:
        store['port'] = port or 6379
        store['db'] = int(parts.path.strip('/') or query.get('db', ['0'])[0])
    store['cluster'] = {'yes': True, 'no': False}.get(query.get('cluster', ['auto'])[0])
    if store['cluster'] and store['db']:
        raise bad_option('fleet_store: %s: a Redis Cluster has database 0 only' % shown)
    return store


def nearest(name, known):
    """The known name nearest to ``name`` (a typo's intended one), or None."""
    import difflib      # only a mistyped name pays for it
    near = difflib.get_close_matches(name, sorted(known), 1, 0.7)
    return near[0] if near else None
