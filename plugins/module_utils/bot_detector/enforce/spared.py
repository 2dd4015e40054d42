# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nftables enforcement never drops, as nft elements: what decision/never_blocked.py
never blocks (loopback, the server's addresses, the allow-list, the trusted proxies) in the sets
allowed_v4/allowed_v6, accepted before the drop rules; every address of the host is spared
besides, by the rule ``fib saddr type local accept``. A blocklist line such as 127.0.0.0/8 or
the server's /24 still drops the rest of its range.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import ipaddress

from ..decision.never_blocked import never_blocked
from ..decision.ranges import cidrs

__metaclass__ = type


def _text(version, first, last):
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    network = kind((first, (32 if version == 4 else 128) - (last - first).bit_length()))
    return str(network.network_address) if network.num_addresses == 1 else str(network)


def spared(settings):
    """(v4, v6): the elements of the exceptions sets, sorted, merged. An allow-list that exists
    but cannot be read fails the sync (never_blocked.never_blocked)."""
    spans = never_blocked(settings).spans
    return tuple([_text(version, *piece) for span in spans[version] for piece in cidrs(version, *span)] for version in (4, 6))


def digest_spared(elements):
    """What identifies the exceptions loaded, for the record of the last load."""
    v4, v6 = elements
    return hashlib.sha256(('%s\n%s\n' % (','.join(v4), ','.join(v6))).encode('ascii')).hexdigest()[:16]
