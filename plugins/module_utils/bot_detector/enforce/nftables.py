# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nftables enforcement: the table ``inet bot_detector``, loaded in one ``nft -f -`` transaction.

The file declares the table, its two interval sets and its chain (``add`` keeps what
exists), flushes the sets and the chain, and fills them: nft applies the whole file or
nothing, so there is no instant with an empty set, and one transaction costs what one
element costs times the elements (never a call per element). Nothing outside the table is
named, so the operator's own ruleset stays as it was.

The chain drops, rather than rejects, new connections from a blocked address: a scraper
learns nothing quickly (each attempt waits for its own time-out), and the host sends no
packet to an address it has never answered (a reject answers spoofed sources too).

The drop rules' comment carries the digest of the blocklist loaded and the entries count
(enforce.digest_of); a sync whose blocklist has that digest loads nothing (``force`` loads
anyway: --enforce-now, at boot). nft reads the sets' elements from the kernel even to list
one chain, so that check costs about a second per 100,000 entries; it sees a table removed
or flushed by hand or by a restart of nftables.service.
"""

from __future__ import absolute_import, division, print_function

import re
import subprocess

from ..errors import BotDetectorError
from ..text import printable, to_text

__metaclass__ = type

NFT = 'nft'
TABLE = 'inet bot_detector'
CHAIN_PRIORITY = 'filter - 10'
# Elements per ``add element`` statement: the same transaction, in pieces nft parses quickly.
CHUNK = 10000
TIMEOUT = 600
_DIGEST = re.compile(r'comment "bot-detector ([0-9a-f]{32}) ([0-9]+)"')


def ruleset(entries, ports, digest=None):
    """The ``nft -f`` text that makes the table hold ``entries`` (enforce.Entries) and drop
    new connections from them to ``ports``. With ``digest``, the drop rules' comment holds
    it and the entries count."""
    port_set = ', '.join(str(port) for port in sorted(set(ports)))
    comment = ' comment "bot-detector %s %d"' % (digest, len(entries)) if digest else ''
    lines = [
        'add table %s' % TABLE,
        'add set %s blocked_v4 { type ipv4_addr; flags interval; auto-merge; }' % TABLE,
        'add set %s blocked_v6 { type ipv6_addr; flags interval; auto-merge; }' % TABLE,
        'add chain %s input { type filter hook input priority %s; policy accept; }' % (TABLE, CHAIN_PRIORITY),
        'flush set %s blocked_v4' % TABLE,
        'flush set %s blocked_v6' % TABLE,
        'flush chain %s input' % TABLE,
        # TCP and UDP (HTTP/3 runs over UDP 443); ct state new: a packet that opens a flow.
        'add rule %s input ct state new meta l4proto { tcp, udp } th dport { %s } ip saddr @blocked_v4 drop%s'
        % (TABLE, port_set, comment),
        'add rule %s input ct state new meta l4proto { tcp, udp } th dport { %s } ip6 saddr @blocked_v6 drop%s'
        % (TABLE, port_set, comment),
    ]
    for name, networks in (('blocked_v4', entries.v4), ('blocked_v6', entries.v6)):
        for start in range(0, len(networks), CHUNK):
            elements = ', '.join(networks[start:start + CHUNK])
            lines.append('add element %s %s { %s }' % (TABLE, name, elements))
    return '\n'.join(lines) + '\n'


def _nft(args, text=None):
    """Run nft; (exit status, standard output). Raises BotDetectorError when it cannot run."""
    try:
        proc = subprocess.run([NFT] + args, input=None if text is None else text.encode('ascii'),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('%s: %s' % (NFT, exc))
    return proc.returncode, proc.stdout, proc.stderr


def loaded(settings):
    """(digest, entries) on the table's drop rules, or None (no table, no rule, or another's)."""
    code, out, dummy = _nft(['-t', 'list', 'chain'] + TABLE.split() + ['input'])
    if code != 0:
        return None
    found = set(_DIGEST.findall(to_text(out)))
    if len(found) != 1:
        return None
    digest, count = found.pop()
    return digest, int(count)


def load(settings, entries, digest, force=False):
    """Load ``entries`` into the table in one transaction; True (it was loaded)."""
    code, dummy, err = _nft(['-f', '-'], ruleset(entries, settings.enforcement_ports, digest))
    if code != 0:
        lines = [line.strip() for line in printable(to_text(err)).splitlines() if line.strip()]
        detail = lines[0] if lines else 'exit status %d' % code
        raise BotDetectorError('nft -f: %s (exit status %d); the table %s is as it was' % (detail, code, TABLE))
    return True
