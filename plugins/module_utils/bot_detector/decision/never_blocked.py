# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is never blocked, whatever the blocklist or the fleet says: the server's own addresses
(``server_ips``, else what ``hostname -i`` prints), loopback (127.0.0.0/8, ::1), the
allow-list's addresses and networks (``exclusions_file``; its other lines are substrings for
the detection, nothing here) and the trusted proxies (``trusted_proxies``: a balancer blocked
takes the site down). One predicate, used by both enforcement backends, the fleet and the
answers, so that no spelling of an address slips past one of them: upper case, any zero
compression, a /32 or /128, an IPv4-mapped IPv6 address in any spelling (its IPv4 address).

An allow-list line or trusted proxy wider than the enforcement's limits
(``enforcement_min_prefix_v4``/``_v6``; a typo such as 192.0.2.20/0; an IPv6 line holding
every IPv4-mapped address, such as ::ffff:0:0/80, as wide as an IPv4 /0) spares no one: it is
left out and named in ``too_wide`` (the callers warn, and count it in the metrics).
"""

from __future__ import absolute_import, division, print_function

import errno
import os
import re
import socket
import stat

from ..base.errors import BotDetectorError
from ..base.messages import NEVER_BLOCKED_TOO_WIDE
from ..base.text import named_by_start, printable, to_bytes, to_text
from .addresses import server_addresses
from .ranges import cidrs

__metaclass__ = type

LOOPBACK = (b'127.0.0.0/8', b'::1')
BITS = {4: 32, 6: 128}
_IPV4 = re.compile(r'(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}'
                   r'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z')
_PREFIX = re.compile(r'(?:[0-9]|[1-9][0-9]|1[01][0-9]|12[0-8])\Z')
_NULL_DEVICE = (1, 3)       # /dev/null's major and minor: an empty list, as the reference's grep reads it


def span(line):
    """One line (bytes, blanks around it ignored) as (version, first, last, prefix length),
    the addresses as integers, or None when it is not an address or CIDR network. An
    IPv4-mapped IPv6 entry (::ffff:192.0.2.7, ::ffff:c000:207, ::ffff:192.0.2.0/120) is its
    IPv4 address or network: packets and nginx's $remote_addr carry an IPv4 client as IPv4.
    Host bits set in a network (192.0.2.7/24) are cleared. The unspecified address, a /0
    network (every client) and a zone (fe80::1%eth0) are not. Integers and the socket module,
    not ipaddress, whose objects cost a million-line blocklist a minute."""
    try:
        text = line.strip().decode('ascii')
    except UnicodeDecodeError:
        return None
    address, slash, prefix = text.partition('/')
    if slash and not _PREFIX.match(prefix):
        return None
    length = int(prefix) if slash else None
    if ':' not in address:
        if not _IPV4.match(address):
            return None
        version, bits, value = 4, 32, int.from_bytes(socket.inet_aton(address), 'big')
    else:
        if '%' in address:      # a zone: a link's own address, no client's
            return None
        try:
            value = int.from_bytes(socket.inet_pton(socket.AF_INET6, address), 'big')
        except (OSError, ValueError):
            return None
        version, bits = 6, 128
        if value >> 32 == 0xffff and (length is None or length >= 96):
            version, bits, value = 4, 32, value & 0xffffffff
            length = None if length is None else length - 96
    length = bits if length is None else length
    if length > bits or length == 0:
        return None
    host = bits - length
    first = value >> host << host
    last = first | ((1 << host) - 1)
    if first == last == 0:
        return None
    return version, first, last, length


MAPPED = (0xffff << 32, (0xffff << 32) | 0xffffffff)      # ::ffff:0:0/96, every IPv4 client spelled as IPv6


def wider(parsed, min_prefix):
    """Whether the span ``parsed`` (span()) is wider than ``min_prefix`` {4: length, 6: length}:
    more addresses than the limit, or an IPv6 network holding all of ::ffff:0:0/96 (::ffff:0:0/80,
    ::/64: every IPv4 client spelled as IPv6, as wide as an IPv4 /0)."""
    version, first, last = parsed[:3]
    return last - first + 1 > 1 << (BITS[version] - min_prefix[version]) or \
        version == 6 and first <= MAPPED[0] and MAPPED[1] <= last


def _everyone(line):
    """Whether ``line`` is a /0 network (or a mapped ::ffff:0:0/96): every client of a version."""
    text = line.strip()
    return text.endswith(b'/0') and span(text[:-1] + b'1') is not None \
        or text.endswith(b'/96') and span(text[:-2] + b'97') is not None and span(text[:-2] + b'97')[0] == 4


def merge(spans):
    """``spans`` (first, last) sorted and merged where they overlap or touch."""
    merged = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1][1] = last
        else:
            merged.append([first, last])
    return [tuple(piece) for piece in merged]


# The spans of the last few NeverBlocked built, by their lines and span_of: a long-running process (a
# follower) parses an unchanged allow-list once. Few: one a blocklist, a config's lists.
_KEPT, _KEEP = {}, 4


class NeverBlocked:
    """The never-blocked spans of each version (merged), from ``lines`` (the server's addresses,
    loopback: always taken) and ``bounded`` (the allow-list's lines and the trusted proxies: taken
    when no wider than ``min_prefix`` {4: length, 6: length}, else named in ``too_wide``), read
    by ``span_of`` (``span``) when first needed: a sync whose load is in sync reads none.
    ``key`` identifies them all for the enforcement load's digest (text)."""

    def __init__(self, lines, bounded=b'', span_of=None, min_prefix=None):
        # ``bounded``: bytes (the allow-list's content, kept whole: split only when parsed) or lines
        self._bounded = bounded if isinstance(bounded, bytes) else b'\n'.join(bounded)
        self._lines = list(lines)
        self._span_of, self._spans, self._too_wide = span_of or span, None, []
        self.min_prefix = dict(min_prefix or {4: 1, 6: 1})
        self._key = None

    @property
    def key(self):
        if self._key is None:
            import hashlib      # when first asked: a run that only checks addresses needs no digest (3 ms)
            self._key = hashlib.sha256(b'\n'.join(self._lines) + b'\n\0' + self._bounded
                                       + b'\n\0%d,%d' % (self.min_prefix[4], self.min_prefix[6])).hexdigest()[:32]
        return self._key

    @property
    def spans(self):
        """{4: [(first, last)], 6: [...]}, sorted and merged; kept for the process while the lines
        are the same: a follower's sync every few seconds beside a 100,000-line allow-list
        reads and compares it, and parses it only when it changed."""
        if self._spans is not None:
            return self._spans
        # Kept by ``key`` when a caller has asked for it (the enforcement's digest: no second pass over
        # the lines), else by the lines themselves: a run that needs no digest imports no hashlib (3 ms).
        kept = ((self._key, self._span_of) if self._key is not None else
                (b'\n'.join(self._lines), self._bounded, self.min_prefix[4], self.min_prefix[6], self._span_of))
        if kept in _KEPT:
            self._spans, self._too_wide = _KEPT[kept]
            return self._spans
        found = {4: [], 6: []}
        for bounded, lines in ((False, self._lines), (True, self._bounded.split(b'\n'))):
            for line in lines:
                parsed = self._span_of(line)
                if parsed is None:
                    if bounded and _everyone(line):
                        self._too_wide.append(line.strip())
                    continue
                version, first, last = parsed[:3]
                if bounded and wider(parsed, self.min_prefix):
                    self._too_wide.append(line.strip())
                    continue
                found[version].append((first, last))
        self._spans = {version: merge(found[version]) for version in (4, 6)}
        if len(_KEPT) >= _KEEP:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[kept] = (self._spans, self._too_wide)
        return self._spans

    @property
    def too_wide(self):
        """The allow-list lines and trusted proxies left out as wider than the limits (bytes),
        found without parsing the rest: only a line with '/' can be wider than one address."""
        if self._spans is not None:
            return list(self._too_wide)
        return too_wide_lines(_lines_holding(self._bounded, b'/'), self.min_prefix, self._span_of)

    def too_wide_warning(self, who):
        """The one warning naming ``too_wide`` (``who``: 'enforcement', 'precise rules'), or None."""
        return too_wide_warning(who, self.too_wide, self.min_prefix)

    def _at_or_before(self, version, value):
        """The index of the last span starting at or before ``value``, or -1."""
        spans = self.spans[version]
        low, high = 0, len(spans)
        while low < high:
            middle = (low + high) // 2
            if spans[middle][0] <= value:
                low = middle + 1
            else:
                high = middle
        return low - 1

    def covers(self, version, first, last):
        """Whether [first, last] lies wholly inside one never-blocked span."""
        at = self._at_or_before(version, first)
        return at >= 0 and self.spans[version][at][1] >= last

    def network(self, version, first, last):
        """Whether [first, last] holds at least one never-blocked address."""
        spans = self.spans[version]
        at = self._at_or_before(version, last)
        return at >= 0 and spans[at][1] >= first

    def address(self, text):
        """Whether the address ``text`` (bytes or text, in any spelling: 2001:DB8:0::5,
        ::ffff:a09:909, 10.9.9.9/32) is never blocked. A network's text answers whether it
        holds a never-blocked address (``network``); anything else is False."""
        parsed = span(to_bytes(text))
        if parsed is None:
            return False
        version, first, last = parsed[:3]
        return self.covers(version, first, last) if first == last else self.network(version, first, last)

    def split(self, version, pieces):
        """``pieces``, sorted disjoint CIDR spans blocked, as (kept, exempt): the pieces not wholly
        never blocked, and the never-blocked CIDR spans inside them (each narrower than its piece)."""
        spans = self.spans[version]
        kept, inside, at = [], [], 0
        for first, last in pieces:
            while at < len(spans) and spans[at][1] < first:
                at += 1
            if at < len(spans) and spans[at][0] <= first and spans[at][1] >= last:
                continue        # wholly never blocked: not blocked at all
            kept.append((first, last))
            scan = at
            while scan < len(spans) and spans[scan][0] <= last:
                inside.extend(cidrs(version, max(first, spans[scan][0]), min(last, spans[scan][1])))
                scan += 1
        return kept, inside


def _lines_holding(content, needle):
    """The lines of ``content`` that hold ``needle``, found at C speed (a large allow-list has few)."""
    found, position = [], content.find(needle)
    while position != -1:
        start = content.rfind(b'\n', 0, position) + 1
        end = content.find(b'\n', position)
        end = len(content) if end == -1 else end
        found.append(content[start:end])
        position = content.find(needle, end)
    return found


def too_wide_lines(lines, min_prefix, span_of=None):
    """The ``lines`` (bytes) wider than ``min_prefix`` {4: length, 6: length}, /0 included, stripped."""
    found = []
    for line in lines:
        parsed = (span_of or span)(line)
        if parsed is None and _everyone(line) or parsed is not None and wider(parsed, min_prefix):
            found.append(line.strip())
    return found


def too_wide_warning(who, lines, min_prefix):
    """The one warning naming the allow-list ``lines`` too wide (the first 10), or None."""
    if not lines:
        return None
    named = ', '.join(repr(named_by_start(printable(to_text(line)))) for line in lines[:10])
    if len(lines) > 10:
        named += ' and %d more' % (len(lines) - 10)
    return NEVER_BLOCKED_TOO_WIDE % (who, len(lines), 'line or trusted proxy is' if len(lines) == 1 else 'lines or trusted proxies are',
                                     min_prefix[4], min_prefix[6], named)


def without_too_wide(content, min_prefix):
    """(``content`` less its lines wider than ``min_prefix``, those lines): the precise rules'
    allow-list bounded as the enforcement's is. Only lines with '/' are parsed."""
    wide = too_wide_lines(_lines_holding(content, b'/'), min_prefix)
    if not wide:
        return content, []
    gone = set(wide)
    return b'\n'.join(line for line in content.split(b'\n') if line.strip() not in gone), wide


def read_allow_list(path):
    """The allow-list's bytes: a missing file and the null device are empty; one that exists but
    cannot be read, or is no regular file, raises BotDetectorError: sparing no one of it would
    block its clients."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return b''
        raise BotDetectorError('cannot read %s: %s: the allow-list is needed to exempt its clients' % (path, exc.strerror))
    try:
        info = os.fstat(fd)
        if stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == _NULL_DEVICE:
            return b''
        if not stat.S_ISREG(info.st_mode):
            raise BotDetectorError('cannot read %s: not a regular file: the allow-list is needed to exempt its clients' % path)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    except OSError as exc:
        raise BotDetectorError('cannot read %s: %s: the allow-list is needed to exempt its clients' % (path, exc.strerror))
    finally:
        os.close(fd)


def never_blocked(settings, span_of=None, allowed=None):
    """The NeverBlocked of ``settings``: its server addresses (``server_ips``, else ``hostname
    -i``), loopback, its allow-list (``allowed``: its bytes when the caller read them, else read
    here) and its trusted proxies, bounded by the enforcement's minimum prefixes. Each line is
    read by ``span_of`` (default ``span``). An allow-list that exists but cannot be read raises
    BotDetectorError, as ``hostname -i`` failing does."""
    servers = server_addresses() if settings.server_ips is None else [to_bytes(ip) for ip in settings.server_ips]
    if allowed is None:
        allowed = read_allow_list(settings.exclusions_file)
    proxies = [to_bytes(proxy) for proxy in getattr(settings, 'trusted_proxies', None) or ()]
    minimum = {4: getattr(settings, 'enforcement_min_prefix_v4', 1), 6: getattr(settings, 'enforcement_min_prefix_v6', 1)}
    return NeverBlocked(list(LOOPBACK) + servers, b'\n'.join([allowed] + proxies), span_of, minimum)
