# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the enforcement point never blocks, whatever the blocklist says: the server's own
addresses (``server_ips``, else what ``hostname -i`` prints), loopback (127.0.0.0/8, ::1) and
the allow-list's addresses and networks (``exclusions_file``; its other lines are substrings
for the detection, nothing here). An IPv4-mapped address or network is its IPv4 one.

``Exemptions.split`` takes the blocked pieces (CIDR networks as integer spans) and returns those
not wholly exempt, with the exempt parts inside them: the nginx geo file maps those to 0 (its
longest prefix wins), nftables accepts them before its drop rules.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import ipaddress

from ..base.errors import BotDetectorError
from ..base.text import to_bytes
from ..decision.addresses import server_addresses
from ..lists.content import read_list

__metaclass__ = type

LOOPBACK = (b'127.0.0.0/8', b'::1')


def cidrs(version, first, last):
    """The span [first, last] as the fewest CIDR networks, each an integer span (first, last)."""
    kind = ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address
    return [(int(net.network_address), int(net.broadcast_address))
            for net in ipaddress.summarize_address_range(kind(first), kind(last))]


def merge(spans):
    """``spans`` (first, last) sorted and merged where they overlap or touch."""
    merged = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1][1] = last
        else:
            merged.append([first, last])
    return [tuple(span) for span in merged]


class Exemptions:
    """The exempt spans of each version (merged), from ``lines`` and the lines of ``content``
    (the allow-list's bytes), read when first needed: a sync whose load is in sync reads none.
    ``key`` identifies them all for the load's digest (text)."""

    def __init__(self, lines, span_of, content=b''):
        self._lines, self._content, self._span_of, self._spans = list(lines), content, span_of, None
        self.key = hashlib.sha256(b'\n'.join(self._lines) + b'\n\0' + content).hexdigest()[:32]

    @property
    def spans(self):
        if self._spans is None:
            found = {4: [], 6: []}
            for line in self._lines + self._content.split(b'\n'):
                span = self._span_of(line)
                if span is not None:
                    found[span[0]].append((span[1], span[2]))
            self._spans = {version: merge(found[version]) for version in (4, 6)}
        return self._spans

    def covers(self, version, first, last):
        """Whether [first, last] lies wholly inside one exempt span."""
        spans = self.spans[version]
        low, high = 0, len(spans)
        while low < high:       # the last span starting at or before ``first``
            middle = (low + high) // 2
            if spans[middle][0] <= first:
                low = middle + 1
            else:
                high = middle
        return low > 0 and spans[low - 1][1] >= last

    def split(self, version, pieces):
        """``pieces``, sorted disjoint CIDR spans blocked, as (kept, exempt): the pieces not wholly
        exempt, and the exempt CIDR spans inside them (each narrower than its piece)."""
        spans = self.spans[version]
        kept, inside, at = [], [], 0
        for first, last in pieces:
            while at < len(spans) and spans[at][1] < first:
                at += 1
            if at < len(spans) and spans[at][0] <= first and spans[at][1] >= last:
                continue        # wholly exempt: not blocked at all
            kept.append((first, last))
            scan = at
            while scan < len(spans) and spans[scan][0] <= last:
                inside.extend(cidrs(version, max(first, spans[scan][0]), min(last, spans[scan][1])))
                scan += 1
        return kept, inside


def exemptions(settings, span_of):
    """The Exemptions of ``settings`` (its server addresses, loopback, its allow-list), each line
    read by ``span_of`` (sync's reading of a blocklist line). An allow-list that exists but cannot
    be read fails the sync (BotDetectorError): loading without it could block allow-listed clients."""
    servers = server_addresses() if settings.server_ips is None else [to_bytes(ip) for ip in settings.server_ips]
    try:
        allowed = read_list(settings.exclusions_file, strict=True)
    except BotDetectorError as exc:
        raise BotDetectorError('%s: the allow-list is needed to exempt its clients' % exc.message)
    return Exemptions(list(LOOPBACK) + servers, span_of, allowed)
