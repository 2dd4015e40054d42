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

Never dropped, whatever the blocklist says (spared.py): loopback, the server's addresses and
the allow-list's, in the sets allowed_v4/allowed_v6, and every address of the host (``fib
saddr type local``): their ``accept`` rules come before the drop rules, in the same
transaction.

The drop rules' comment, and a record beside the run's lock, carry the digest of the
blocklist loaded and the entries count (sync.digest_of); the record adds the table's handle
and the digest of the exceptions. A sync whose blocklist has that digest, whose exceptions
are those, and whose table still has that handle loads nothing (``force`` loads anyway:
--enforce-now, at boot). See ``loaded``.
"""

from __future__ import absolute_import, division, print_function

import os
import subprocess

from ..base.errors import BotDetectorError
from ..base.text import printable, to_text
from ..lists.replace import replace_file
from ..lists.writer import lock_file
from .netlink import table_handle
from .spared import digest_spared, spared

__metaclass__ = type

NFT = 'nft'
TABLE = 'inet bot_detector'
CHAIN_PRIORITY = 'filter - 10'
# Elements per ``add element`` statement: the same transaction, in pieces nft parses quickly.
CHUNK = 10000
TIMEOUT = 600


def ruleset(entries, ports, digest=None, exceptions=((), ())):
    """The ``nft -f`` text that makes the table hold ``entries`` (sync.Entries) and drop
    new connections from them to ``ports``, but never from ``exceptions`` ((v4, v6)
    elements, spared.spared) nor from the host's own addresses. With ``digest``, the drop
    rules' comment holds it and the entries count."""
    port_set = ', '.join(str(port) for port in sorted(set(ports)))
    comment = ' comment "bot-detector %s %d"' % (digest, len(entries)) if digest else ''
    lines = [
        'add table %s' % TABLE,
        'add set %s blocked_v4 { type ipv4_addr; flags interval; auto-merge; }' % TABLE,
        'add set %s blocked_v6 { type ipv6_addr; flags interval; auto-merge; }' % TABLE,
        'add set %s allowed_v4 { type ipv4_addr; flags interval; auto-merge; }' % TABLE,
        'add set %s allowed_v6 { type ipv6_addr; flags interval; auto-merge; }' % TABLE,
        'add chain %s input { type filter hook input priority %s; policy accept; }' % (TABLE, CHAIN_PRIORITY),
        'flush set %s blocked_v4' % TABLE,
        'flush set %s blocked_v6' % TABLE,
        'flush set %s allowed_v4' % TABLE,
        'flush set %s allowed_v6' % TABLE,
        'flush chain %s input' % TABLE,
        # The exceptions first: an accept here ends this chain, so no drop below sees them.
        'add rule %s input fib saddr type local accept' % TABLE,
        'add rule %s input ip saddr @allowed_v4 accept' % TABLE,
        'add rule %s input ip6 saddr @allowed_v6 accept' % TABLE,
        # TCP and UDP (HTTP/3 runs over UDP 443); ct state new: a packet that opens a flow.
        'add rule %s input ct state new meta l4proto { tcp, udp } th dport { %s } ip saddr @blocked_v4 drop%s'
        % (TABLE, port_set, comment),
        'add rule %s input ct state new meta l4proto { tcp, udp } th dport { %s } ip6 saddr @blocked_v6 drop%s'
        % (TABLE, port_set, comment),
    ]
    for name, networks in (('blocked_v4', entries.v4), ('blocked_v6', entries.v6),
                           ('allowed_v4', list(exceptions[0])), ('allowed_v6', list(exceptions[1]))):
        for start in range(0, len(networks), CHUNK):
            elements = ', '.join(networks[start:start + CHUNK])
            lines.append('add element %s %s { %s }' % (TABLE, name, elements))
    return '\n'.join(lines) + '\n'


def _nft(args, text=None):
    """Run nft; (exit status, standard output). Raises BotDetectorError when it cannot run."""
    try:
        # The core is also the host command, run without Ansible: no AnsibleModule.run_command.
        proc = subprocess.run([NFT] + args, input=None if text is None else text.encode('ascii'),  # pylint: disable=ansible-bad-function
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('%s: %s' % (NFT, exc))
    return proc.returncode, proc.stdout, proc.stderr


def _record(settings):
    """The file beside the run's lock that records the last good load: '<digest> <entries>'."""
    return lock_file(settings.blocklist)[:-len('.lock')] + '.nft'


record_path = _record       # --status reads when it was written (state.py)


def loaded(settings):
    """(digest, entries) of the last good load, or None. The record of the last load says it,
    and holds for as long as the table has the handle recorded (netlink.table_handle: one
    netlink message, whatever the entries; the table deleted or made again, by ``nft flush
    ruleset`` or a reload of nftables.service, has none or another) and the exceptions are
    those loaded (the allow-list or server_ips changed: loaded again)."""
    try:
        with open(_record(settings)) as handle:
            digest, count, table, exceptions = handle.read().split()
        recorded = (digest, int(count))
        table = int(table)
    except (IOError, OSError, ValueError):
        return None
    if exceptions != digest_spared(spared(settings)) or not table or table_handle(*TABLE.split()) != table:
        return None
    return recorded


def load(settings, entries, digest, force=False):
    """Load ``entries`` into the table in one transaction, and record it; True (it was loaded)."""
    record = _record(settings)
    try:
        os.unlink(record)       # a load that fails leaves no record: the next run tries again
    except OSError:
        pass
    exceptions = spared(settings)
    code, dummy, err = _nft(['-f', '-'], ruleset(entries, settings.enforcement_ports, digest, exceptions))
    if code == 0:
        replace_file(record, ('%s %d %d %s\n' % (digest, len(entries), table_handle(*TABLE.split()) or 0,
                                                 digest_spared(exceptions))).encode('ascii'))
    else:
        lines = [line.strip() for line in printable(to_text(err)).splitlines() if line.strip()]
        detail = lines[0] if lines else 'exit status %d' % code
        raise BotDetectorError('nft -f: %s (exit status %d); the table %s is as it was' % (detail, code, TABLE))
    return True
