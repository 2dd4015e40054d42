# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The campaign keys summed fleet-wide (issue 45 §6): with ``campaigns`` and a fleet store,
each host pushes, per window, its networks' and autonomous systems' job-page requests from
addresses without browser behaviour, and those addresses as members of each; the store sums
the requests as it sums addresses and counts the members as a union across hosts.

The window's campaign keys live under a tag of their own, ``{NAME:v2c:START}``, with a token
of their own: the address keys' protocol (decision/fleet_store.py: absolute counts per writer,
applied as differences, a lost reply harmless, a store that lost data found by what the writers
know they pushed and refilled under a new token) with the pairs applied by CAMPAIGN_PAIRS:

  "n NETWORK" count / "a ASN" count     summed as addresses are: count - this writer's last
  "m n NETWORK HEX" 1 / "m a ASN HEX"   a member (HEX: the address as a hexadecimal integer):
                                        set in the sums by HSETNX, so a member sent by two hosts
                                        or twice is counted once in "d n NETWORK" (the union)

A network or AS whose fleet-wide requests and distinct addresses meet the pushing host's
thresholds (``limits``) is appended once ("x" marks it) to the crossings list as
"n NETWORK COUNT DISTINCT" or "a ASN COUNT DISTINCT". A field of the sums that is not an
integer (written by a host, not the script) makes the script draw a new token: every host sends
its campaign keys again into fresh keys (FLEET_JUNK).

The union is exact, in hashes, not a HyperLogLog: the thresholds are small counts (16, 20
addresses) where an estimate one short or over decides; a member costs about 60 bytes in
the sums and as much in its writer's hash, for each address without browser behaviour
(a residential campaign of 3,000 addresses on three hosts: under 2 MiB a window).

What a host takes of it (the trust boundary, as fleet_answers.py's): an entry is read only when
it is one the script could have made, of a network of one of this host's own prefix lengths in
its canonical spelling or an AS number, its numbers meeting this host's own thresholds; a network
holding a never-blocked address is never listed; a network or AS verdict is a challenge, never a
block; for an AS, only the ranges that carried this host's own traffic without browser behaviour
and no job seekers here are listed, as the host's own AS rule lists them.
"""

from __future__ import absolute_import, division, print_function

import threading
import time

from ..base import messages
from ..base.clock import stamp_holds_another_hour
from ..reading.signals import WALK, split
from ..reading.tally import whole
from ..values.answer_settings import CHALLENGE
from .campaigns import address_number, browsers_of, shifts_of
from .fleet_answers import HELD_PER_WINDOW, READ_PER_PUSH, SUM_DIGITS
from .fleet_identity import StoreDown
from .fleet_store import KEEP_AFTER, SCRIPT_HEAD, SCRIPT_TAIL, Store
from .never_blocked import never_blocked
from .ranges import BITS, grouped, network, network_text, spelling
from .rules import BLOCK, server_test

__metaclass__ = type

ENTRY_BYTES = 100       # "n NETWORK COUNT DISTINCT": an IPv6 network (43 characters at most) and two sums
NETWORK, AUTONOMOUS = b'n', b'a'
OFFER_EVERY = 0.5       # seconds between a follower's campaign pairs (each a pass over the window's addresses), at least
OFFER_SHARE = 10        # and at least this many times what the last pass took: 10% of the follower's time at most

CAMPAIGN_PAIRS = """local limits = {}
for value in string.gmatch(ARGV[5], '[0-9]+') do limits[#limits + 1] = tonumber(value) end
local n = (#ARGV - 10) / 2
local added = 0
local touched, order = {}, {}
if n > 0 then
  local names = {}
  for i = 1, n do names[i] = ARGV[9 + 2 * i] end
  local old = redis.call('HMGET', KEYS[2], unpack(names))
  for i = 1, n do
    local name = names[i]
    local count = tonumber(ARGV[10 + 2 * i])
    local delta = count - tonumber(old[i] or '0')
    local kind, key = string.match(name, '^m ([na]) (%S+) %x+$')
    if not kind then kind, key = string.match(name, '^([na]) (%S+)$') end
    if delta ~= 0 and kind then
      added = added + delta
      redis.call('HSET', KEYS[2], name, count)
      if string.sub(name, 1, 1) == 'm' then
        if redis.call('HSETNX', KEYS[3], name, 1) == 1 then
          local got = redis.pcall('HINCRBY', KEYS[3], 'd ' .. kind .. ' ' .. key, 1)
          if type(got) == 'table' then
            redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[6])
            return {0, ARGV[2], 'junk'}
          end
        end
      else
        local got = redis.pcall('HINCRBY', KEYS[3], name, delta)
        if type(got) == 'table' then
          redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[6])
          return {0, ARGV[2], 'junk'}
        end
      end
      local item = kind .. ' ' .. key
      if not touched[item] then
        touched[item] = true
        order[#order + 1] = {kind, item}
      end
    end
  end
end
for _, each in ipairs(order) do
  local kind, item = each[1], each[2]
  local got = redis.call('HMGET', KEYS[3], item, 'd ' .. item)
  local count, distinct = tonumber(got[1] or '0') or 0, tonumber(got[2] or '0') or 0
  local over
  if kind == 'n' then
    over = (count >= limits[1] and distinct >= 2) or distinct >= limits[2]
  else
    over = count >= limits[3] or distinct >= limits[4]
  end
  if over and redis.call('HSETNX', KEYS[3], 'x ' .. item, 1) == 1 then
    redis.call('RPUSH', KEYS[4], item .. ' ' .. string.format('%d', count) .. ' ' .. string.format('%d', distinct))
    redis.call('HINCRBY', KEYS[3], ' crossed', 1)
  end
end
"""
CAMPAIGN_SCRIPT = SCRIPT_HEAD + CAMPAIGN_PAIRS + SCRIPT_TAIL % {'read': READ_PER_PUSH, 'entry': ENTRY_BYTES}


def limits(settings):
    """The thresholds the script judges by, as its ARGV[5]: a network's requests and distinct
    addresses, an AS's requests and distinct addresses."""
    return '%d %d %d %d' % (settings.campaign_network_threshold, settings.campaign_network_addresses,
                            settings.campaign_as_threshold, settings.campaign_as_addresses)


def over(kind, count, distinct, numbers):
    """Whether ``count`` requests from ``distinct`` addresses meet the thresholds of ``kind``
    (``numbers``: limits() as integers), as the profile judges on one host."""
    if kind == NETWORK:
        return (count >= numbers[0] and distinct >= 2) or distinct >= numbers[1]
    return count >= numbers[2] or distinct >= numbers[3]


def campaign_crossing(item, thresholds, lengths=None):
    """((kind, key), (count, distinct)) of one crossings list entry, or None when it is junk:
    longer than ENTRY_BYTES, not "n NETWORK COUNT DISTINCT" or "a ASN COUNT DISTINCT", the
    network not canonical (or, with ``lengths`` {version: [prefix lengths]}, of a length this
    host does not count), the numbers under ``thresholds`` (limits())."""
    if not isinstance(item, bytes) or len(item) > ENTRY_BYTES:
        return None
    parts = item.split(b' ')
    if len(parts) != 4 or parts[0] not in (NETWORK, AUTONOMOUS):
        return None
    kind, key, count, distinct = parts
    if not all(number.isdigit() and len(number) <= SUM_DIGITS for number in (count, distinct)):
        return None
    count, distinct = int(count), int(distinct)
    if not over(kind, count, distinct, [int(value) for value in thresholds.split()]):
        return None
    if kind == AUTONOMOUS:
        if not key.isdigit() or key != b'%d' % int(key) or not 0 < int(key) < 1 << 32:
            return None
    else:
        parsed = network(key) if b'/' in key else None
        if parsed is None or spelling(*parsed) != key or parsed[1] == BITS[parsed[0]]:
            return None
        if lengths is not None and parsed[1] not in lengths[parsed[0]]:
            return None
    return (kind, key), (count, distinct)


class CampaignStore(Store):
    """The fleet store's campaign keys (their own tag and token, CAMPAIGN_SCRIPT); ``push``'s
    threshold is limits()."""

    SCRIPT = CAMPAIGN_SCRIPT
    KIND = 'c'

    def __init__(self, settings, lengths, **kwargs):
        super(CampaignStore, self).__init__(settings, **kwargs)
        self.lengths = lengths

    def entry(self, item, threshold):
        return campaign_crossing(item, threshold, self.lengths)


def lengths_of(campaigns):
    """{version: [prefix lengths]} the profile counts networks of."""
    return {4: [campaigns.v4_prefix], 6: list(campaigns.v6_prefixes)}


def _candidates(campaigns, counter, server_ips, threshold):
    """(addresses without browser behaviour under ``threshold`` [(version, number, count)],
    browsers [(version, number)], those that read no job page too) of a window's counts, the
    server's left out. A browser that walks job ids (Campaigns.walkers) is no browser here, as for
    the host's own verdicts."""
    addresses, signals = split(counter)
    browsers = browsers_of(addresses, signals)
    walkers = campaigns.walkers(browsers, signals[WALK])
    browsers.difference_update(walkers)
    is_server = server_test(server_ips)
    plain, seekers = [], []
    for address, count in addresses.items():
        if is_server is not None and is_server(count, address):
            continue
        found = address_number(address)
        if found is None:
            continue
        if address in browsers:
            seekers.append(found)
        elif count < threshold or address in walkers:     # over it, the address rule decides it alone (a walker's is a shared verdict)
            plain.append(found + (count,))
    seekers.extend(found for found in map(address_number, sorted(browsers.difference(addresses))) if found is not None)
    return plain, seekers


def window_pairs(campaigns, counter, server_ips, threshold):
    """{name: absolute count} this host pushes of a window: each network's and AS's requests
    from its addresses without browser behaviour (under ``threshold``: over it, the address
    rule decides), and each such address as a member of its networks and AS."""
    plain, dummy = _candidates(campaigns, counter, server_ips, threshold)
    lengths = lengths_of(campaigns)
    lookup = campaigns.database.lookup_number if campaigns.database is not None else None
    pairs = {}
    for version, number, count in plain:
        member = b' %x' % number
        for length in lengths[version]:
            key = b'n ' + spelling(version, length, grouped(version, number, length))
            pairs[key] = pairs.get(key, 0) + count
            pairs[b'm ' + key + member] = 1
        found = lookup(version, number) if lookup is not None else None
        if found is not None:
            key = b'a %d' % found[0]
            pairs[key] = pairs.get(key, 0) + count
            pairs[b'm ' + key + member] = 1
    return pairs


def fleet_decisions(campaigns, counter, others, crossed, server_ips, threshold):
    """The decisions of the fleet's campaign crossings of a window (``crossed``: {(kind, key):
    (count, distinct)}) this host takes, beside its own ``others``: each network a challenge,
    unless decided here already or holding a never-blocked address; each AS, the ranges of it
    that carried this host's own traffic without browser behaviour and no job seekers here."""
    own = set(decision.key for decision in others)
    found = []
    networks = [key for (kind, key) in crossed if kind == NETWORK] + [key for key in own if b'/' in key]
    narrower = [parsed for parsed in map(network, networks) if parsed is not None]
    for (kind, key), (count, distinct) in sorted(crossed.items()):
        if kind == NETWORK and key not in own and not _holds_narrower(network(key), narrower):
            # people: the fleet's sums alone never block (a hostile host's pushes at most challenge)
            found.append(campaigns.decision('network', key, count, 'network %s, %d addresses fleet-wide'
                                            % (key.decode('ascii'), distinct), people=True))
    autonomous = dict((int(key), value) for (kind, key), value in crossed.items() if kind == AUTONOMOUS)
    if autonomous and campaigns.database is not None:
        found.extend(_ranges(campaigns, counter, server_ips, threshold, autonomous, own))
    if found:
        guard = never_blocked(campaigns.settings)
        found = [decision for decision in found if not guard.address(decision.key)]
    return found


def _holds_narrower(wide, decided):
    """Whether the network ``wide`` (version, length, first) holds a narrower one ``decided``:
    then it is left to them, as a host's own wider network is judged on the addresses outside
    the narrower ones decided (the fleet's sums are not split so: the wider one is not listed)."""
    version, length, first = wide
    return any(v == version and other > length and grouped(version, start, length) == first
               for v, other, start in decided)


def _inside(version, length, first, decided):
    """Whether the network (``version``, ``length``, ``first``) is inside one of ``decided`` (as
    the host's own AS verdict leaves out what its networks decided already)."""
    return any(v == version and other <= length and grouped(version, first, other) == start for v, other, start in decided)


def _ranges(campaigns, counter, server_ips, threshold, autonomous, own):
    """The crossed ASes' (``autonomous``: {AS: (count, distinct)}) ranges that carried this host's
    own addresses without browser behaviour, as the host's own judgement lists an AS's: a
    range no job seeker came from here as its networks, one that carried some as the networks
    (IPv4 /24, IPv6 /64) of the campaign's addresses that carried none; less those ``own`` and
    those inside a network of ``own``."""
    from .asn import as_label, as_sums, range_pieces       # with an AS database only, which imported it
    plain, seekers = _candidates(campaigns, counter, server_ips, threshold)
    lookup = campaigns.database.lookup_number
    shifts = shifts_of(campaigns)
    people = set((version, number >> shifts[version]) for version, number in seekers)
    sought = set(hit[1] for hit in (lookup(version, number) for version, number in seekers) if hit is not None)
    decided = [parsed for parsed in map(network, (key for key in own if b'/' in key)) if parsed is not None]
    decisions = []
    for asn, (dummy, dummy, ranges) in sorted(as_sums(lookup, plain, sought, shifts, autonomous).items()):
        label = as_label(campaigns.database, asn, asn in campaigns.hosting)
        for (version, first, last), (count, addresses, parts) in sorted(ranges.items()):
            for start, length, requests, where in range_pieces(version, first, last, (count, addresses), parts, people,
                                                               shifts[version], ' here'):
                key = network_text(version, start, length).encode('ascii')
                if key not in own and not _inside(version, length, start, decided):
                    decisions.append(campaigns.decision('as', key, requests, (
                        '%s, %d addresses fleet-wide, %s' % (label, autonomous[asn][1], where))))
    return decisions


class CampaignPush:
    """A follower's campaign keys for the store: ``offer`` (the follower's thread, after a
    decision: each window's pairs, at most every OFFER_EVERY seconds), ``push_once`` (the
    store's thread: what changed since the store last acknowledged, all of it when the store
    asks), ``take`` (the crossings learnt, {stamp: {(kind, key): (count, distinct)}})."""

    def __init__(self, settings, campaigns, store=None, warn=None, logs=(), on_news=None):
        self.campaigns, self.threshold = campaigns, settings.threshold
        self.limits = limits(settings)
        self.store = store if store is not None else CampaignStore(settings, lengths_of(campaigns), logs=logs, warn=warn)
        self.on_news = on_news or (lambda: None)
        self.lock = threading.Lock()
        self.pending = {}       # start: the window's latest pairs (the follower's thread, under the lock)
        self.latest, self.sent = {}, {}     # start: pairs (the store's thread): the latest, acknowledged
        self.windows = {}       # start: stamp, the decision's windows
        self.crossed = {}       # stamp: {(kind, key): (count, distinct)}
        self.offered_at = self.offer_seconds = 0.0

    def offer(self, counters, windows, server_ips):
        """The windows' pairs for the next push; False (nothing done) too soon after the last."""
        now = time.time()
        if now - self.offered_at < max(OFFER_EVERY, OFFER_SHARE * self.offer_seconds):
            return False
        self.offered_at = now
        pairs = {}
        for window in windows:
            counter = counters.get(window.stamp)
            if counter is not None and not stamp_holds_another_hour(window, windows):     # a DST night's: nothing, as addresses
                pairs[window.start] = window_pairs(self.campaigns, whole(counter), server_ips, self.threshold)
        self.offer_seconds = time.time() - now
        with self.lock:
            self.windows = dict((window.start, window.stamp) for window in windows)
            self.pending.update(pairs)
            for start in [s for s in self.pending if s not in self.windows]:
                del self.pending[start]
        return True

    def push_once(self):
        """One round: each window's changed pairs (none: the crossings only). Raises StoreDown."""
        with self.lock:
            pending, self.pending, windows = self.pending, {}, dict(self.windows)
        self.latest.update(pending)
        for kept in (self.latest, self.sent):
            for start in [s for s in kept if s not in windows]:
                del kept[start]
        self.store.forget(set(windows))
        for start, stamp in sorted(windows.items()):
            latest, sent = self.latest.get(start, {}), self.sent.get(start, {})
            changed = sorted((key, count) for key, count in latest.items() if sent.get(key) != count)
            applied, crossings = self.store.push(start, KEEP_AFTER, changed, False, self.limits)
            if not applied:     # a new token: all of them again
                applied, crossings = self.store.push(start, KEEP_AFTER, sorted(latest.items()), True, self.limits)
            self.sent[start] = latest if applied else {}        # not applied: all of them at the next round
            self._learn(stamp, start, crossings)

    def _learn(self, stamp, start, crossings):
        restarted = start in self.store.restarted
        self.store.restarted.discard(start)
        news = False
        with self.lock:
            if restarted:
                self.crossed.pop(stamp, None)
            known = self.crossed.setdefault(stamp, {})
            for key, numbers in crossings:
                if key not in known and len(known) < HELD_PER_WINDOW:
                    known[key] = numbers
                    news = True
            for old in [s for s in self.crossed if s not in self.windows.values()]:
                del self.crossed[old]
        if news:
            self.on_news()

    def take(self):
        with self.lock:
            return dict((stamp, dict(found)) for stamp, found in self.crossed.items())


def campaign_run(settings, campaigns, counts, server_ips, warn, logs=()):
    """A run's campaign push (cron or timer): every window's pairs, then its crossings read.
    Returns {stamp: {(kind, key): (count, distinct)}}; the store away: what was read, and a
    warning (the run's own counts decide)."""
    store = CampaignStore(settings, lengths_of(campaigns), logs=logs, warn=warn)
    crossed, numbers = {}, limits(settings)
    try:
        for window, counter in counts:
            pairs = [] if stamp_holds_another_hour(window, counts.windows) else sorted(
                window_pairs(campaigns, whole(counter), server_ips, settings.threshold).items())
            try:
                dummy, crossings = store.push(window.start, KEEP_AFTER, pairs, True, numbers)
            except StoreDown as exc:
                warn(messages.FLEET_DOWN % (store.describe(), exc))
                if store.cluster:
                    continue
                break
            crossed[window.stamp] = dict(crossings)
    finally:
        store.close()
    return crossed


def reported_campaigns(campaigns, counts, server_ips, settings):
    """The campaign keys of a report (the fleet playbook's phase 1; plugins/filter/fleet.py sums
    them): {hour stamp: each window's pairs as lines "<count> <name>"}, every one of them (a union
    needs every member), and the thresholds they are judged by (limits())."""
    reported = {}
    for window, counter in counts:
        pairs = window_pairs(campaigns, whole(counter), server_ips, settings.threshold)
        reported[window.stamp.decode('ascii')] = ''.join('%d %s\n' % (count, name.decode('ascii'))
                                                         for name, count in sorted(pairs.items()))
    return {'limits': limits(settings), 'windows': reported}


def file_challenge(result, settings, lists, decision):
    """A challenge decision taken elsewhere (the fleet playbook's campaign networks, run.apply):
    filed for the challenge list as a run files its own (Result.answer), unless it is or holds
    what is never blocked, or is an address the lists would not block."""
    key = decision['address'].encode('utf-8', 'surrogateescape')
    if never_blocked(settings).address(key) or (b'/' not in key and lists.verdict(key) != BLOCK):
        return
    if result.softer is None:
        result.softer = {}
    result.answer(CHALLENGE, {'address': decision['address'], 'count': int(decision.get('count') or 0),
                              'window': decision.get('window') or 'fleet', 'reason': decision.get('reason') or 'fleet'})
