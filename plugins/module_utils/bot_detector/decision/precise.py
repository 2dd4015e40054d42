# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opt-in precise rules: the bot and search-engine tests on the user agent only, a
crawler exempt only when its address verifies by reverse and forward DNS, lists matched
by exact address or CIDR network, optional IPv4 and IPv6 grouping."""

from __future__ import absolute_import, division, print_function

import re
import socket
import threading
import time
from collections import Counter
from itertools import compress, repeat
from operator import contains, eq, ge, ne, not_, or_

from ..base.text import to_bytes, to_text
from ..reading.spill import parts, spilled
from ..reading.tally import largest, whole
from .never_blocked import too_wide_warning, without_too_wide
from .ranges import BITS, V4, Networks, client, grouped, network, spelling, v4_groups
from .rules import ALLOW_LISTED, ALREADY_BLOCKED, BLOCK, INVALID, count_first_fields, first_field, prefix_pattern

__metaclass__ = type

WORKERS = 16        # crawler verifications at a time
KEY_CACHE = 1 << 16     # fields whose key a run keeps parsed
_WORDS = re.compile(br'[A-Za-z0-9_ -]+(?:\|[A-Za-z0-9_ -]+)*\Z')


def crawlers_of(crawlers):
    """The crawlers' names, in the order the filter numbers them."""
    return sorted(crawlers)


def user_agent(line):
    """The last double-quoted field of a line: the user agent in the combined log format."""
    end = line.rfind(b'"')
    start = line.rfind(b'"', 0, end) if end > 0 else -1
    return b'' if start == -1 else line[start + 1:end]


class SpillCodec:
    """How precise counts go to spill files (spill.Codec): a key by the hash of its group's
    key (``group(field)``), so that a part holds every field of its groups and their claims;
    a claim (field, crawler) as the line 'field<TAB>n', n the crawler's place in ``names``
    (a first field holds no blank)."""

    def __init__(self, group, names):
        self.group, self.names = group, list(names)
        self._index = dict((name, b'%d' % i) for i, name in enumerate(self.names))

    def hash(self, key):
        return hash(self.group(key[0] if isinstance(key, tuple) else key))

    def encode(self, keys):
        index = self._index
        return [key[0] + b'\t' + index[key[1]] if isinstance(key, tuple) else key for key in keys]

    def decode(self, piece):
        keys = piece.split(b'\n')
        if b'\t' not in piece:
            return keys
        names = self.names
        return [key if b'\t' not in key else (key.split(b'\t')[0], names[int(key.split(b'\t')[1])]) for key in keys]


class PreciseFilter:
    """Job pages (the spec's prefixes, no /files/); a request whose user agent matches a
    crawler is counted under (address, crawler) until the address is verified. With a
    ``spill_codec`` (PreciseRules sets it), counts past count_budget may go to files."""

    spill_codec = None

    @property
    def spillable(self):
        return self.spill_codec is not None

    def __init__(self, job_prefixes, crawlers):
        self._prefixes = prefix_pattern(job_prefixes)
        self._names = {}
        groups = []
        for i, name in enumerate(sorted(crawlers)):
            self._names['c%d' % i] = name
            groups.append(b'(?P<c%d>%s)' % (i, to_bytes(crawlers[name]['user_agent'])))
        self._crawler = re.compile(b'|'.join(groups), re.IGNORECASE) if groups else None
        # Patterns that are alternations of plain words (the default table's): the lines that
        # may claim a crawler are found by C-level substring tests of the lower-cased lines,
        # and only those are matched one by one; others: every line is matched.
        sources = [to_bytes(crawler['user_agent']) for crawler in crawlers.values()]
        self._needles = None
        if sources and all(_WORDS.match(source) for source in sources):
            words = set(word.lower() for source in sources for word in source.split(b'|'))
            self._needles = sorted(w for w in words if not any(o != w and o in w for o in words))

    def kept(self, lines):
        """(the job-page lines, joined, None): see rules.LineFilter.kept."""
        lines = list(compress(lines, map(self._prefixes.search, lines)))
        lines = list(compress(lines, map(not_, map(contains, lines, repeat(b'/files/')))))
        return lines, b'\n'.join(lines), None

    def count_into(self, lines, counter):
        return self.count_kept(self.kept(lines)[0], counter, None)

    def _may_claim(self, lines):
        """A list of booleans: which of ``lines`` may claim a crawler (None: none may)."""
        if self._crawler is None or not lines:
            return None
        if self._needles is None:
            return list(map(bool, map(self._crawler.search, lines)))
        lowered = b'\n'.join(lines).lower()
        present = [needle for needle in self._needles if needle in lowered]
        if not present:
            return None
        lowered = list(map(bytes.lower, lines))
        mask = list(map(contains, lowered, repeat(present[0])))
        for needle in present[1:]:
            mask = list(map(or_, mask, map(contains, lowered, repeat(needle))))
        return mask

    def count_kept(self, lines, counter, dummy):
        """Count ``lines``; the keys counted (a list, or None), as rules.LineFilter.count_kept."""
        mask = self._may_claim(lines)
        if mask is None:
            return count_first_fields(lines, counter)
        keys = count_first_fields(list(compress(lines, map(not_, mask))), counter) or []
        claimed = []
        for line in compress(lines, mask):
            field = first_field(line)
            match = self._crawler.search(user_agent(line))
            claimed.append(field if match is None else (field, self._names[match.lastgroup]))
        counter.update(claimed)
        return keys + claimed


class SystemResolver:
    """The host's resolver, each lookup bounded by ``timeout`` seconds."""

    def __init__(self, timeout):
        self.timeout = timeout

    def _call(self, function, *args):
        box = {}

        def target():
            try:
                box['value'] = function(*args)
            except Exception as exc:  # pylint: disable=broad-except
                box['error'] = exc
        thread = threading.Thread(target=target)
        thread.daemon = True          # a hung lookup must not keep the run alive
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive() or 'value' not in box:
            raise OSError('lookup failed or timed out')
        return box['value']

    def reverse(self, address):
        name, aliases, dummy = self._call(socket.gethostbyaddr, address)
        return [name] + list(aliases)

    def forward(self, name):
        return [info[4][0] for info in self._call(socket.getaddrinfo, name, None)]


class PreciseRules:
    """The opt-in precise rules. ``resolver`` (reverse(address) -> names,
    forward(name) -> addresses) defaults to the host's; tests inject one."""

    name = 'precise'

    def __init__(self, settings, resolver=None):
        self.line_filter = PreciseFilter(settings.job_prefixes, settings.crawlers)
        self.crawlers = settings.crawlers
        self.prefixes = {4: settings.ipv4_prefix, 6: settings.ipv6_prefix}
        self.min_prefix = {4: settings.enforcement_min_prefix_v4, 6: settings.enforcement_min_prefix_v6}
        self.resolver = resolver or SystemResolver(settings.dns_timeout)
        self.verified = {}            # (field, crawler) -> True, False, None (left unverified): the run's
        self.threshold = settings.threshold
        self.budget, self.lookups_left, self._deadline = settings.dns_budget, settings.dns_lookups, None
        self._keys = {}               # field -> key (a cache of at most KEY_CACHE fields)
        self.verifications = []
        self.line_filter.spill_codec = SpillCodec(self.key, crawlers_of(settings.crawlers))

    def key(self, field):
        """What is counted and blocked: the address in its one spelling (a mapped IPv6
        address as the IPv4 address), its network with ``ipv4_prefix`` or ``ipv6_prefix``,
        or the field itself when it is not an address. Parsed once per field and run."""
        key = self._keys.get(field)
        if key is None:
            if len(self._keys) >= KEY_CACHE:      # bounded, whatever the churn
                self._keys.clear()
            parsed = client(field)
            if parsed is None:
                key = field
            else:
                version, value = parsed
                length = self.prefixes[version] or BITS[version]
                key = spelling(version, length, grouped(version, value, length))
            self._keys[field] = key
        return key

    def decision_key(self, address):
        """The key a decision taken elsewhere (fleet) is applied as: normalised."""
        if client(address.split(b'/')[0]) is None:
            return address
        if b'/' in address:
            parsed = network(address)
            if parsed is None:
                return address
            version, length, first = parsed
            return b'%s/%d' % (spelling(version, BITS[version], first), length)
        return self.key(address)

    def verify(self, field, crawler):
        """Reverse DNS, a name under the crawler's domains, forward DNS back to the address."""
        address = client(field)
        if address is None:
            return False
        domains = [d.lower().strip('.') for d in self.crawlers[crawler]['domains']]
        try:
            names = self.resolver.reverse(spelling(address[0], BITS[address[0]], address[1]).decode('ascii'))
        except Exception:  # pylint: disable=broad-except
            return False
        for name in names:
            name = name.lower().rstrip('.')
            if not any(name == d or name.endswith('.' + d) for d in domains):
                continue
            try:
                forward = self.resolver.forward(name)
            except Exception:  # pylint: disable=broad-except
                continue
            if any(client(to_bytes(a)) == address for a in forward):
                return True
        return False

    def _group(self, plain):
        """{key: count} of the plain (not crawler-claiming) counts. Only fields that can
        have another key are parsed: with no ipv4_prefix, a field without ':' is its own;
        with it, the plain IPv4 fields are grouped in bulk (v4_groups), not one by one."""
        length = self.prefixes[4]
        if length:
            bulk = list(compress(plain, map(V4.match, plain)))     # lists freed as soon as done with: 1 M keys
            if b'0.0.0.0' in plain:
                bulk.remove(b'0.0.0.0')
            many = list(compress(bulk, map(ne, map(plain.__getitem__, bulk), repeat(1))))
            single = list(compress(bulk, map(eq, map(plain.__getitem__, bulk), repeat(1))))
            del bulk
            grouped = Counter()
            # Addresses with one request (most, in a flood of addresses) counted in C.
            identifiers, keys_of = v4_groups(single, length)
            grouped.update(identifiers)
            del single, identifiers
            for identifier, field in zip(v4_groups(many, length)[0], many):
                grouped[identifier] += plain[field]
            if keys_of is not None:
                grouped = Counter(dict(zip(keys_of(grouped.keys()), grouped.values())))
            others = list(compress(plain, map(not_, map(V4.match, plain))))
            for field in others + ([b'0.0.0.0'] if b'0.0.0.0' in plain else []):
                grouped[self.key(field)] += plain[field]
            return grouped
        parse = list(compress(plain, map(contains, plain, repeat(b':'))))
        if not parse:
            return plain
        grouped, moved = Counter(plain), Counter()
        for field in parse:
            key = self.key(field)
            if key != field:
                grouped[field] -= plain[field]
                moved[key] += plain[field]
        grouped.update(moved)
        return grouped

    def examined(self, counter, server_ips, top, at_least=None, wanted=None):
        """Rank with unverified crawler claims counted; verify the claimers that reach the
        examined records, drop what verifies, and rank again until the records are exact.
        With ``at_least``, only the records with that count or more (applied to each
        group's sum: a verification only lowers a count, so none under it rises); with
        ``wanted`` (a test of a key), only the keys it accepts. Both keep what is ranked
        bounded by the lines (at most lines / at_least records) or by what is asked.
        The server test runs on the records ranked only: the server's keys are known.
        Counts spilled to files (spill.py) are ranked a part at a time, each part holding
        whole groups (SpillCodec): the first ``top`` of all are among the parts' first."""
        counter = whole(counter)
        servers = set(self.key(ip) for ip in server_ips if client(ip) is not None)
        if spilled(counter):
            def ranked():
                found, claimed, claimers = [], {}, {}
                for part in parts(counter):
                    grouped, claims = self._split(part)
                    records, members = self._rank(grouped, claims, servers, top, at_least, wanted)
                    found.extend(records)
                    for count, key in records:
                        if key in members:
                            claimers[key] = members[key]
                            claimed.update((field, claims[field]) for field in members[key])
                found.sort(reverse=True)
                return found[:top], claimed, claimers
        else:
            grouped, claims = self._split(counter)

            def ranked():
                records, members = self._rank(grouped, claims, servers, top, at_least, wanted)
                return records, claims, members
        while True:
            records, claims, members = ranked()
            # Only a record at or over the threshold can be blocked: only its claims matter.
            pending = set((field, crawler) for count, key in records if count >= self.threshold
                          for field in members.get(key, ()) for crawler in claims[field]
                          if (field, crawler) not in self.verified)
            if not pending:
                return records
            self._verify_all(sorted(pending, key=lambda item: (-claims[item[0]][item[1]], item)))

    def _split(self, counter):
        """(the plain counts grouped into keys, {field: {crawler: count}} of the claims)."""
        claimed = list(compress(counter, map(isinstance, counter, repeat(tuple))))
        plain, claims = counter, {}
        if claimed:
            plain = Counter(counter)
            for key in claimed:
                claims.setdefault(key[0], Counter())[key[1]] += plain.pop(key)
        return self._group(plain), claims

    def _rank(self, grouped, claims, servers, top, at_least=None, wanted=None):
        """([(count, key)] the first ``top`` records, of those with ``at_least`` or more and
        that ``wanted`` accepts; {key: [field]} the claimers of each key)."""
        ranked, members = grouped, {}
        if claims:
            ranked = Counter(grouped)
            for field, per_crawler in claims.items():
                key = self.key(field)
                # Counted: a claim that failed, or is not verified yet; not: one that
                # verified, or was left unverified when the run's budget ran out (None).
                ranked[key] += sum(n for crawler, n in per_crawler.items()
                                   if self.verified.get((field, crawler), False) is False)
                members.setdefault(key, []).append(field)
        if wanted is not None:
            keys = list(filter(wanted, ranked))
            ranked = dict(zip(keys, map(ranked.__getitem__, keys)))
        if at_least is not None and at_least > 1:
            keys = list(compress(ranked, map(ge, ranked.values(), repeat(at_least))))
            ranked = dict(zip(keys, map(ranked.__getitem__, keys)))
        records = [(count, key) for key, count in largest(ranked, top + len(servers))
                   if count and key not in servers][:top]
        return records, members

    def _verify_all(self, pending):
        """Verify ``pending`` claims, the largest first, WORKERS at a time, within the run's
        ``dns_lookups`` and ``dns_budget``; what is left is recorded as None (unverified)."""
        if self._deadline is None:
            self._deadline = time.monotonic() + self.budget
        deadline, allowed = self._deadline, pending[:max(0, self.lookups_left)]
        self.lookups_left -= len(allowed)
        results, queue, guard = {}, list(reversed(allowed)), threading.Lock()

        def work():
            while True:
                with guard:
                    if not queue or time.monotonic() >= deadline:
                        return
                    item = queue.pop()
                value = self.verify(*item)
                with guard:
                    results[item] = value
        threads = [threading.Thread(target=work) for dummy in range(min(WORKERS, len(allowed)))]
        for thread in threads:
            thread.daemon = True      # a lookup still hanging at the deadline must not keep the run
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with guard:
            done, queue[:] = dict(results), []
        for field, crawler in pending:
            self.verified[(field, crawler)] = done.get((field, crawler))
            self.verifications.append({'address': to_text(field), 'crawler': crawler,
                                       'verified': self.verified[(field, crawler)]})

    def lists(self, blocklist_content, exclusions):
        """The lists. ``exclusions``: the allow-list's content, or what parse_exclusions made of it
        (kept while the file is unchanged). Its lines wider than the enforcement's limits spare no
        one, as in the enforcement (decision/never_blocked.py), named by ``too_wide_warning``."""
        content, networks = exclusions if isinstance(exclusions, tuple) else (exclusions, None)
        narrower, wide = without_too_wide(content, self.min_prefix)
        lists = NetworkLists(blocklist_content, networks if networks is not None and not wide else narrower)
        lists.too_wide_warning = too_wide_warning('precise rules', wide, self.min_prefix)
        return lists

    @staticmethod
    def parse_exclusions(content):
        """The allow-list as the precise rules read it, made once while the file is unchanged
        (lists.allow.read_exclusions), not at each of a follower's decisions: its content (for the
        width guard, which finds its few CIDR lines at C speed) and its Networks."""
        return content, Networks(content)


class NetworkLists:
    """Precise lists: each line an address or a CIDR network (others ignored), a mapped
    IPv6 one as IPv4; membership asked only for the records examined (ranges.Networks)."""

    def __init__(self, blocklist, exclusions):
        self.blocked = Networks(blocklist)
        self.excluded = exclusions if isinstance(exclusions, Networks) else Networks(exclusions)

    def verdict(self, key):
        """The verdict on a record at or over the threshold."""
        target = network(key) if client(key.split(b'/')[0]) is not None else None
        if target is None:
            return INVALID
        if self.blocked.contains(*target):
            return ALREADY_BLOCKED
        if self.excluded.overlaps(*target):
            return ALLOW_LISTED
        return BLOCK

    def add(self, key):
        self.blocked.add(key)
