# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A follower's decision steps between two judgements of the campaign profile (follow.py paces
the judgements): the reference's rule stays as fast as without the profile, and its answer
the one a judgement gives, from the few addresses it ranks.

A judgement (campaigns.Campaigns.judge) walks every key of the windows: each address, its
signals, its network and AS. On the replayed hour of docs/benchmarks.md that is about 70 ms,
and more as the hour fills; a follower that judged at each step (twice a second while lines
come) spent about 13 % of a core on it. Between judgements, a step decides only the records
over the threshold and the fleet's records, by their own addresses' signals, looked up: one
without browser behaviour gets the judgement's decision (its block), one with it is left to
the next judgement (nothing now), which also decides its walks of job ids, the trap hits, the
behaviour, the networks and the ASes."""

from __future__ import absolute_import, division, print_function

from .campaigns import Decision
from ..reading.signals import ASSET, REFERRED

__metaclass__ = type


class LookedUp:
    """{address: count} of one kind of key (``kind``: a signal's first bytes, or b'' for the
    address keys) over ``counters`` added up, looked up an address at a time."""

    def __init__(self, kind, counters):
        self.kind, self.counters = kind, counters

    def get(self, address, default=0):
        key = self.kind + address
        return sum(counter.get(key, 0) for counter in self.counters) or default


def judge_ranked(campaigns, counter, records, fleet_records, counters):
    """judge()'s decisions on a window's ranked ``records`` and the fleet's ``fleet_records``
    ({address: Decision}; no other decision), with the behaviour judge() finds for them: in the
    window (``counter``), else over the decision step's windows (``counters``, added up). A
    browser's Decision has the answer None (spared until the judgement)."""
    signals = dict((kind, LookedUp(kind, [counter])) for kind in (ASSET, REFERRED))
    distinct = [found for at, found in enumerate(counters) if not any(found is other for other in counters[:at])]
    view = (LookedUp(b'', distinct), dict((kind, LookedUp(kind, distinct)) for kind in (ASSET, REFERRED)))

    def decided(address, count, window_count):
        browser, shown = campaigns.behaviour_in(address, window_count, signals, view)
        if browser:
            return Decision('shared', None, address, count, 'shared address, browser behaviour: %s' % shown)
        return campaigns.decision('address', address, count, 'address, no browser behaviour: %s' % shown)
    ranked = {}
    for count, address in records:
        if count >= campaigns.threshold:
            ranked[address] = decided(address, count, count)
    for count, address in fleet_records:
        if address not in ranked and count >= campaigns.threshold:
            decision = decided(address, count, counter.get(address, 0))
            if decision.answer is None:     # one without browser behaviour here is the fleet's block, as in judge()
                ranked[address] = decision
    return ranked, []
