# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nftables enforcement never drops, as nft elements: the exemptions of exempt.py
(loopback, the server's addresses, the allow-list's addresses and networks) in the sets
allowed_v4/allowed_v6, accepted before the drop rules; every address of the host is spared
besides, by the rule ``fib saddr type local accept``. A blocklist line such as 127.0.0.0/8 or
the server's /24 still drops the rest of its range.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import ipaddress

from .exempt import cidrs, exemptions

__metaclass__ = type


def _span(line):
    """(version, first, last) of an address or network line (bytes; host bits cleared; an
    IPv4-mapped one is its IPv4 address or network), or None."""
    try:
        text = line.strip().decode('ascii')
        if '%' in text or not text or len(text) > 64:      # a zone: no client's address
            return None
        network = ipaddress.ip_network(text, strict=False)
    except (UnicodeDecodeError, ValueError):
        return None
    first, length = int(network.network_address), network.prefixlen
    if network.version == 6 and first >> 32 == 0xffff and length >= 96:
        network = ipaddress.IPv4Network((first & 0xffffffff, length - 96))
    return network.version, int(network.network_address), int(network.broadcast_address)


def _text(version, first, last):
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    network = kind((first, (32 if version == 4 else 128) - (last - first).bit_length()))
    return str(network.network_address) if network.num_addresses == 1 else str(network)


def spared(settings):
    """(v4, v6): the elements of the exceptions sets, sorted, merged. An allow-list that exists
    but cannot be read fails the sync (exempt.exemptions)."""
    spans = exemptions(settings, _span).spans
    return tuple([_text(version, *piece) for span in spans[version] for piece in cidrs(version, *span)] for version in (4, 6))


def digest_spared(elements):
    """What identifies the exceptions loaded, for the record of the last load."""
    v4, v6 = elements
    return hashlib.sha256(('%s\n%s\n' % (','.join(v4), ','.join(v6))).encode('ascii')).hexdigest()[:16]
