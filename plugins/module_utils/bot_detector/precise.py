# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opt-in precise rules: the bot and search-engine tests on the user agent only, a
crawler exempt only when its address verifies by reverse and forward DNS, lists matched
by exact address or CIDR network, optional IPv4 and IPv6 grouping."""

from __future__ import absolute_import, division, print_function

import ipaddress
import re
import socket
import threading
from collections import Counter
from itertools import compress, repeat
from operator import contains, itemgetter, not_

from .addresses import parse_address, parse_network
from .rules import ALLOW_LISTED, ALREADY_BLOCKED, BLOCK, INVALID, first_field, prefix_pattern
from .tally import whole
from .text import to_bytes, to_text

__metaclass__ = type


def user_agent(line):
    """The last double-quoted field of a line: the user agent in the combined log format."""
    end = line.rfind(b'"')
    start = line.rfind(b'"', 0, end) if end > 0 else -1
    return b'' if start == -1 else line[start + 1:end]


class PreciseFilter:
    """Job pages (the spec's prefixes, no /files/); a request whose user agent matches a
    crawler is counted under (address, crawler) until the address is verified."""

    def __init__(self, job_prefixes, crawlers):
        self._prefixes = prefix_pattern(job_prefixes)
        self._names = {}
        groups = []
        for i, name in enumerate(sorted(crawlers)):
            self._names['c%d' % i] = name
            groups.append(b'(?P<c%d>%s)' % (i, to_bytes(crawlers[name]['user_agent'])))
        self._crawler = re.compile(b'|'.join(groups), re.IGNORECASE) if groups else None

    def kept(self, lines):
        """(the job-page lines, joined, None): see rules.LineFilter.kept."""
        lines = list(compress(lines, map(self._prefixes.search, lines)))
        lines = list(compress(lines, map(not_, map(contains, lines, repeat(b'/files/')))))
        return lines, b'\n'.join(lines), None

    def count_into(self, lines, counter):
        self.count_kept(self.kept(lines)[0], counter, None)

    def count_kept(self, lines, counter, dummy):
        for line in lines:
            field = first_field(line)
            match = self._crawler.search(user_agent(line)) if self._crawler is not None else None
            counter[field if match is None else (field, self._names[match.lastgroup])] += 1


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
        self.resolver = resolver or SystemResolver(settings.dns_timeout)
        self.verified = {}            # (field, crawler) -> bool: the per-run cache
        self.verifications = []

    def key(self, field):
        """What is counted and blocked: the normalised address, its network with ``ipv4_prefix``
        or ``ipv6_prefix``, or the field itself when it is not an address."""
        address = parse_address(field)
        if address is None:
            return field
        prefix = self.prefixes[address.version]
        if prefix:
            return str(ipaddress.ip_network('%s/%d' % (address, prefix), strict=False)).encode('ascii')
        return str(address).encode('ascii')

    def decision_key(self, address):
        """The key a decision taken elsewhere (fleet) is applied as: normalised."""
        if parse_address(address.split(b'/')[0]) is None:
            return address
        if b'/' in address:
            return parse_network(address).with_prefixlen.encode('ascii')
        return self.key(address)

    def verify(self, field, crawler):
        """Reverse DNS, a name under the crawler's domains, forward DNS back to the address."""
        address = parse_address(field)
        if address is None:
            return False
        domains = [d.lower().strip('.') for d in self.crawlers[crawler]['domains']]
        try:
            names = self.resolver.reverse(str(address))
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
            if any(parse_address(to_bytes(a)) == address for a in forward):
                return True
        return False

    @staticmethod
    def _is_server(key, servers):
        network = parse_network(key)
        return network is not None and any(s.version == network.version and s in network for s in servers)

    def examined(self, counter, server_ips, top):
        """Rank with unverified crawler claims counted; verify the claimers that reach the
        examined records, drop what verifies, and rank again until the records are exact."""
        counter = whole(counter)
        plain, claims = Counter(), {}
        for key, count in counter.items():
            if isinstance(key, tuple):
                claims.setdefault(key[0], Counter())[key[1]] += count
            else:
                plain[key] += count
        servers = [a for a in (parse_address(ip) for ip in server_ips) if a is not None]
        while True:
            grouped, members = Counter(), {}
            for field, count in plain.items():
                grouped[self.key(field)] += count
                members.setdefault(self.key(field), set()).add(field)
            for field, per_crawler in claims.items():
                unverified = sum(n for crawler, n in per_crawler.items() if not self.verified.get((field, crawler)))
                grouped[self.key(field)] += unverified
                members.setdefault(self.key(field), set()).add(field)
            ordered = sorted(grouped.items(), key=itemgetter(1, 0), reverse=True)
            records = [(count, key) for key, count in ordered if count and not self._is_server(key, servers)][:top]
            pending = sorted(set((field, crawler) for dummy, key in records for field in members[key]
                                 for crawler in claims.get(field, ()) if (field, crawler) not in self.verified))
            if not pending:
                return records
            for field, crawler in pending:
                self.verified[(field, crawler)] = self.verify(field, crawler)
                self.verifications.append({'address': to_text(field), 'crawler': crawler,
                                           'verified': self.verified[(field, crawler)]})

    @staticmethod
    def lists(blocklist_content, exclusions_content):
        return NetworkLists(blocklist_content, exclusions_content)


class NetworkLists:
    """Precise lists: each line an address or a CIDR network (others ignored)."""

    def __init__(self, blocklist, exclusions):
        self.blocked = self._networks(blocklist)
        self.excluded = self._networks(exclusions)

    @staticmethod
    def _networks(content):
        return [n for n in (parse_network(line) for line in content.split(b'\n') if line.strip()) if n is not None]

    def verdict(self, key):
        """The verdict on a record at or over the threshold."""
        target = parse_network(key) if parse_address(key.split(b'/')[0]) is not None else None
        if target is None:
            return INVALID
        if any(n.version == target.version and target.subnet_of(n) for n in self.blocked):
            return ALREADY_BLOCKED
        if any(n.version == target.version and target.overlaps(n) for n in self.excluded):
            return ALLOW_LISTED
        return BLOCK

    def add(self, key):
        self.blocked.append(parse_network(key))
