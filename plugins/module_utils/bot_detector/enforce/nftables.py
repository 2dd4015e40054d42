# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nftables enforcement: one table a blocklist (``table_name``: ``inet bot_detector`` for the
default one), loaded in one ``nft -f -`` transaction.

A full load declares the table, its sets and its chain (``add`` keeps what exists),
flushes the sets and the chain, and fills them: nft applies the whole file or nothing, so
there is no instant with an empty set, and one transaction costs what one element costs
times the elements (never a call per element). Nothing outside the table is named (but
the table an earlier release loaded this very blocklist into, deleted), so the operator's
own ruleset and the other blocklists' tables stay as they were. The blocklist's single addresses go into plain hash
sets (blocked_addr_v4/_v6), its networks into interval sets (blocked_v4/_v6; an address
inside one of them is left out): nft 1.0.6 adds one element to an interval set of 131,072
at about the cost of loading it, to a hash set in well under 0.01 s.

The changes since the last load are applied alone (``add``): ``add element`` and ``delete
element`` of single addresses in the hash sets, one transaction, without parsing the rest of
the blocklist. Lines appended are told from the record's length and hash; other changes from
a copy of the blocklist loaded (beside the record), line sets compared. Anything else (a
network, a line that is no address, an address touching a network line, a removal once an
address is written in two ways, a table lost, other settings) is a full load, whose guards
(sync.Entries: prefix limits) decide; ``add`` takes only what they would take unchanged.

The chain hooks prerouting at priority raw - 10, before conntrack and DNAT: it sees what a
raw-table ``notrack`` leaves untracked and what DNAT forwards to a container (the forward
hook, never input). It drops, by source and destination port, TCP and UDP alike, every packet
of a blocked address, without ``ct state``: a connection open before the sync is cut too. It
drops rather than rejects: a scraper learns nothing quickly (each attempt waits for its own
time-out), and the host sends no packet to an address it has never answered (a reject
answers spoofed sources too). Earlier releases' input chain is deleted by the next full load.

Never dropped, whatever the blocklist says (spared.py): loopback, the server's addresses and
the allow-list's, in the sets allowed_v4/allowed_v6, and every address of the host (``fib
saddr type local``): their ``accept`` rules come before the drop rules, in the same
transaction.

The drop rules' comment (of the last full load), and a record beside the run's lock, carry
the digest of the blocklist loaded and the entries count (sync.digest_of); the record adds
the table's handle, the digest of the exceptions, and the length and hash of the blocklist
loaded (for ``add``). A sync whose blocklist has that digest, whose exceptions
are those, and whose table still has that handle loads nothing (``force`` loads anyway:
--enforce-now, at boot). See ``loaded``.
"""

from __future__ import absolute_import, division, print_function

import bisect
import errno
import hashlib
import json
import os
import socket
import subprocess

from ..base.errors import BotDetectorError
from ..base.messages import BAD_RECORD
from ..base.text import printable, to_text
from ..lists.replace import replace_file
from ..lists.writer import lock_file
from ..values.settings import SETTINGS
from .netlink import table_handle
from .spared import digest_spared, spared

__metaclass__ = type

NFT = 'nft'
TABLE = 'inet bot_detector'        # the default blocklist's (table_name)
# Before conntrack (-200) and DNAT (-100), and after a raw-table notrack (-300): a packet is
# judged by its source and the port it was sent to, whether it is tracked, forwarded or not.
CHAIN, CHAIN_PRIORITY = 'prerouting', 'raw - 10'
OLD_CHAIN = 'add chain %s input { type filter hook input priority filter - 10; policy accept; }'
DEFAULT_BLOCKLIST = [setting.default for setting in SETTINGS if setting.name == 'blocklist'][0]
# Elements per ``add element`` statement: the same transaction, in pieces nft parses quickly.
CHUNK = 10000
TIMEOUT = 600
# At most so many addresses written otherwise (2001:DB8::7, 192.0.2.7/32) recorded for ``add``'s
# count; past it, an append to such a blocklist is a full load.
RESPELLED = 10000


def table_name(settings):
    """The table of ``settings.blocklist``: one a blocklist, so that syncing one never replaces
    another's sets, and each has its own exceptions (an accept in one table ends that table's
    chain only: another's drop still applies). The default blocklist's keeps the name of earlier
    releases, ``inet bot_detector``; another's is ``inet bot_detector_<key>``, the key of its
    real path (the run's lock's: lists/writer.lock_file)."""
    if os.path.realpath(settings.blocklist) == os.path.realpath(DEFAULT_BLOCKLIST):
        return TABLE
    return '%s_%s' % (TABLE, os.path.basename(lock_file(settings.blocklist))[len('blocklist-'):-len('.lock')])


def _sets():
    """(name, declaration) of each set: the blocklist's single addresses in plain hash sets (one
    more costs about one element), its networks in interval sets, the exceptions."""
    found = []
    for version, kind in ((4, 'ipv4_addr'), (6, 'ipv6_addr')):
        found += [('blocked_addr_v%d' % version, '{ type %s; }' % kind),
                  ('blocked_v%d' % version, '{ type %s; flags interval; auto-merge; }' % kind),
                  ('allowed_v%d' % version, '{ type %s; flags interval; auto-merge; }' % kind)]
    return found


def _add_elements(lines, name, elements, table=TABLE):
    for start in range(0, len(elements), CHUNK):
        lines.append('add element %s %s { %s }' % (table, name, ', '.join(elements[start:start + CHUNK])))


def ruleset(entries, ports, digest=None, exceptions=((), ()), table=TABLE, stale=None):
    """The ``nft -f`` text that makes the table hold ``entries`` (sync.Entries: its
    addresses and networks) and drop new connections from them to ``ports``, but never from
    ``exceptions`` ((v4, v6) elements, spared.spared) nor from the host's own addresses. With
    ``digest``, the drop rules' comment holds it and the entries count. ``table``: its name
    (table_name); ``stale``: an earlier release's table of this blocklist, deleted."""
    port_set = ', '.join(str(port) for port in sorted(set(ports)))
    comment = ' comment "bot-detector %s %d"' % (digest, count(entries)) if digest else ''
    lines = ['delete table %s' % stale] if stale else []
    lines.append('add table %s' % table)
    lines += ['add set %s %s %s' % (table, name, declaration) for name, declaration in _sets()]
    # The input chain of earlier releases (after conntrack, blind to notrack and DNAT): gone.
    lines += [OLD_CHAIN % table, 'flush chain %s input' % table, 'delete chain %s input' % table]
    lines.append('add chain %s %s { type filter hook prerouting priority %s; policy accept; }' % (table, CHAIN, CHAIN_PRIORITY))
    lines += ['flush set %s %s' % (table, name) for name, dummy in _sets()]
    lines += [
        'flush chain %s %s' % (table, CHAIN),
        # The exceptions first: an accept here ends this chain, so no drop below sees them.
        'add rule %s %s fib saddr type local accept' % (table, CHAIN),
        'add rule %s %s ip saddr @allowed_v4 accept' % (table, CHAIN),
        'add rule %s %s ip6 saddr @allowed_v6 accept' % (table, CHAIN),
    ]
    for family, version in (('ip', 4), ('ip6', 6)):
        for name in ('blocked_addr_v%d' % version, 'blocked_v%d' % version):
            # TCP and UDP (HTTP/3 runs over UDP 443); every packet, not only a flow's first:
            # no ct state, which a notrack leaves unset and which a connection open already passes.
            lines.append('add rule %s %s meta l4proto { tcp, udp } th dport { %s } %s saddr @%s drop%s'
                         % (table, CHAIN, port_set, family, name, comment))
    for version in (4, 6):
        _add_elements(lines, 'blocked_addr_v%d' % version, entries.addresses[version], table)
        _add_elements(lines, 'blocked_v%d' % version, entries.networks[version], table)
        _add_elements(lines, 'allowed_v%d' % version, list(exceptions[version // 6]), table)
    return '\n'.join(lines) + '\n'


def count(entries):
    """The entries a load makes of ``entries`` (sync.Entries): the elements of the blocked sets,
    its single addresses (outside its networks) one each and its networks merged, so that ``add``
    keeps the same count an address at a time (nginx's count, ``len(entries)``, merges them)."""
    return sum(len(entries.addresses[version]) + len(entries.networks[version]) for version in (4, 6))


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
    """The file beside the run's lock that records the last good load (JSON, see _write_record)."""
    # create=False: a sync took the lock (made the directory) first; --status only reads.
    return lock_file(settings.blocklist, create=False)[:-len('.lock')] + '.nft'


record_path = _record       # --status reads when it was written (state.py)


def _settings_key(settings):
    """What a load depends on besides the blocklist: ports, prefix limits, and the chain (a
    record of an earlier release's input chain is no load of this one's: loaded in full)."""
    return '%s/%d/%d/%s' % (','.join(str(port) for port in sorted(set(settings.enforcement_ports))),
                            settings.enforcement_min_prefix_v4, settings.enforcement_min_prefix_v6, CHAIN)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _pairs(value):
    return isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2 and all(_count(v) for v in pair)
                                           for pair in value)


# Each field of a record (_write_record) and what its value must be; entries and handle are
# in every release's record, the others optional (an earlier release's has fewer).
_FIELDS = {'entries': _count, 'handle': _count, 'digest': lambda v: v is None or isinstance(v, str),
           'table': lambda v: isinstance(v, str) and len(v.split()) == 2, 'spared': lambda v: isinstance(v, str),
           'settings': lambda v: isinstance(v, str), 'sha256': lambda v: isinstance(v, str), 'length': _count,
           'noncanonical': _count, 'addresses': lambda v: isinstance(v, list) and len(v) == 2 and all(_count(n) for n in v),
           'blocks': lambda v: isinstance(v, list) and len(v) == 2 and all(_pairs(blocks) for blocks in v),
           'respelled': lambda v: v is None or isinstance(v, list) and all(isinstance(text, str) for text in v)}


def _bad(doc):
    """What is wrong with a record read (a reason), or None."""
    if not isinstance(doc, dict):
        return 'not a JSON object'
    for field, valid in sorted(_FIELDS.items()):
        if (field in doc or field in ('entries', 'handle')) and not valid(doc.get(field)):
            return 'its %s is %s' % (field, 'missing' if field not in doc else 'not what a load writes')
    return None


def _load_record(settings):
    """(the record read, what is wrong with it or None); (None, None) when there is none."""
    try:
        with open(_record(settings)) as handle:
            doc = json.load(handle)
    except (IOError, OSError) as exc:
        return None, None if getattr(exc, 'errno', None) == errno.ENOENT else (exc.strerror or str(exc))
    except (ValueError, RecursionError):     # RecursionError: nested too deep
        return None, 'not JSON'
    return doc, _bad(doc)


def _read_record(settings):
    """The record of the last good load (a dict), or None (none, or a bad one)."""
    doc, bad = _load_record(settings)
    return None if bad else doc


def bad_record(settings):
    """A bad record of the last load (not JSON, a field of the wrong type) removed, so that the
    sync loads the table whole: the warning saying so, or None (a good record, or none)."""
    doc, bad = _load_record(settings)
    if bad is None:
        return None
    try:
        os.unlink(_record(settings))
    except OSError:
        pass
    return BAD_RECORD % (_record(settings), bad)


def _write_record(settings, doc):
    replace_file(_record(settings), json.dumps(doc, sort_keys=True).encode('ascii'))


def loaded(settings):
    """(digest, entries) of the last good load, or None. The record of the last load says it,
    and holds for as long as the table has the handle recorded (netlink.table_handle: one
    netlink message, whatever the entries; the table deleted or made again, by ``nft flush
    ruleset`` or a reload of nftables.service, has none or another) and the exceptions are
    those loaded (the allow-list or server_ips changed: loaded again)."""
    doc = _read_record(settings)
    if doc is None or doc.get('spared') != digest_spared(spared(settings)) or doc.get('settings') != _settings_key(settings):
        return None
    table = table_name(settings)
    if not doc['handle'] or doc.get('table') != table or table_handle(*table.split()) != doc['handle']:
        return None
    return (doc.get('digest'), doc['entries'])


def _apply(text, table):
    code, dummy, err = _nft(['-f', '-'], text)
    if code != 0:
        lines = [line.strip() for line in printable(to_text(err)).splitlines() if line.strip()]
        detail = lines[0] if lines else 'exit status %d' % code
        raise BotDetectorError('nft -f: %s (exit status %d); the table %s is as it was' % (detail, code, table))


def _stale_table(doc, table):
    """The table an earlier release loaded this blocklist into (``inet bot_detector``, whatever
    the blocklist), when its record says so and the table is still the one it loaded; else None."""
    old = (doc or {}).get('table', TABLE)
    if doc is None or old == table or not doc.get('handle') or table_handle(*old.split()) != doc['handle']:
        return None
    return old


def load(settings, entries, digest, force=False, content=None):
    """Load ``entries`` into the table in one transaction, and record it; True (it was loaded).
    ``content``: the blocklist's bytes, recorded (length, hash) for ``add``."""
    record, table = _record(settings), table_name(settings)
    stale = _stale_table(_read_record(settings), table)
    try:
        os.unlink(record)       # a load that fails leaves no record: the next run tries again
    except OSError:
        pass
    exceptions = spared(settings)
    _apply(ruleset(entries, settings.enforcement_ports, digest, exceptions, table, stale), table)
    doc = {'digest': digest, 'entries': count(entries), 'handle': table_handle(*table.split()) or 0, 'table': table,
           'spared': digest_spared(exceptions), 'settings': _settings_key(settings),
           'addresses': [entries.address_lines[4], entries.address_lines[6]],
           'blocks': [entries.network_blocks[4], entries.network_blocks[6]]}
    if content is not None:
        replace_file(_copy(settings), content)
        doc.update(length=len(content), sha256=hashlib.sha256(content).hexdigest(), noncanonical=entries.noncanonical,
                   respelled=sorted(set(entries.respelled)) if len(entries.respelled) <= RESPELLED else None)
    _write_record(settings, doc)
    return True


def _lines(data):
    """The set of a blocklist's lines that can be entries (stripped; no blank line, no comment)."""
    return set(line for line in (raw.strip() for raw in data.split(b'\n')) if line and not line.startswith(b'#'))


def _copy(settings):
    """The blocklist as last loaded, beside the record: what a removal is told from."""
    return _record(settings) + '.loaded'


def _read_copy(settings, doc):
    try:
        with open(_copy(settings), 'rb') as handle:
            old = handle.read()
    except (IOError, OSError):
        return None
    return old if len(old) == doc['length'] and hashlib.sha256(old).hexdigest() == doc['sha256'] else None


def _changes(settings, content, doc):
    """(lines added, lines removed, the old lines or None) since the record's load, or None.
    Lines appended: told from the record's length and hash alone. Otherwise from the copy of
    the blocklist loaded, when every address in it was written as ``add`` writes it (so that a
    line removed is its address gone)."""
    length = doc['length']
    if length <= len(content) and (not length or content[length - 1:length] == b'\n') and \
            hashlib.sha256(content[:length]).hexdigest() == doc['sha256']:
        return _lines(content[length:]), set(), None
    old = _read_copy(settings, doc)
    if old is None or doc['noncanonical']:
        return None
    old_lines, new_lines = _lines(old), _lines(content)
    return new_lines - old_lines, old_lines - new_lines, old_lines


def _addresses(lines, span):
    """{version: set of addresses} of ``lines``, and those written otherwise than canonically
    (as ``add`` writes them); None when one is not a single address."""
    found, respelled = {4: set(), 6: set()}, []
    for line in lines:
        item = span(line)
        if item is None or item[1] != item[2]:
            return None
        found[item[0]].add(item[1])
        if b'/' in line or b':' in line and (item[0] == 4 or _text(6, item[1]).encode('ascii') != line):
            respelled.append(_text(item[0], item[1]))
    return found, respelled


def _listed_in(content, text):
    """Whether a line of ``content`` is the address ``text`` (bytes, canonical), blanks around it aside."""
    position = content.find(text)
    while position != -1:
        start = content.rfind(b'\n', 0, position) + 1
        end = content.find(b'\n', position)
        if content[start:len(content) if end == -1 else end].strip() == text:
            return True
        position = content.find(text, position + 1)
    return False


def add(settings, content, digest, span):
    """The blocklist's changes since the last load applied alone (``add element`` and ``delete
    element`` in the hash sets, one transaction): the number of entries then, or None when
    only a full load is exact. Only when the table and its exceptions are those recorded
    (``loaded`` said so), the lines added or removed are all single addresses (``span``:
    sync._span) and none touches a network line's block (single addresses are never refused:
    sync.Entries._bounded); else (a network, a line that is no address, ...) a full load
    (sync.parse_entries), whose guards decide. The count is the full load's (``count``): an
    address appended counts unless listed already, in any spelling (the record's
    ``respelled``). A failed transaction: a full load."""
    doc = _read_record(settings)
    if doc is None or not isinstance(doc.get('length'), int) or not isinstance(doc.get('noncanonical'), int):
        return None
    counts, blocks = doc.get('addresses'), doc.get('blocks')
    if not isinstance(counts, list) or not isinstance(blocks, list) or len(counts) != 2 or len(blocks) != 2:
        return None
    changes = _changes(settings, content, doc)
    if changes is None:
        return None
    added, removed, old_lines = changes
    new, gone = _addresses(added, span), _addresses(removed, span)
    if new is None or gone is None:
        return None
    (new, respelled), gone = new, gone[0]
    known = doc.get('respelled')
    if old_lines is None and doc['noncanonical'] and not isinstance(known, list) and any(new.values()):
        return None     # listed already under another spelling? only a full load counts it exactly
    known = set(known or ())
    counts = list(counts)
    for version in (4, 6):
        index = version // 6
        gone[version] -= new[version]       # written otherwise, still listed
        counts[index] += len(new[version])  # never less: a bound on the addresses listed
        starts = [block[0] for block in blocks[index]]
        for value in new[version] | gone[version]:
            at = bisect.bisect_right(starts, value + 1) - 1
            if at >= 0 and value <= blocks[index][at][1] + 1:
                return None
    table = table_name(settings)
    lines, before = [], b'\n' + content[:doc['length']] if old_lines is None else None
    entries = doc['entries']
    for version in (4, 6):
        texts = [_text(version, value) for value in sorted(new[version])]
        _add_elements(lines, 'blocked_addr_v%d' % version, texts, table)
        deleted = [_text(version, value) for value in sorted(gone[version])]
        for start in range(0, len(deleted), CHUNK):
            lines.append('delete element %s blocked_addr_v%d { %s }' % (table, version, ', '.join(deleted[start:start + CHUNK])))
        # An entry more unless the address was listed already.
        entries += sum(1 for text in texts if (not _listed_in(before, text.encode('ascii')) and text not in known
                                               if old_lines is None else text.encode('ascii') not in old_lines)) - len(deleted)
    if lines:
        try:
            _apply('\n'.join(lines) + '\n', table)
        except BotDetectorError:
            return None
    if old_lines is None and doc['length']:
        with open(_copy(settings), 'ab') as handle:    # the same bytes as the blocklist: the hash says so
            handle.write(content[doc['length']:])
    else:
        replace_file(_copy(settings), content)
    doc.update(digest=digest, entries=entries, addresses=counts, noncanonical=doc['noncanonical'] + len(respelled),
               respelled=sorted(known | set(respelled)) if isinstance(doc.get('respelled'), list) and
               len(known) + len(respelled) <= RESPELLED else None,
               length=len(content), sha256=hashlib.sha256(content).hexdigest())
    _write_record(settings, doc)
    return entries


def _text(version, value):
    return socket.inet_ntop(socket.AF_INET if version == 4 else socket.AF_INET6,
                            value.to_bytes(4 if version == 4 else 16, 'big'))
