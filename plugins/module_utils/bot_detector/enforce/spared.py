# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nftables enforcement never drops, whatever the blocklist says (issue 38): loopback
(127.0.0.0/8, ::1), the server's addresses (``server_ips``; every address of the host is
spared besides, by the rule ``fib saddr type local accept``) and the allow-list's addresses
and networks (``exclusions_file``; its other lines, substrings for the spec's search, are no
address and spare nothing here). A blocklist line such as 127.0.0.0/8 or the server's /24
still drops the rest of its range.

The allow-list is read as the detection reads it (lists/content.read_list: missing or
unreadable is empty; the detection warns of the latter). An IPv4-mapped entry is its IPv4
address, as in the blocklist.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import ipaddress

from ..base.text import to_text
from ..lists.content import read_list

__metaclass__ = type

LOOPBACK = ('127.0.0.0/8', '::1')


def _span(text):
    """(version, first, last) of an address or network (host bits cleared), or None."""
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
    first, length = int(network.network_address), network.prefixlen
    if network.version == 6 and first >> 32 == 0xffff and length >= 96:
        network = ipaddress.IPv4Network((first & 0xffffffff, length - 96))
    return network.version, int(network.network_address), int(network.broadcast_address)


def _elements(spans, kind):
    """Disjoint, non-adjacent CIDR elements covering ``spans`` (what auto-merge takes in one add)."""
    merged = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    found = []
    for first, last in merged:
        for network in ipaddress.summarize_address_range(kind(first), kind(last)):
            found.append(str(network.network_address) if network.num_addresses == 1 else str(network))
    return found


def spared(settings):
    """(v4, v6): the elements of the exceptions sets, sorted, merged."""
    texts = list(LOOPBACK) + [to_text(ip) for ip in settings.server_ips or ()]
    for raw in read_list(settings.exclusions_file).split(b'\n'):
        line = raw.strip()
        if line and not line.startswith(b'#') and len(line) <= 64:
            try:
                texts.append(line.decode('ascii'))
            except UnicodeDecodeError:
                continue
    spans = {4: [], 6: []}
    for text in texts:
        if '%' in text:     # a zone: no client's address
            continue
        span = _span(text)
        if span is not None:
            spans[span[0]].append(span[1:])
    return _elements(spans[4], ipaddress.IPv4Address), _elements(spans[6], ipaddress.IPv6Address)


def digest_spared(elements):
    """What identifies the exceptions loaded, for the record of the last load."""
    v4, v6 = elements
    return hashlib.sha256(('%s\n%s\n' % (','.join(v4), ','.join(v6))).encode('ascii')).hexdigest()[:16]
