# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enforcement (setting ``enforcement``): the enforcement point made equal to the blocklist.

Nothing of the detection imports this package: the drivers call ``sync`` through one step,
drivers/after_change.py (after a detection, apply or unblock run that was not in check mode,
a follower's change, and ``--enforce-now``). Each sync reads the blocklist under the run's lock, parses its entries
(``parse_entries``) and hands them to the backend, which applies them in one step:

nftables.py  one ``nft -f -`` transaction: table inet bot_detector, sets blocked_v4/blocked_v6
nginx.py     the geo include file, replaced atomically when it changes, nginx tested, reloaded

A failed sync never undoes what the run did to the blocklist: it is a warning naming the
cause, the command's exit status 4, and ``bot_detector_enforcement_in_sync 0`` in the metrics.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import ipaddress
import socket

from ..base.errors import BotDetectorError
from ..base.messages import ENFORCEMENT_SKIPPED, ENFORCEMENT_TOO_BROAD
from ..base.text import NAMED_START, named_by_start, printable, to_text
from ..lists.content import read_list
from ..lists.writer import BlocklistWriter
from ..decision.never_blocked import merge, never_blocked, span as _span
from ..decision.ranges import cidrs

__metaclass__ = type

BACKENDS = ('nftables', 'nginx')
FORMAT = '2'        # of what a load makes of a blocklist: part of its digest
# The skipped lines one warning names; the rest are counted.
NAMED_SKIPPED = 10


def parse_entry(line):
    """One blocklist line as an ip_network, or None (see _span)."""
    span = _span(line)
    if span is None:
        return None
    version, first, dummy, length = span
    return (ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network)((first, length))


def _text(version, value):
    return socket.inet_ntop(socket.AF_INET if version == 4 else socket.AF_INET6,
                            value.to_bytes(4 if version == 4 else 16, 'big'))


def _elements(spans, version, exempt=None):
    """The spans merged (overlapping or adjacent: what nft's auto-merge would refuse in one
    add) and written as addresses and CIDR networks, in order; with ``exempt`` (NeverBlocked),
    less the networks wholly exempt, and with the exempt networks inside the others (text)."""
    pieces = []
    for first, last in merge(spans):
        if first == last:
            pieces.append((first, last))
        else:
            pieces.extend(cidrs(version, first, last))
    inside = []
    if exempt is not None:
        pieces, inside = exempt.split(version, pieces)
    return [_written(version, first, last) for first, last in pieces], [_written(version, first, last) for first, last in inside]


def _written(version, first, last):
    """A CIDR span as the geo file and nft write it: an address alone, else network/length."""
    if first == last:
        return _text(version, first)
    return '%s/%d' % (_text(version, first), (32 if version == 4 else 128) - (last - first).bit_length())


def _outside(addresses, blocks, version):
    """The ``addresses`` (sorted integers) in none of the ``blocks`` (merged spans), as text."""
    found, at = [], 0
    for value in addresses:
        while at < len(blocks) and blocks[at][1] < value:
            at += 1
        if at == len(blocks) or value < blocks[at][0]:
            found.append(_text(version, value))
    return found


def _covered(items):
    """How many addresses ``items`` ((first, last, ...)) cover together."""
    return sum(last - first + 1 for first, last in merge(item[:2] for item in items))


def _widest_block(spans):
    """The most addresses one block of ``spans`` (merged where they overlap or touch) covers."""
    widest, start, end = 0, None, None
    for first, last, dummy in sorted(spans):
        if start is None or first > end + 1:
            start, end = first, last
        else:
            end = max(end, last)
        widest = max(widest, end - start + 1)
    return widest


class Entries:
    """The enforceable content of a blocklist: ``v4`` and ``v6``, each a sorted list of
    addresses and CIDR networks (text) with duplicates, and networks inside others or next to
    each other, merged; ``skipped``, the lines that are not an address or network (text).
    With ``exempt`` (decision/never_blocked.NeverBlocked), networks wholly exempt are left out, and ``exempt_v4``
    and ``exempt_v6`` hold the exempt networks inside the others: never blocked."""

    def __init__(self, content, min_prefix=None, exempt=None):
        # the blocklist's length, when lines may be appended to it (it ends with a newline)
        self.length = len(content) if not content or content.endswith(b'\n') else None
        spans, self.skipped, self.refused = {4: [], 6: []}, [], []
        self.noncanonical, self.respelled = 0, []     # the latter: those addresses as nftables.add writes them
        for raw in content.split(b'\n'):
            line = raw.strip()
            if not line or line.startswith(b'#'):
                continue
            span = _span(line)
            if span is None:
                self.skipped.append(named_by_start(printable(to_text(line[:4 * NAMED_START]))))
            else:
                spans[span[0]].append((span[1], span[2], line))
                if span[1] == span[2] and (b'/' in line or b':' in line and (span[0] == 4 or _text(6, span[1]).encode('ascii') != line)):
                    self.noncanonical += 1      # an address written otherwise than nftables.add writes it
                    self.respelled.append(_text(span[0], span[1]))
        self.min_prefix = min_prefix or {4: 8, 6: 32}
        # For nftables' two kinds of sets and its additions (nftables.add): the address lines
        # counted, and the blocks of network lines (refused or not) an address may touch.
        self.address_lines = dict((v, sum(1 for span in spans[v] if span[0] == span[1])) for v in (4, 6))
        self.network_blocks = dict((v, [list(block) for block in merge([span[:2] for span in spans[v] if span[0] != span[1]])]) for v in (4, 6))
        for version, bits in ((4, 32), (6, 128)):
            spans[version] = self._bounded(spans[version], 1 << (bits - self.min_prefix[version]))
        self.v4, self.exempt_v4 = _elements(spans[4], 4, exempt)
        self.v6, self.exempt_v6 = _elements(spans[6], 6, exempt)
        self.addresses, self.networks = {}, {}
        for version in (4, 6):
            networks = [span for span in spans[version] if span[0] != span[1]]
            self.networks[version] = _elements(list(networks), version)[0]
            self.addresses[version] = _outside(sorted(set(f for f, l in spans[version] if f == l)), merge(networks), version)

    def _bounded(self, spans, widest):
        """The spans less those of the network lines that, alone, merged with other network
        lines, or all together, cover more than ``widest`` addresses (two /1 lines are everyone; so are 256 blocks each
        one address short of a /8): of a block too wide, its widest lines go to ``refused`` until
        the rest is not; then, while the network lines that stay cover more than ``widest`` in
        all, the widest of them go. Single addresses are never refused, nor counted in that
        total (a /8 is 16 million of them), nor merged into a network line's block (a /24 and
        the address after it are no block wider than a /24): so an address appended never
        changes which network lines a load refuses, and the backends may add it alone
        (nftables.add, nginx.append)."""
        singles = [item for item in spans if item[0] == item[1]]
        spans = sorted(item for item in spans if item[0] != item[1])     # only network lines form blocks
        kept, group, end = [], [], None
        for first, last, line in spans + [(None, None, None)]:
            if first is not None and group and first <= end + 1:
                group.append((first, last, line))
                end = max(end, last)
                continue
            if group:
                if end - group[0][0] + 1 > widest:
                    group.sort(key=lambda item: item[1] - item[0], reverse=True)
                    while group and _widest_block(group) > widest:
                        self.refused.append(printable(to_text(group.pop(0)[2])))
                kept.extend(group)
            group, end = [(first, last, line)], last
        networks = kept
        if _covered(networks) > widest:
            networks = self._within(networks, widest)
        return [(first, last) for first, last, dummy in singles + networks]

    def _within(self, networks, widest):
        """``networks`` less the widest of them, the fewest that leave at most ``widest``
        addresses covered (refused)."""
        networks = sorted(networks, key=lambda item: item[1] - item[0], reverse=True)
        low, high = 1, len(networks)
        while low < high:       # the coverage only falls as more of the widest go
            middle = (low + high) // 2
            if _covered(networks[middle:]) <= widest:
                high = middle
            else:
                low = middle + 1
        self.refused.extend(printable(to_text(item[2])) for item in networks[:low])
        return networks[low:]

    def refused_warning(self):
        """The one warning naming the lines refused as too broad, or None."""
        if not self.refused:
            return None
        named = ', '.join(repr(named_by_start(line)) for line in self.refused[:NAMED_SKIPPED])
        if len(self.refused) > NAMED_SKIPPED:
            named += ' and %d more' % (len(self.refused) - NAMED_SKIPPED)
        return ENFORCEMENT_TOO_BROAD % (len(self.refused), 'line is' if len(self.refused) == 1 else 'lines are',
                                        self.min_prefix[4], self.min_prefix[6], named)

    def __len__(self):
        return len(self.v4) + len(self.v6)

    def skipped_warning(self):
        """The one warning naming the lines skipped, or None."""
        if not self.skipped:
            return None
        named = ', '.join(repr(line) for line in self.skipped[:NAMED_SKIPPED])
        if len(self.skipped) > NAMED_SKIPPED:
            named += ' and %d more' % (len(self.skipped) - NAMED_SKIPPED)
        return ENFORCEMENT_SKIPPED % (len(self.skipped), 'line is' if len(self.skipped) == 1 else 'lines are', named)


def parse_entries(content, settings=None, exempt=None):
    """The Entries of a blocklist's content (bytes), bounded by ``settings``' minimum prefixes,
    less ``exempt`` (decision/never_blocked.NeverBlocked)."""
    if settings is None:
        return Entries(content, exempt=exempt)
    return Entries(content, {4: settings.enforcement_min_prefix_v4, 6: settings.enforcement_min_prefix_v6}, exempt)


class Status:
    """What one sync found: ``in_sync`` when the enforcement point equals the blocklist,
    ``entries`` loaded (networks after collapsing), ``changed`` when it was changed,
    ``error`` the cause when it failed, ``too_wide`` the allow-list lines and trusted
    proxies wider than the limits (sparing no one)."""

    def __init__(self, backend):
        self.backend = backend
        self.in_sync = False
        self.entries = None
        self.skipped = []
        self.changed = False
        self.error = None
        self.too_wide = None        # allow-list lines and trusted proxies wider than the limits

    def as_dict(self):
        return {'backend': self.backend, 'in_sync': self.in_sync, 'entries': self.entries,
                'skipped': self.skipped, 'changed': self.changed, 'error': self.error, 'too_wide': self.too_wide}


def _backend(name):
    if name == 'nftables':
        from . import nftables      # the backend in use only
        return nftables
    from . import nginx     # the backend in use only
    return nginx


def digest_of(settings, content, exempt=None):
    """What identifies a load: the blocklist's bytes, the backend and its settings, the
    exemptions, the format. The backend keeps it beside what it loaded (nft: the drop rules' comment; nginx:
    the geo file's header), so an unchanged blocklist is neither parsed nor loaded again."""
    what = [FORMAT, settings.enforcement, '%d,%d' % (settings.enforcement_min_prefix_v4, settings.enforcement_min_prefix_v6)]
    if settings.enforcement == 'nftables':
        what.append(','.join(str(port) for port in sorted(set(settings.enforcement_ports))))
    if exempt is not None:
        what.append(exempt.key)
    return hashlib.sha256(('\n'.join(what) + '\n').encode('ascii') + content).hexdigest()[:32]


def _appended(backend, settings, content, exempt, digest, status):
    """Whether the backend took the lines appended since its last load alone (nginx.append),
    without the whole blocklist parsed."""
    append = getattr(backend, 'append', None)
    if append is None:
        return False
    done = append(settings, content, lambda prefix: digest_of(settings, prefix, exempt), digest, exempt, _span)
    if done is None:
        return False
    status.changed, status.entries = done
    return True


def sync(settings, force=False, on_skipped=None):
    """Make the enforcement point of ``settings.enforcement`` equal to the blocklist, under
    the run's lock (so two runs load their content in the order they changed it). When the
    backend holds the digest of this blocklist already, nothing is parsed or loaded (the
    lines skipped were named when it was loaded); ``force`` loads anyway. Returns a Status;
    never raises for a failed sync. ``on_skipped(warning)`` gets the warning about lines
    skipped."""
    status = Status(settings.enforcement)
    writer = BlocklistWriter(settings.blocklist, settings.activity_log, settings.lock_timeout)
    try:
        writer.lock()
        try:
            # strict: a blocklist that cannot be read is a failed sync, never an empty set
            content = read_list(settings.blocklist, strict=True)
            backend = _backend(settings.enforcement)
            exempt = never_blocked(settings)
            digest = digest_of(settings, content, exempt)
            status.too_wide = len(exempt.too_wide)
            bad = getattr(backend, 'bad_record', lambda dummy: None)(settings)     # nftables: a damaged record
            if bad and on_skipped is not None:
                on_skipped(bad)
            loaded = None if force else backend.loaded(settings)
            added = None
            if loaded is not None and loaded[0] != digest and hasattr(backend, 'add'):
                added = backend.add(settings, content, digest, _span)
            if loaded is not None and loaded[0] == digest:
                status.entries = loaded[1]
            elif added is not None:     # lines appended or removed, applied alone (nftables.add)
                status.entries, status.changed = added, True
            elif loaded is not None and _appended(backend, settings, content, exempt, digest, status):
                pass
            else:
                entries = parse_entries(content, settings, exempt)
                status.skipped = entries.skipped + entries.refused
                for warning in (entries.skipped_warning(), entries.refused_warning(), exempt.too_wide_warning('enforcement')):
                    if warning and on_skipped is not None:
                        on_skipped(warning)
                extra = {'content': content} if hasattr(backend, 'add') else {}
                status.changed = backend.load(settings, entries, digest, force, **extra)
                status.entries = getattr(backend, 'count', len)(entries)
            status.in_sync = True
        finally:
            writer.unlock()
    except BotDetectorError as exc:
        status.error = exc.message
    return status
