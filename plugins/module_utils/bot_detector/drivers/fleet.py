# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet store driven (issue 37): a follower's pushes in a thread of their own, a state_dir
run's one push, and the fleet's sums laid over a host's own counts for the decision step.

- ``Fleet`` (follow mode): the follower hands it the windows' counts that changed
  (``offer``, at most every PUSH_EVERY / 2 seconds while lines arrive): the counts of the keys
  its tally noted (reading/changed.py; past their bound, a share of count_budget, the whole
  window), as a Snapshot the thread reads; a thread sends them, one script call a window and
  batch (decision/fleet_store.py), at least every PUSH_EVERY seconds (an empty push too: it
  brings the crossings), and keeps the crossings it learns. The follower's loop never waits for
  the store: with the store away, its own counts decide as without one, and what it hands over
  meanwhile stays pending (one snapshot a window, the latest) until the store answers. No copy
  of the counts is kept to diff against: what it holds for the store is bounded by count_budget.
- ``fleet_run`` (a state_dir run): all of the windows' counts pushed at once (absolute, so
  a run that pushed before pushes the same again harmlessly), the crossings read.
- ``overlay``: the fleet's records beside the host's own counts, which it leaves as they are:
  the crossings this host takes (decision/fleet_answers.py: canonical addresses, keyed as its
  own rules key them, never one never blocked), decided after and beside the host's own ranked
  records (run.decide_and_append), so that no fleet answer takes a local decision's place. The
  host's allow-list and blocklist apply as ever.
"""

from __future__ import absolute_import, division, print_function

import threading
import time

from ..base import messages
from ..base.clock import stamp_holds_another_hour
from ..decision.fleet_answers import HELD_PER_WINDOW, FleetAnswers
from ..decision.fleet_store import KEEP_AFTER, Store, StoreDown
from ..reading.changed import Changed, Snapshot, addresses_only
from ..reading.spill import SpillCounter, parts
from ..reading.tally import WindowCounts, whole

__metaclass__ = type

PUSH_EVERY = 0.5        # seconds between pushes (and crossing reads) of a follower
DOWN_RETRY = (0.5, 5.0)     # seconds between attempts while the store is away: from, doubling up to
OFFER_SHARE = 10        # an offer at most every OFFER_SHARE times what the last took: 10% of the follower's time
SPILLED_EVERY = 5.0     # seconds between the diffs of a window spilled to files (past count_budget)


def all_items(counter):
    """Every (key, count) of a window's counter, spilled parts included."""
    for part in parts(whole(counter)):
        yield from part.items()


def overlay(counts, records):
    """``counts`` (WindowCounts) with the fleet's records beside them: ``records`` ({stamp:
    [(sum, key)]}, FleetAnswers.records) go to ``fleet_records``, which the decision step decides
    after and beside the host's own ranked records (run.decide_and_append), never in place of one:
    the host's own counts are left as they are. None when the fleet has nothing for these windows
    (the host's own counts decide)."""
    records = dict((window.stamp, records[window.stamp]) for window in counts.windows if records.get(window.stamp))
    if not records:
        return None
    laid = WindowCounts(counts.windows, counts.counters)
    laid.scans, laid.warnings = counts.scans, counts.warnings
    laid.fleet_records = records
    laid.fleet = dict((stamp, set(key for dummy, key in found)) for stamp, found in records.items())     # noted (fleet)
    return laid


class Fleet:
    """The fleet store of a follower. For its status and metrics: ``store_up`` (True, False,
    or None before the first answer), ``push_behind_seconds`` (since the oldest count not yet
    sent), ``decisions_received`` (crossings learnt), ``describe()`` (the URL, no password)."""

    def __init__(self, settings, warn, store=None, say=None, logs=(), tracked=False, rules=None, server_ips=()):
        self.store = store if store is not None else Store(settings, logs=logs, warn=warn)
        self.threshold = settings.threshold
        self.answers, self.top = FleetAnswers(settings), settings.top
        self.offered = {}       # stamp: {key} handed to a decision already (the follower's thread only)
        self.warn, self.say = warn, say or warn
        self.lock = threading.Lock()
        self.wake = threading.Event()
        # ``tracked``: the keys counted since the last offer, noted by the follower's tally, at most
        # a quarter of count_budget (reading/changed.py); else each offer hands every window whole.
        self.changed = Changed(settings.count_budget // 4) if tracked else None
        self.bound = self.changed.bound if tracked else None
        self.handed = set()     # stamps handed at least once (whole the first time)
        self.pending = {}       # stamp: its Snapshot not yet sent (either thread, under the lock)
        self.full = set()       # stamps the store wants whole: handed whole at the next offer
        self.redo = {}          # stamp: keys whose snapshot failed to go (sent again at the next offer)
        self.pending_since = None
        self.windows = []       # [(stamp, ttl at the offer's time)]
        self.starts = {}        # stamp: the window's start (the store's key of it)
        self.crossed = {}       # stamp: {key: the fleet's sum at the crossing}
        self.fresh = False      # crossings learnt since the follower last looked
        self.store_up = None
        self.decisions_received = 0
        self.last_error = None
        self.stop = False
        self._spilled_at = {}
        self._unsent, self._offered_at = False, 0.0
        self.offer_seconds = 0.0        # what the last offer took the follower's thread
        self.thread = threading.Thread(target=self._loop, name='fleet-store', daemon=True)
        self.settings, self.server_ips = settings, server_ips
        self.campaigns = None       # with the campaign profile: its keys' pushes (fleet_campaigns.CampaignPush)
        if getattr(rules, 'campaigns', None) is not None:
            from ..decision.fleet_campaigns import CampaignPush       # the campaign profile only
            self.campaigns = CampaignPush(settings, rules.campaigns, warn=warn, logs=logs, on_news=self._news)
        self._campaigns_unsent = True       # the first round offers them: a restarted follower's keys go again

    def describe(self):
        return self.store.describe()

    @property
    def push_behind_seconds(self):
        since = self.pending_since
        return 0.0 if since is None else max(0.0, time.time() - since)

    def start(self):
        self.thread.start()
        return self

    def status(self):
        """What the follower's status file says of the store (--status, the metrics)."""
        return {'fleet': {'store': self.describe(), 'host': self.store.host, 'up': self.store_up,
                          'push_behind_seconds': round(self.push_behind_seconds, 3),
                          'decisions_received': self.decisions_received, 'eviction_policy': self.store.policy,
                          'host_twice': self.store.twice, 'windows_lost': self.store.lost}}

    def tick(self, counters, windows, read):
        """The follower's every round: the counts that changed handed over, at most every
        PUSH_EVERY / 2 seconds (at once when the store wants a window whole, or the windows
        moved); True when crossings came since the last decision (the follower decides then)."""
        self._unsent = self._unsent or bool(read)
        if self.campaigns is not None:      # the campaign keys (a pass over the windows' addresses): at most every OFFER_EVERY
            self._campaigns_unsent = self._campaigns_unsent or bool(read)
            if self._campaigns_unsent and self.campaigns.offer(counters, windows, self.server_ips):
                self._campaigns_unsent = False
                self.wake.set()
        wall = time.time()
        moved = [w.stamp for w in windows] != [stamp for stamp, dummy in self.windows]      # also the hour's turn
        spacing = max(PUSH_EVERY / 2, OFFER_SHARE * self.offer_seconds)     # many addresses: the local blocks first
        if ((self._unsent or self.redo) and wall - self._offered_at >= spacing) or self.full or moved:
            self._unsent, self._offered_at = self.offer(counters, windows), wall     # a spilled window's, deferred: again
            self.offer_seconds = time.time() - wall
        return self.fresh

    def overlay(self, counts):
        """``counts`` with the fleet's records beside them (module overlay): per window at most
        ``top`` crossings not handed to a decision before, the largest first, so that a decision
        costs as much with a store as without; with more waiting, the next round decides again."""
        crossed, dummy = self.take_crossed()
        records, found = {}, self.answers.records(crossed, self.threshold)
        with self.lock:
            for stamp, ranked in found.items():
                offered = self.offered.setdefault(stamp, set())
                waiting = [record for record in ranked if record[1] not in offered]
                records[stamp] = waiting[:self.top]
                offered.update(key for dummy, key in records[stamp])
                if len(waiting) > self.top:
                    self.fresh = True       # more than top: the follower decides again at once
            for stamp in [s for s in self.offered if s not in [w.stamp for w in counts.windows]]:
                del self.offered[stamp]
        laid = overlay(counts, records) or counts
        if self.campaigns is not None:      # the fleet's campaign crossings, judged beside the host's own (run.py)
            laid.fleet_campaigns = self.campaigns.take()
        return laid

    def close(self, wait=2.0):
        """Stop the thread, after one last push of what is pending (at most ``wait`` seconds)."""
        self.stop = True
        self.wake.set()
        self.thread.join(wait)
        self.store.close()
        if self.campaigns is not None:
            self.campaigns.store.close()

    def _news(self):
        with self.lock:
            self.fresh = True

    # ---- the follower's side

    def offer(self, counters, windows):
        """Hand the windows' counts that changed since the last offer (``counters``: {stamp:
        counter}, ``windows``: the decision's windows): per window, a Snapshot of the keys noted
        since (with those still pending or to send again), or of all of them. True when a spilled
        window's keys were kept for a later offer (SPILLED_EVERY)."""
        stamps, now = [w.stamp for w in windows], time.time()
        if self.changed is not None:
            self.changed.keep_only(stamps)
        with self.lock:
            wanted, self.full = self.full, set()
            redo, self.redo = self.redo, {}
            prior = dict((stamp, self.pending.get(stamp)) for stamp in stamps)
        changed, deferred = {}, False
        for window in windows:
            stamp, counter = window.stamp, counters.get(window.stamp)
            if counter is None:
                continue
            counter = whole(counter)
            keys = self.changed.take(stamp) if self.changed is not None else None
            if stamp_holds_another_hour(window, windows):
                continue        # its counts are two hours' (a DST night): the crossings only, none pushed
            before = prior.get(stamp)
            whole_window = (keys is None or stamp in wanted or stamp not in self.handed or redo.get(stamp, ()) is None
                            or (before is not None and before.whole))
            if not whole_window:
                keys.update(redo.get(stamp, ()))
                if before is not None:
                    keys.update(before.keys)
                whole_window = len(keys) > self.bound
            if isinstance(counter, SpillCounter) and counter.spilled:        # its files are read for them
                if not whole_window and now - self._spilled_at.get(stamp, 0) < SPILLED_EVERY:
                    if keys:
                        self.changed.note(stamp, keys)
                        deferred = True
                    continue
                self._spilled_at[stamp] = now
            if whole_window or keys:
                changed[stamp] = Snapshot(counter, None if whole_window else keys)
                self.handed.add(stamp)
        self.handed &= set(stamps)
        self._spilled_at = dict((stamp, at) for stamp, at in self._spilled_at.items() if stamp in stamps)
        with self.lock:
            self.windows = [(w.stamp, KEEP_AFTER) for w in windows]
            self.starts = dict((w.stamp, w.start) for w in windows)
            for stamp in list(self.pending):
                if stamp not in stamps:
                    del self.pending[stamp]
            self.pending.update(changed)        # the latest of each window: it holds what the one before did
            if changed and self.pending_since is None:
                self.pending_since = time.time()
        self.wake.set()
        return deferred

    def take_crossed(self):
        """The crossings learnt ({stamp: {key: sum}}), and whether any is new since the last call."""
        with self.lock:
            fresh, self.fresh = self.fresh, False
            return dict((stamp, dict(keys)) for stamp, keys in self.crossed.items()), fresh

    # ---- the thread

    def _loop(self):
        pause = PUSH_EVERY
        while True:
            self.wake.wait(pause)
            self.wake.clear()
            last = self.stop
            try:
                up = self.push_once()
                if up and self.campaigns is not None:
                    self.campaigns.push_once()
            except Exception as exc:        # pylint: disable=broad-except
                up = self._down(exc)        # never the end of the pushes: the follower goes on
            pause = PUSH_EVERY if up else min(max(pause * 2, DOWN_RETRY[0]), DOWN_RETRY[1])
            if last:
                return

    def push_once(self):
        """One round: each window's pending counts (or none: the crossings only), each window on
        its own (a cluster's master of one window away stops no other's). False when the store
        is away for any (its batch stays pending)."""
        with self.lock:
            windows, batch, starts = list(self.windows), self.pending, dict(self.starts)
            self.pending = {}
            since, self.pending_since = self.pending_since, (time.time() if batch else None)
        self.store.forget(set(starts.values()))
        failed = None
        for stamp, ttl in windows:
            snapshot = batch.get(stamp)
            try:
                self._push_window(stamp, starts[stamp], ttl, snapshot)
            except OSError:     # its spill files gone: the window left play meanwhile
                batch.pop(stamp, None)
            except Exception as exc:        # pylint: disable=broad-except  # StoreDown, or anything: the counts stay
                failed = failed or exc
                if self.store.cluster:      # another window, another master
                    continue
                break
            batch.pop(stamp, None)
        if failed is not None:
            with self.lock:
                for stamp, snapshot in batch.items():       # kept; or, a newer one handed meanwhile, its keys with the next
                    if stamp not in self.pending:
                        self.pending[stamp] = snapshot
                    elif snapshot.whole or stamp in self.redo and self.redo[stamp] is None:
                        self.redo[stamp] = None
                    else:
                        keys = self.redo.setdefault(stamp, set())
                        keys.update(snapshot.keys)
                        if len(keys) > self.bound:
                            self.redo[stamp] = None
                self.pending_since = since if since is not None else self.pending_since
            return self._down(failed)
        with self.lock:
            if not self.pending:
                self.pending_since = None
        if self.store_up is False:
            self.say(messages.FLEET_BACK % self.describe())
        self.store_up = True
        return True

    def _push_window(self, stamp, start, ttl, snapshot):
        """One window's snapshot (None: nothing, the crossings only), a batch at a time; a
        token the store changed meanwhile: the window whole at the next offer."""
        batches = snapshot.batches() if snapshot is not None else iter(([],))
        for index, pairs in enumerate(batches):
            if self.settings.campaigns:     # the signals' keys are the host's own (fleet_campaigns.py sums the campaign keys)
                pairs = [pair for pair in pairs if pair[0][:1] != b'\t']
            applied, crossings = self.store.push(start, ttl, pairs, snapshot is not None and snapshot.whole and index == 0,
                                                 self.threshold, stamp)
            self._learn(stamp, crossings, start)
            if not applied:
                with self.lock:
                    self.full.add(stamp)        # the store was emptied, replaced or lost counts: all again
                return

    def _down(self, exc):
        if self.store_up is not False:
            self.warn(messages.FLEET_DOWN % (self.describe(), exc))
        self.store_up, self.last_error = False, str(exc)
        return False

    def _learn(self, stamp, crossings, start):
        """Keep what the store said (junk already dropped by the store's reading): what is held
        of a window goes when the store's window was replaced, and holds HELD_PER_WINDOW at most."""
        restarted = start in self.store.restarted
        self.store.restarted.discard(start)
        if not crossings and not restarted:
            return
        with self.lock:
            if restarted:
                self.crossed.pop(stamp, None)
                self.offered.pop(stamp, None)
            known = self.crossed.setdefault(stamp, {})
            for key, total in crossings:
                if key not in known and len(known) >= HELD_PER_WINDOW:
                    continue
                if key not in known:
                    self.decisions_received += 1
                    self.fresh = True
                if total > known.get(key, 0):
                    known[key] = total
            for old in [s for s in self.crossed if s not in [w[0] for w in self.windows]]:
                del self.crossed[old]


def fleet_run(settings, counts, warn, logs=(), campaigns=None, server_ips=()):
    """A run's push (cron or timer, state_dir or not): every window's counts, each window on its
    own, then the fleet's crossings laid over them (overlay). The store away: a warning, and the
    run's own counts decide. Returns (counts to decide on, what the result says of the store)."""
    store = Store(settings, logs=logs, warn=warn)
    crossed = {}
    shown = {'store': store.describe(), 'host': store.host, 'up': True, 'decisions_received': 0}
    try:
        for window, counter in counts:
            pairs = [] if stamp_holds_another_hour(window, counts.windows) else addresses_only(all_items(counter))
            if campaigns is not None:       # the signals' keys are the host's own
                pairs = [pair for pair in pairs if pair[0][:1] != b'\t']
            try:
                dummy, crossings = store.push(window.start, KEEP_AFTER, pairs, True, settings.threshold,
                                              window.stamp)    # all of them (none: a DST night's two hours in one stamp)
            except StoreDown as exc:
                if shown['up']:
                    warn(messages.FLEET_DOWN % (store.describe(), exc))
                shown['up'] = False
                if store.cluster:       # another window, another master
                    continue
                break
            crossed[window.stamp] = dict(crossings)
    finally:
        store.close()
    shown['eviction_policy'] = store.policy
    shown['decisions_received'] = sum(map(len, crossed.values()))
    laid = overlay(counts, FleetAnswers(settings).records(crossed, settings.threshold)) or counts
    if campaigns is not None and shown['up']:
        from ..decision.fleet_campaigns import campaign_run       # the campaign profile only
        laid.fleet_campaigns = campaign_run(settings, campaigns, counts, server_ips, warn, logs)
        shown['decisions_received'] += sum(map(len, laid.fleet_campaigns.values()))
    return laid, shown
