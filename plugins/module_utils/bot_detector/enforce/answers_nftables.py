# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The throttle in nftables (``enforcement: nftables``, ``throttle_list`` set): the table
``inet bot_detector_answers``, loaded whole in one ``nft -f -`` transaction after each change
of the throttle list. A throttled address may open ``throttle_rate`` new connections to the
enforcement ports (``throttle_burst`` at once); past it, its new connections are dropped.

A limit of new connections per source address, not of requests: a scraper that sends every
request over one keep-alive connection opens one connection and is never limited. nginx's
throttle (answers_nginx.py) counts requests; the answers guide says so. Each entry expires in
the kernel at its time (the set's element timeout). Nothing outside the table is named.

The chain hooks prerouting at the drops' priority (nftables.py: raw - 10), before conntrack and
DNAT: a web server behind DNAT (a container's published port, whose packets never reach the
input hook) is throttled as one on the host, by the port the client connected to. Without
conntrack there, a new connection is its first packet, a SYN without ACK (a retransmitted SYN
counts again); a raw-table ``notrack`` on the ports hides nothing from it.
"""

from __future__ import absolute_import, division, print_function

import subprocess
import time

from ..base.errors import BotDetectorError
from ..lists.answers import listed, span
from .nftables import CHAIN, CHAIN_PRIORITY

__metaclass__ = type

TABLE = 'bot_detector_answers'
NFT = 'nft'
TIMEOUT = 60
_UNITS = {'s': 'second', 'm': 'minute'}
MAX_TIMEOUT = 40 * 86400


def _text(found):
    import ipaddress        # a throttle list's entries only (few)
    version, length, first = found
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    return str(kind((first, length)))


def ruleset(settings, now=None):
    """The transaction's text for the throttle list of ``settings``."""
    now = time.time() if now is None else now
    elements = {4: [], 6: []}
    for entry in listed(settings, 'throttle'):
        found = span(entry.address)
        if found is None or entry.due(now):
            continue
        left = None if entry.expires is None else max(1, int(entry.expires - now))
        # nft's element timeouts end below 2**32 ms (49 days): a longer one is left out, the
        # entry then held until a later load, which the list's expiry makes.
        elements[found[0]].append(_text(found) + (' timeout %ds' % left if left is not None and left < MAX_TIMEOUT else ''))
    rate, unit = settings.throttle_rate.split('r/')
    unit = _UNITS[unit]
    ports = ', '.join(str(port) for port in settings.enforcement_ports)
    lines = ['add table inet %s' % TABLE, 'delete table inet %s' % TABLE, 'table inet %s {' % TABLE]
    for version, kind in ((4, 'ipv4_addr'), (6, 'ipv6_addr')):
        lines.append('  set throttled_v%d { type %s; flags interval, timeout; %s}' % (
            version, kind, 'elements = { %s } ' % ', '.join(elements[version]) if elements[version] else ''))
        lines.append('  set meter_v%d { type %s; flags dynamic, timeout; timeout 10m; }' % (version, kind))
    lines.append('  chain %s {' % CHAIN)
    lines.append('    type filter hook %s priority %s; policy accept;' % (CHAIN, CHAIN_PRIORITY))
    for version, family in ((4, 'ip'), (6, 'ip6')):
        burst = settings.throttle_burst + 1
        lines.append('    %s saddr @throttled_v%d tcp dport { %s } tcp flags & (syn | ack) == syn add @meter_v%d { %s saddr '
                     'limit rate over %s/%s burst %d packets } drop' % (family, version, ports, version, family, rate, unit, burst))
    lines += ['  }', '}', '']
    return '\n'.join(lines)


def sync(settings):
    """Load the table for the throttle list (none set: the table removed)."""
    text = ruleset(settings) if settings.throttle_list else 'add table inet %s\ndelete table inet %s\n' % (TABLE, TABLE)
    try:
        proc = subprocess.run([NFT, '-f', '-'], input=text.encode('ascii'), stdout=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                              stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('nftables throttle: cannot run nft: %s' % exc)
    if proc.returncode != 0:
        raise BotDetectorError('nftables throttle: nft -f failed: %s' % proc.stderr.decode('utf-8', 'replace').strip()[:400])
