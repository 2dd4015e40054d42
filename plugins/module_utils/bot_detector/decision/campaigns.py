# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The campaign profile's decisions (setting ``campaigns``; issue 45): each window's counts
(addresses and their signals, reading/signals.py) judged by key, each decision with its
answer and why.

- address over ``threshold`` among the top ``top`` (the reference's rule): block, unless the
  address behaves as a browser (many people behind one carrier NAT address): then nothing
  below ``campaign_shared_threshold``, a challenge at or over it;
- trap hit: block; from an address that behaves as a browser, a challenge;
- address without browser behaviour at or over ``campaign_behaviour_threshold``: a challenge;
- network (IPv4 /24, IPv6 /64 and /48 by default) whose addresses without browser behaviour
  sent ``campaign_network_threshold`` job-page requests (from two or more addresses), or
  ``campaign_network_addresses`` distinct such addresses: a challenge, never a block;
- an address that behaves as a browser but walks job ids (``campaign_walk_ids`` of the ids it
  came to by a referer have a neighbour id it also requested, half of them at least): a
  challenge at ``campaign_behaviour_threshold``, over ``threshold`` too (it may be a NAT address
  of people looking at neighbouring jobs); it counts towards its network as no browser does;
- a network or AS in one of ``hosting_asns`` (hosting and cloud, where no person browses from):
  its thresholds divided by ``campaign_hosting_divisor``.

Networks and distinct addresses are sums over the address keys, all of them (the top cut
is the address key's alone), one part of spilled counts at a time.
"""

from __future__ import absolute_import, division, print_function

import socket
import time
from collections import Counter
from itertools import compress, repeat
from operator import add, ge, itemgetter, methodcaller

from ..base.clock import window_start
from ..reading.signals import ASSET, REFERRED, SIGNAL, TRAP, WALK, CampaignFilter, split
from ..reading.spill import parts
from ..reading.tally import whole
from ..values.answer_settings import answer_for
from .never_blocked import never_blocked
from .ranges import BITS, network_text
from .rules import AppendedContent, SpecRules, SubstringLists, entries_at_least, server_test

__metaclass__ = type

WINDOWS_HELD = 2        # splits held: a decision step's windows (the previous and the current hour)


class Decision:
    """One key's decision: its ``kind`` (one of answer_settings.DECISION_KINDS), ``key`` (bytes:
    an address or a network), ``count`` (its job-page requests in the window), ``reason`` (text)
    and ``answer`` (block, throttle or challenge: answer_for's, from the kind's setting; None for
    a shared address spared)."""

    def __init__(self, kind, answer, key, count, reason):
        self.kind, self.answer, self.key, self.count, self.reason = kind, answer, key, count, reason

    def __repr__(self):
        return 'Decision(%r, %r, %r, %d, %r)' % (self.kind, self.answer, self.key, self.count, self.reason)


def browsers_of(addresses, signals):
    """The addresses that behave as browsers (Campaigns.behaviour), found among those that
    loaded an asset at least: one that requested no job page too (a reader of the site's other
    pages)."""
    assets, referred = signals[ASSET], signals[REFERRED]
    found = set()
    for address, loaded in assets.items():
        count = addresses.get(address, 0)
        if loaded >= 1 and loaded * 2 >= count and referred.get(address, 0) * 2 >= count:
            found.add(address)
    return found


def summed(counts):
    """{key: count} of the mappings ``counts`` added up (C-level passes over each one's keys)."""
    total = dict(counts[0])
    for more in counts[1:]:
        keys = list(more)
        total.update(zip(keys, map(add, map(total.get, keys, repeat(0)), more.values())))
    return total


def sliding(previous, current, weight):
    """HAProxy's http_req_rate estimate of the last 60 minutes per key: the current hour's
    count plus the previous hour's weighted by ``weight``, the share of that hour still inside
    them (whole requests, rounded down)."""
    estimate = Counter()
    for part in parts(current):
        estimate.update(part)
    if weight > 0:
        for part in parts(previous):
            estimate.update(dict((key, int(count * weight)) for key, count in part.items() if int(count * weight)))
    return estimate


def sliding_weight(now=None):
    """The share of the previous clock hour still inside the 60 minutes up to ``now``."""
    now = time.time() if now is None else now
    return max(0.0, 3600 - (now - window_start(now))) / 3600.0


class Campaigns:
    """The profile's thresholds and its judgement of one window."""

    def __init__(self, settings):
        self.threshold = settings.threshold
        self.behaviour_threshold = settings.campaign_behaviour_threshold
        self.shared_threshold = settings.campaign_shared_threshold
        self.network_threshold = settings.campaign_network_threshold
        self.network_addresses = settings.campaign_network_addresses
        self.v4_prefix = settings.campaign_ipv4_prefix
        self.v6_prefixes = sorted(set(settings.campaign_ipv6_prefixes), reverse=True)    # the narrower first
        self.settings = settings
        self.as_threshold = settings.campaign_as_threshold
        self.as_addresses = settings.campaign_as_addresses
        self.walk_ids = settings.campaign_walk_ids
        self.splits = []        # [(counter, split(counter))] of the windows ranked last (CampaignRules.examined)
        self.seen = None        # (view, its browsers, the step's, their walkers): once for a decision step
        self.stepping = False   # inside a decision step (step_begin): the counts do not grow, what is worked out is kept
        self.hosting = frozenset(settings.hosting_asns or ())
        self.hosting_divisor = settings.campaign_hosting_divisor
        self.database = None
        if settings.asn_database:
            from .asn import open_database      # an AS database set only
            self.database = open_database(settings.asn_database)

    def decision(self, kind, key, count, reason, people=False):
        """A Decision of ``kind``, its answer the kind's setting's (never a block for ``people``)."""
        return Decision(kind, answer_for(self.settings, kind, people), key, count, reason)

    def line_filter(self, base, settings):
        return CampaignFilter(base, settings.trap_paths or (), settings.search_engine, settings.job_prefixes)

    @staticmethod
    def behaviour(address, count, signals):
        """What the log shows of ``address``'s behaviour: (browser, text). A browser loaded
        assets after its pages (half as many as its job pages at least) and came to half of
        them by a referer at least."""
        assets, referred = signals[ASSET].get(address, 0), signals[REFERRED].get(address, 0)
        browser = assets >= max(1, count / 2.0) and referred * 2 >= count
        return browser, '%d assets, %d referers' % (assets, referred)

    def split_of(self, counter):
        """split(counter), once for the windows of a decision step (examined, then judged);
        outside a step each time (the counts may have grown since)."""
        for found in self.splits:
            if found[0] is counter:
                return found[1]
        if not self.stepping:
            return split(counter)
        self.splits = self.splits[-(WINDOWS_HELD - 1):] + [(counter, split(counter))]
        return self.splits[-1][1]

    def behaviour_view(self, counters):
        """(addresses, signals) that a decision step's windows (``counters``) judge behaviour
        by: their counts added up, as browser behaviour does not stop at the top of the hour (a
        NAT address's people in the last hour, its trap hit in this one; a network's job seekers
        a minute before it). The one window with keys as it is: a step inside one hour costs nothing."""
        found = [self.split_of(counter) for at, counter in enumerate(counters)
                 if not any(counter is other for other in counters[:at])]     # a DST night's repeated hour: once
        full = [parts for parts in found if parts[0] or any(parts[1].values())] or found[-1:]
        if len(full) == 1:
            return full[0]
        view = (summed([parts[0] for parts in full]),
                dict((kind, summed([parts[1][kind] for parts in full])) for kind in (ASSET, REFERRED, TRAP, WALK)))
        # Every browser of the step (the view's, each window's own): its walkers worked out once.
        browsers = browsers_of(*view)
        everyone = browsers.union(*(browsers_of(*parts) for parts in full))
        self.seen = (view[0], browsers, everyone, self.walkers(everyone, view[1][WALK]))
        return view

    def step_begin(self):
        """A decision step starts: its windows' counts stay as they are until step_done()."""
        self.splits, self.seen, self.stepping = [], None, True

    def step_done(self):
        """Let go of what was held for a step's windows: their counts grow (a follower's) before the next."""
        self.splits, self.seen, self.stepping = [], None, False

    def browsers_and_walkers(self, addresses, signals, view):
        """(browsers, walkers) of a window (``addresses``, ``signals``) judged with the behaviour ``view``:
        a browser in the window alone or in the view (the view's part once a step): another window adds people, takes none."""
        seen, seen_signals = view
        if self.seen is None or self.seen[0] is not seen:
            browsers = browsers_of(seen, seen_signals)
            self.seen = (seen, browsers, browsers, self.walkers(browsers, seen_signals[WALK]))
        dummy, browsers, everyone, walkers = self.seen
        if seen is addresses:
            return browsers, walkers
        browsers = browsers | browsers_of(addresses, signals)
        walkers = dict((address, why) for address, why in walkers.items() if address in browsers)
        if not browsers <= everyone:        # a window judged on other counts (a sliding estimate): its own
            walkers.update(self.walkers(browsers - everyone, seen_signals[WALK]))
        return browsers, walkers

    def behaviour_in(self, address, count, signals, view):
        """behaviour() of ``address`` in its window (``count``, ``signals``), or where that shows no
        browser, over the behaviour ``view`` (said so: 'over both hours')."""
        browser, shown = self.behaviour(address, count, signals)
        seen, seen_signals = view
        if browser or seen_signals is signals:      # a browser here, or judged by this window alone
            return browser, shown
        browser, both = self.behaviour(address, seen.get(address, 0), seen_signals)
        return (True, both + ' over both hours') if browser else (False, shown)

    def _shared(self, address, count, shown, walkers):
        """The decision on an address with browser behaviour at or over the threshold: a challenge
        when it walks job ids or reaches ``shared_threshold``, else spared (answer None)."""
        if address in walkers:
            return self.decision('shared', address, count, 'shared address, browser behaviour but %s: %s'
                                 % (walkers[address], shown), people=True)
        if count >= self.shared_threshold:
            return self.decision('shared', address, count, 'shared address, browser behaviour: %s' % shown, people=True)
        return Decision('shared', None, address, count, 'shared address, browser behaviour: %s' % shown)

    def judge(self, counter, records, server_ips, fleet_records=(), view=None):
        """A window's decisions: {address: Decision} for the ranked ``records`` over the
        threshold (the reference's rule, answered by behaviour; answer None: spared) and for
        the fleet's ``fleet_records`` [(sum, address)] of an address with browser behaviour here
        (answered as the host's own would be; one without is the fleet's block), and the other
        decisions, [Decision]. Behaviour is judged by ``view`` (behaviour_view: the decision
        step's windows together), else by this window's counts."""
        addresses, signals = self.split_of(counter)
        if not addresses and not signals[TRAP] and not fleet_records:
            return {}, []       # a window without a line counted: nothing to decide
        view = view if view is not None else (addresses, signals)
        is_server = server_test(server_ips)
        keys = list(addresses)
        numbers = dict(zip(keys, map(address_number, keys)))     # each address parsed once: thousands a window
        servers = set(compress(keys, map(is_server, addresses.values(), keys))) if is_server else set()

        def mine(address, count):
            if address in numbers:
                return address not in servers
            return is_server is None or not is_server(count, address)
        browsers, walkers = self.browsers_and_walkers(addresses, signals, view)
        ranked = {}
        for count, address in records:
            if count < self.threshold:
                continue
            browser, shown = self.behaviour_in(address, count, signals, view)
            if not browser:
                ranked[address] = self.decision('address', address, count, 'address, no browser behaviour: %s' % shown)
            else:
                ranked[address] = self._shared(address, count, shown, walkers)
        for count, address in fleet_records:
            if address not in ranked and count >= self.threshold and address in browsers:
                ranked[address] = self._shared(address, count, self.behaviour_in(address, addresses.get(address, 0), signals, view)[1],
                                               walkers)
        others = []
        for address, hits in sorted(signals[TRAP].items()):
            count = addresses.get(address, 0)
            if address in ranked or not mine(address, count) or (numbers[address] if address in numbers else address_number(address)) is None:
                continue
            browser, shown = self.behaviour_in(address, count, signals, view)
            others.append(self.decision('trap', address, count, 'trap, %d hits, %s%s' % (
                hits, 'browser behaviour: ' if browser else 'no browser behaviour: ', shown), people=browser))
        trapped = set(decision.key for decision in others)
        for address, count in sorted(compress(addresses.items(), map(ge, addresses.values(), repeat(self.behaviour_threshold)))):
            if ((address not in browsers or address in walkers) and address not in ranked and address not in trapped
                    and address not in servers and numbers[address] is not None):
                others.append(self.decision('behaviour', address, count, 'address, %s: %s' % (
                    walkers.get(address, 'no browser behaviour'), self.behaviour_in(address, count, signals, view)[1]),
                    people=address in browsers))
        # An address over the threshold is decided on its own: left out of its network's and AS's
        # sums. A trap hit counts towards them (one flags its address and its network's verdict).
        alone = set(key for key, decision in ranked.items() if decision.kind == 'address')
        people = browsers.difference(walkers)
        parsed, seekers = _numbers(addresses, numbers, people, alone | servers)
        if parsed:      # the job seekers of the other windows and those who read no job page: their networks carry people too
            seekers.extend(found + (0,) for found in map(address_number, sorted(people.difference(addresses))) if found is not None)
        located = {}
        if self.database is not None:     # each address's AS and range, once
            located = self.database.lookup_numbers([found[:2] for found in parsed + seekers])
        hosted = set(key for key, found in located.items() if found is not None and found[0] in self.hosting)
        networks, decided = self.networks(parsed, hosted, seekers)
        others.extend(networks)
        if self.database is not None:
            others.extend(self.autonomous_systems(parsed, seekers, decided, located))
        if others:      # what is never blocked (the server, loopback, the allow-list, the trusted proxies) is never listed
            guard = never_blocked(self.settings)
            others = [decision for decision in others if not _never_blocked(guard, decision.key, numbers)]
        return ranked, others

    def walkers(self, browsers, walks):
        """{address: why} of the ``browsers`` that walk job ids: of the ids each came to by a
        referer (``walks``: {address/id: requests}), ``walk_ids`` at least, and half of them at
        least, have a neighbour (id - 1 or id + 1) it requested too. People look at a few jobs
        (or, behind one NAT address, at scattered ones); a harvester faking a browser walks."""
        if not walks:
            return {}
        cut = list(map(methodcaller('rpartition', b'/'), walks))
        per_address = Counter(map(itemgetter(0), cut))     # ids an address came to: few have walk_ids
        wanted = browsers.intersection(compress(per_address, map(ge, per_address.values(), repeat(self.walk_ids))))
        ids = {}
        for address, dummy, number in compress(cut, map(wanted.__contains__, map(itemgetter(0), cut))) if wanted else ():
            if len(number) <= 18:       # a longer id is none
                ids.setdefault(address, set()).add(int(number))
        found = {}
        for address, numbers in ids.items():
            if len(numbers) >= self.walk_ids:
                walked = sum(1 for number in numbers if number - 1 in numbers or number + 1 in numbers)
                if walked >= self.walk_ids and walked * 2 >= len(numbers):
                    found[address] = 'walks job ids (%d of %d next to another)' % (walked, len(numbers))
        return found

    def lowered(self, count, distinct, hosting):
        """(requests, addresses) thresholds: ``count`` and ``distinct`` divided by the hosting
        divisor for a network or AS of ``hosting_asns`` (two addresses at least)."""
        if not hosting:
            return count, distinct
        return max(1, count // self.hosting_divisor), max(2, distinct // self.hosting_divisor)

    def networks(self, parsed, hosted=(), seekers=()):
        """The networks' decisions: the addresses without browser behaviour (``parsed``,
        [(version, number, count)]), summed per network of each prefix length, the narrower
        first; a wider network is judged on its addresses outside the narrower networks
        decided; one whose addresses are all in hosting ASes (``hosted``: (version, number))
        on the lowered thresholds; one where an address behaved as a browser (``seekers``, as
        ``parsed``) never blocked. Returns (decisions, [(version, length, network number)] decided)."""
        found, decided = [], []
        lengths = [(4, self.v4_prefix)] + [(6, length) for length in self.v6_prefixes]
        for version, length in lengths:
            shift = BITS[version] - length
            narrower = [(BITS[version] - other, prefix) for v, other, prefix in decided if v == version]
            sums, people = {}, set(number >> shift for v, number, count in seekers if v == version)
            for v, number, count in parsed:
                if v != version or (narrower and any(number >> cut == prefix for cut, prefix in narrower)):
                    continue
                total = sums.setdefault(number >> shift, [0, 0, 0])
                total[0] += count
                total[1] += 1
                total[2] += (v, number) in hosted
            for prefix, (count, distinct, hosting) in sorted(sums.items(), key=lambda item: (-item[1][0], item[0])):
                requests, addresses = self.lowered(self.network_threshold, self.network_addresses, hosting == distinct)
                if (count >= requests and distinct >= 2) or distinct >= addresses:
                    decided.append((version, length, prefix))
                    network = network_text(version, prefix << shift, length)
                    found.append(self.decision('network', network.encode('ascii'), count, 'network %s, %d addresses%s' % (
                        network, distinct, ', a hosting AS' if hosting == distinct and self.hosting else ''),
                        people=prefix in people))
        return found, decided

    def autonomous_systems(self, parsed, browsers, decided, located):
        """The ASes' decisions: the addresses without browser behaviour (``parsed``) summed
        per AS (``located``: {(version, number): (AS, range) or None}); an AS at either
        threshold (lowered for one of ``hosting_asns``) gets challenged the ranges of it that
        carried them where no address behaved as a browser (``browsers``: the log's job
        seekers), each as its networks, less those ``decided`` already; in a range that also
        carried job seekers (a residential ISP's, where a quarter of a proxy campaign's exits
        may sit), the networks of the narrowest length set (IPv4 /24, IPv6 /64) that carried
        the AS's campaign addresses and no job seeker's. An AS is never blocked whole."""
        from .asn import as_label, as_sums, range_pieces       # with an AS database only, which imported it
        shifts = shifts_of(self)
        people = set((version, number >> shifts[version]) for version, number, count in browsers)
        seekers = set(found[1] for found in (located[(version, number)] for version, number, count in browsers) if found)
        per_as = as_sums(lambda version, number: located[(version, number)], parsed, seekers, shifts)
        lengths, decided = sorted(set((version, length) for version, length, prefix in decided)), set(decided)

        def inside_decided(version, number, prefixlen):     # its prefix at a length decided is a network decided
            return any((version, length, number >> (BITS[version] - length)) in decided
                       for ip_version, length in lengths if ip_version == version and length <= prefixlen)
        decisions = []
        for asn, (count, distinct, ranges) in sorted(per_as.items()):
            least_requests, least_addresses = self.lowered(self.as_threshold, self.as_addresses, asn in self.hosting)
            if count < least_requests and distinct < least_addresses:
                continue
            label = as_label(self.database, asn, asn in self.hosting)
            for (version, first, last), (carried, addresses, parts) in sorted(ranges.items()):
                head = '%s, %d addresses, ' % (label, distinct)
                networks = range_pieces(version, first, last, (carried, addresses), parts, people, shifts[version])
                for number, prefixlen, requests, where in networks:
                    if not inside_decided(version, number, prefixlen):
                        decisions.append(self.decision('as', network_text(version, number, prefixlen).encode('ascii'), requests,
                                                       head + where))
        return decisions


def address_number(key):
    """(version, integer) of a client address (is_client_address's: no leading zeros, not
    0.0.0.0 or ::; an IPv4-mapped one as its IPv4 address), else None: C-level parsing,
    thousands of addresses a decision."""
    try:
        text = key.decode('ascii')
        if ':' in text:
            number = int.from_bytes(socket.inet_pton(socket.AF_INET6, text), 'big')
            if number >> 32 == 0xffff:      # IPv4-mapped (a dual-stack server's IPv4 client): its IPv4 address
                return (4, number & 0xffffffff) if number & 0xffffffff and '%' not in text else None
            return (6, number) if number and '%' not in text else None
        packed = socket.inet_pton(socket.AF_INET, text)
        # is_client_address's IPv4 rule (four decimal numbers to 255, no leading zero): the text
        # is the address's own dotted form, which inet_ntoa writes
        return (4, int.from_bytes(packed, 'big')) if packed != b'\0\0\0\0' and socket.inet_ntoa(packed) == text else None
    except (UnicodeDecodeError, OSError, ValueError):
        return None


def _numbers(addresses, numbers, browsers, left_out):
    """([(version, integer, count)] of the valid addresses (keys; ``numbers``: their
    address_number) neither in ``browsers`` nor in ``left_out``, the same of those in ``browsers``)."""
    parsed, seekers = [], []
    for address, count in addresses.items():
        found = numbers[address]
        if found is not None and address not in left_out:
            (seekers if address in browsers else parsed).append(found + (count,))
    return parsed, seekers


def _never_blocked(guard, key, numbers):
    """guard.address(key), for an IPv4 address parsed already without parsing it again
    (the never-blocked list's own rule for one: its span of one address)."""
    found = numbers.get(key)
    if found is not None and found[0] == 4:
        return guard.covers(4, found[1], found[1])
    return guard.address(key)


def shifts_of(campaigns):
    """{version: host bits} of the narrowest network lengths set (IPv4 /24, IPv6 /64 by default)."""
    return {4: 32 - campaigns.v4_prefix, 6: 128 - max(campaigns.v6_prefixes)}


class CampaignRules(SpecRules):
    """The spec rules with the campaign profile: the same address key and ranking (its
    signals set aside first), the profile's judgement beside it (``campaigns``)."""

    def __init__(self, settings, resolver=None):
        super(CampaignRules, self).__init__(settings, resolver)
        self.campaigns = Campaigns(settings)
        self.line_filter = self.campaigns.line_filter(self.line_filter, settings)

    @staticmethod
    def lists(blocklist_content, exclusions_content):
        return SubstringLists(AppendedContent(blocklist_content), exclusions_content)

    def examined(self, counter, server_ips, top, at_least=None, wanted=None):
        counter = whole(counter)        # a state's Prefix ranks signals too: read in full
        if at_least is not None and wanted is None:     # a follower's step: the keys at or over it, no split of them all
            found = Counter()
            for part in parts(counter):     # past count_budget, its files' too (the parts' keys are apart)
                dict.update(found, ((key, count) for key, count in entries_at_least(part, at_least).items() if key[:1] != SIGNAL))
            return super(CampaignRules, self).examined(found, server_ips, top, at_least)
        addresses = self.campaigns.split_of(counter)[0]      # judge() of the same counts, next: split once
        if wanted is not None:
            addresses = Counter(dict((key, count) for key, count in addresses.items() if wanted(key)))
        return super(CampaignRules, self).examined(addresses, server_ips, top, at_least)
