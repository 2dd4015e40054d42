# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Addresses and networks as integers, for the precise rules: one parse per field, an
IPv4-mapped IPv6 address (::ffff:a.b.c.d in any spelling) read as the IPv4 address it is,
and list membership that never scans the list entry by entry (Networks)."""

from __future__ import absolute_import, division, print_function

import bisect
import re
import socket
from itertools import repeat
from operator import add, itemgetter, lshift, rshift

__metaclass__ = type

BITS = {4: 32, 6: 128}
_OCTET = br'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
V4 = _V4 = re.compile(br'(?:%s\.){3}%s\Z' % (_OCTET, _OCTET))
_BLANKS = b' \t\r\n\x0b\x0c'


def _v4_int(text):
    return int.from_bytes(socket.inet_aton(text.decode('ascii')), 'big')


def client(field):
    """(version, integer) of a client address (addresses.is_client_address's), a mapped one
    as IPv4; None for anything else (0.0.0.0, ::, ::ffff:0.0.0.0 included)."""
    if _V4.match(field):
        value = _v4_int(field)
        return (4, value) if value else None
    if b':' not in field or b'%' in field:
        return None
    try:    # inet_pton reads what ipaddress.IPv6Address reads, a scope (%) aside, in C
        value = int.from_bytes(socket.inet_pton(socket.AF_INET6, field.decode('ascii')), 'big')
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if value >> 32 == 0xffff:
        value &= 0xffffffff
        return (4, value) if value else None
    return (6, value) if value else None


def network(text):
    """(version, prefix length, first address) of an address or a CIDR network written as
    ipaddress.ip_network reads it (host bits ignored), a mapped network of /96 or longer as
    the IPv4 network; None when it is neither."""
    text = text.strip(_BLANKS)
    if _V4.match(text):
        return 4, 32, _v4_int(text)
    import ipaddress    # a network or an IPv6 address only: a run deciding IPv4 addresses imports none (3 ms)
    try:
        parsed = ipaddress.ip_network(text.decode('ascii'), strict=False)
    except (ValueError, UnicodeDecodeError):
        return None
    version, length, first = parsed.version, parsed.prefixlen, int(parsed.network_address)
    if version == 6 and length >= 96 and first >> 32 == 0xffff:
        return 4, length - 96, first & 0xffffffff
    return version, length, first


def spelling(version, length, first):
    """The key's text: the address alone for a single address, else the network."""
    if version == 4:
        address = socket.inet_ntoa(first.to_bytes(4, 'big'))
    elif first >> 48:       # inet_ntop spells these as ipaddress does (RFC 5952), in C
        address = socket.inet_ntop(socket.AF_INET6, first.to_bytes(16, 'big'))
    else:                   # ::a.b.c.d and ::ffff:0:a.b.c.d, which inet_ntop writes with a dotted quad
        import ipaddress    # these few only
        address = str(ipaddress.IPv6Address(first))
    return (address if length == BITS[version] else '%s/%d' % (address, length)).encode('ascii')


def host_bits_network(text):
    """The network (its spelling) that ``text``, a network written with host bits set
    (203.0.113.0/22), would be (203.0.112.0/22); else None. A typo (a /22 for a /24) would widen
    what is answered or unblocked: the answer lists refuse such an entry, an unblock takes it
    as written (lists/answers.py, lists/removal.py)."""
    text = text.strip(_BLANKS)
    if b'/' not in text:
        return None
    found, written = network(text), network(text.partition(b'/')[0])
    if found is None or written is None or written[2] == found[2]:
        return None
    return spelling(*found)


def address_text(version, number):
    """An address as ipaddress writes it."""
    return spelling(version, BITS[version], number).decode('ascii')


def network_text(version, number, length):
    """'<address>/<length>' of a network as ipaddress writes it (a single address's length too)."""
    return '%s/%d' % (address_text(version, number), length)


def cidrs(version, first, last):
    """The span [first, last] as the fewest CIDR networks, each an integer span (first, last),
    in order: what ipaddress.summarize_address_range gives, by integers (no import, no objects)."""
    found = []
    while first <= last:
        # The widest block starting at ``first``: its trailing zero bits, no more than the span holds.
        size = min((first & -first).bit_length() - 1 if first else BITS[version], (last - first + 1).bit_length() - 1)
        found.append((first, first + (1 << size) - 1))
        first += 1 << size
    return found


def range_networks(version, first, last):
    """[(first address, prefix length)]: the fewest networks that make up [first, last], in order."""
    return [(low, BITS[version] + 1 - (high - low + 1).bit_length()) for low, high in cidrs(version, first, last)]


def grouped(version, value, length):
    """The first address of the network of ``length`` bits holding ``value``."""
    shift = BITS[version] - length
    return value >> shift << shift


def v4_groups(fields, length):
    """(an iterator of group identifiers of plain IPv4 addresses, valid and not 0.0.0.0, in
    order; a function from identifiers to their keys, None when they are the keys): for 8,
    16, 24 and 32 bits the key itself, cut from the text, else the network's first address
    as an integer; C-level maps either way."""
    if length == 32:
        return iter(fields), None
    if length % 8 == 0:
        heads = fields
        for dummy in range(4 - length // 8):
            heads = map(itemgetter(0), map(bytes.rpartition, heads, repeat(b'.')))
        return map(add, heads, repeat(b'.0' * (4 - length // 8) + b'/%d' % length)), None
    shift = 32 - length
    integers = map(int.from_bytes, map(socket.inet_aton, map(bytes.decode, fields)), repeat('big'))

    def keys_of(identifiers):
        texts = map(socket.inet_ntoa, map(int.to_bytes, identifiers, repeat(4), repeat('big')))
        return map(add, map(str.encode, texts), repeat(b'/%d' % length))
    return map(lshift, map(rshift, integers, repeat(shift)), repeat(shift)), keys_of


class Networks:
    """One list's entries (addresses or CIDR networks; other lines ignored), for two
    questions: does an entry contain a network, does an entry overlap it. Entries written
    with ':' or '/' (few, as a rule) are parsed when the list is read, into a set per prefix
    length and a sorted list of first addresses; a plain IPv4 line (nearly all of a large
    list) is found when asked, by a search of the list's text (C speed), and its line parsed."""

    def __init__(self, content):
        self.content = b'\n' + content + b'\n'
        self.by_length = {}         # (version, length) -> {first address >> host bits}
        self.firsts = {4: [], 6: []}
        self._plain = None          # every plain IPv4 line's integer, sorted: parsed only when needed
        seen = set()
        for mark in (b':', b'/'):
            position = self.content.find(mark)
            while position != -1:
                start = self.content.rfind(b'\n', 0, position) + 1
                end = self.content.find(b'\n', position)
                if start not in seen:
                    seen.add(start)
                    self.add(self.content[start:end], sort=False)
                position = self.content.find(mark, end)
        for firsts in self.firsts.values():
            firsts.sort()

    def add(self, text, sort=True):
        parsed = network(text)
        if parsed is not None:
            version, length, first = parsed
            self.by_length.setdefault((version, length), set()).add(first >> (BITS[version] - length))
            if sort:
                bisect.insort(self.firsts[version], first)
            else:
                self.firsts[version].append(first)

    def _lines_holding(self, needle):
        """The stripped lines that hold ``needle``."""
        content, position = self.content, self.content.find(needle)
        while position != -1:
            start = content.rfind(b'\n', 0, position) + 1
            end = content.find(b'\n', position)
            yield content[start:end].strip(_BLANKS)
            position = content.find(needle, end)

    def _plain_in(self, first, last):
        """Whether a plain IPv4 line lies in [first, last]."""
        octets = socket.inet_ntoa(first.to_bytes(4, 'big')).split('.')
        whole = (last - first + 1).bit_length() - 1     # host bits of the range
        if whole == 0:
            address = '.'.join(octets).encode('ascii')
            return any(line == address for line in self._lines_holding(address))
        if whole <= 16:     # the lines in range share at least their first two octets' text
            kept = 4 - (whole + 7) // 8
            prefix = ('.'.join(octets[:kept]) + '.').encode('ascii')
            return any(_V4.match(line) and first <= _v4_int(line) <= last
                       for line in self._lines_holding(prefix) if line.startswith(prefix))
        if self._plain is None:
            self._plain = sorted(_v4_int(line) for line in (l.strip(_BLANKS) for l in self.content.split(b'\n'))
                                 if _V4.match(line))
        index = bisect.bisect_left(self._plain, first)
        return index < len(self._plain) and self._plain[index] <= last

    def contains(self, version, length, first):
        """Whether an entry contains the network (the same network included)."""
        bits = BITS[version]
        for (entry_version, entry_length), starts in self.by_length.items():
            if entry_version == version and entry_length <= length and first >> (bits - entry_length) in starts:
                return True
        return version == 4 and length == 32 and self._plain_in(first, first)

    def overlaps(self, version, length, first):
        """Whether an entry contains the network or lies in it."""
        if self.contains(version, length, first):
            return True
        last = first + (1 << (BITS[version] - length)) - 1
        firsts = self.firsts[version]
        index = bisect.bisect_left(firsts, first)
        if index < len(firsts) and firsts[index] <= last:
            return True
        return version == 4 and length < 32 and self._plain_in(first, last)
