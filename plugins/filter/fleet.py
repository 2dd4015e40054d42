# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Fleet counting in two phases, exact at any fleet size.

Phase 1: every host reports each key (address, or network with grouping) with at least
its floor F requests in a window, F = ceil(T / N) for N hosts. A key with T or more over
the hosts has at least T / N on one of them, so it is reported somewhere. fleet_candidates:
a key is a candidate when its reported counts plus, for each reporting host that did not
report it, F - 1 (the most that host can have) reach T; it is open when such a host with
F above 1 exists. Phase 2: the hosts return their exact counts of the open candidates
only, and fleet_totals decides on the sums. The module's reports hold each window's
counts as one compact text (Ansible handles one value far faster than thousands).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
from collections import Counter

from ansible.errors import AnsibleFilterError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.fleet_campaigns import (
    AUTONOMOUS, NETWORK, over)
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.compact import parse_compact_counts


class Report:
    """One host's phase-1 report: its floor, and its counts per window (hour stamp), read
    from the module's result when first needed (fleet_totals needs them only from hosts
    that phase 2 asked)."""

    def __init__(self, name, host, floor, raw):
        self.name, self.host, self.floor, self.raw = name, host, floor, raw
        self._windows = None

    @property
    def windows(self):
        if self._windows is None:
            self._windows = self.read()
        return self._windows

    def read(self):
        """The counts per window, not kept: a pass over every host holds one at a time."""
        return self._windows if self._windows is not None else _window_counts(self.name, self.host, self.raw)


def _check_threshold(name, threshold):
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
        raise AnsibleFilterError('%s: threshold must be a whole number of at least 1, got %r' % (name, threshold))


def _usable(report):
    return (isinstance(report, dict) and not report.get('failed') and not report.get('skipped')
            and not report.get('unreachable') and isinstance(report.get('counts'), dict))


def _window_counts(name, host, report):
    """{window: {key: count}}, each window named by its hour stamp when the report gives
    it, so that hosts whose runs fall either side of an hour's end are summed per hour.
    A window's counts are a mapping, or the module's compact text (compact_counts)."""
    stamps = dict((w.get('name'), w.get('hour_stamp')) for w in report.get('windows') or () if isinstance(w, dict))
    windows = {}
    for window, counts in report['counts'].items():
        if isinstance(counts, str):
            try:
                counts = parse_compact_counts(counts)
            except ValueError as exc:
                raise AnsibleFilterError('%s: the report of %s, window %s: %s' % (name, host, window, exc))
        windows[stamps.get(window) or window] = counts or {}
    return windows


def _phase1(name, hosts, hostvars, result_var):
    """The reporting hosts' Reports, and the missing hosts."""
    reporting, missing = [], []
    for host in hosts:
        report = hostvars[host].get(result_var) if host in hostvars else None
        if not _usable(report):
            missing.append(host)
            continue
        floor = report.get('report_floor')
        if not isinstance(floor, int) or isinstance(floor, bool) or floor < 1:
            raise AnsibleFilterError('%s: the report of %s in %s has no report_floor (a whole number of at least 1), got %r'
                                     % (name, host, result_var, floor))
        reporting.append(Report(name, host, floor, report))
    return reporting, missing


def _candidates(name, reporting, threshold):
    """Phase 1's verdict, per window: {key: reported sum} of every candidate (a key whose
    bound reaches the threshold), the candidates still open (sorted: some host that did
    not report them may hold up to its floor - 1, so phase 2 must count them), and whether
    no unreported key can reach the threshold (the floors less one, summed, under it).

    The bound of a key is its reported sum + the floors less one of the hosts that did not
    report it = reported sum + slack - (floors less one of the hosts that did), with slack
    the floors less one of every host counting the window. So one pass adds up the counts,
    and the hosts reporting each key are counted per floor (in C)."""
    sums, seen, slack = {}, {}, {}
    for report in reporting:
        margin = report.floor - 1
        for window, counts in report.read().items():
            slack[window] = slack.get(window, 0) + margin
            window_sums = sums.setdefault(window, {})
            get = window_sums.get
            try:
                for key, count in counts.items():
                    window_sums[key] = get(key, 0) + count
            except TypeError:
                raise AnsibleFilterError('%s: the report of %s holds a count that is not a whole number in %s'
                                         % (name, report.host, window))
            if margin:
                seen.setdefault(window, {}).setdefault(margin, Counter()).update(counts.keys())
    candidates, open_keys = {}, {}
    for window, window_sums in sums.items():
        margins = seen.get(window, {}).items()
        unknown = dict((key, slack[window] - sum(margin * hosts[key] for margin, hosts in margins))
                       for key, total in window_sums.items() if total + slack[window] >= threshold)
        candidates[window] = dict((key, window_sums[key]) for key, more in unknown.items()
                                  if window_sums[key] + more >= threshold)
        open_keys[window] = sorted(key for key in candidates[window] if unknown[key] > 0)
    return candidates, open_keys, all(value < threshold for value in slack.values())


def fleet_candidates(hosts, hostvars, result_var='bot_detector_report', threshold=1000):
    """Phase 1 on the control node: the keys that phase 2 must count exactly."""
    _check_threshold('fleet_candidates', threshold)
    reporting, missing = _phase1('fleet_candidates', hosts, hostvars, result_var)
    sums, open_keys, exact = _candidates('fleet_candidates', reporting, threshold)
    return {'threshold': threshold, 'hosts': [r.host for r in reporting], 'missing': missing, 'exact': exact,
            'sums': sums, 'total': sum(len(keys) for keys in sums.values()),
            'candidates': open_keys, 'count': sum(len(keys) for keys in open_keys.values())}


def fleet_totals(hosts, hostvars, result_var='bot_detector_report', threshold=1000, sync=False,
                 exact_var='bot_detector_exact', candidates=None):
    """Phase 2 on the control node: the candidates' sums, and the decisions. ``candidates``,
    fleet_candidates' result on the same reports, spares computing them again."""
    _check_threshold('fleet_totals', threshold)
    reporting, missing = _phase1('fleet_totals', hosts, hostvars, result_var)
    if candidates is None:
        sums, open_keys, exact = _candidates('fleet_totals', reporting, threshold)
    elif isinstance(candidates, dict) and isinstance(candidates.get('sums'), dict) \
            and candidates.get('threshold') == threshold:
        sums, open_keys, exact = candidates['sums'], candidates['candidates'], candidates['exact']
    else:
        raise AnsibleFilterError('fleet_totals: candidates must be the result of fleet_candidates with the same threshold')

    # Per window and candidate: the known sum (phase 1's counts, then phase 2's of the
    # hosts that did not report it), and the floors less one of the hosts whose count of
    # it is unknown (under their floor in phase 1, and no phase-2 answer).
    known = dict((window, dict(window_sums)) for window, window_sums in sums.items())
    unknown = dict((window, {}) for window in sums)
    wanted = dict((window, set(keys)) for window, keys in open_keys.items() if keys)
    missing_exact, answers = [], {}
    for report in reporting:
        if not wanted or report.floor == 1:
            continue                      # with a floor of 1, not reporting a key is counting 0 of it
        answer = hostvars[report.host].get(exact_var)
        answer = _window_counts('fleet_totals', report.host, answer) if _usable(answer) else None
        if answer is None:
            missing_exact.append(report.host)
        answers[report.host] = answer or {}
        for window, keys in wanted.items():
            if window not in report.windows:
                continue                  # this host did not count this hour: not part of its sum
            exact_counts = answers[report.host].get(window, {})
            window_known, window_unknown = known[window], unknown[window]
            try:
                for key in keys.difference(report.windows[window]):
                    count = exact_counts.get(key)
                    if count is None:
                        window_unknown[key] = window_unknown.get(key, 0) + report.floor - 1
                    else:
                        window_known[key] += count
            except TypeError:
                raise AnsibleFilterError('fleet_totals: the answer of %s holds a count that is not a whole number in %s'
                                         % (report.host, window))

    best, undecided = {}, []
    for window, window_known in known.items():
        for key, count in window_known.items():
            if count >= threshold and count > best.get(key, {}).get('count', -1):
                best[key] = {'address': key, 'count': count, 'window': window, 'reason': 'fleet'}
    for window in sorted(unknown):
        for key in sorted(unknown[window]):
            count, bound = known[window][key], known[window][key] + unknown[window][key]
            if key not in best and count < threshold <= bound:
                undecided.append({'address': key, 'window': window, 'known': count, 'bound': bound, 'hosts': [
                    r.host for r in reporting if r.floor > 1 and window in r.windows
                    and key not in answers[r.host].get(window, ()) and key not in r.windows[window]]})
    offenders = sorted(best.values(), key=lambda d: (-d['count'], d['address']))

    synced, seen = [], set(best)
    if sync:
        for report in reporting:
            for block in report.raw.get('local_blocks') or []:
                if block['address'] not in seen:
                    seen.add(block['address'])
                    synced.append({'address': block['address'], 'count': int(block.get('count') or 0), 'reason': 'sync',
                                   'source': report.host})
    return {'threshold': threshold, 'hosts': [r.host for r in reporting], 'missing': missing,
            'missing_exact': missing_exact, 'exact': exact, 'candidates': open_keys, 'totals': known,
            'offenders': offenders, 'undecided': undecided, 'sync': synced, 'decisions': offenders + synced}


def _network(key):
    try:
        return ipaddress.ip_network(key)
    except ValueError:
        return None     # not a network the module reports: nothing decided of it


def fleet_campaigns(hosts, hostvars, result_var='bot_detector_report'):
    """The campaign keys of phase 1's reports (hosts with the campaign profile: their
    ``campaign_counts``) summed: each network's and AS's requests, their distinct addresses a
    union across the hosts. The decisions: each network at the thresholds of the first report
    (the hosts' own), a challenge on every host (``answer: challenge``), a wider one holding a
    narrower one decided left out; the ASes at theirs are listed, not decided (each host's
    ranges are its own log's: its own runs decide them)."""
    sums, members, limits = {}, {}, None
    for host in hosts:
        report = hostvars[host].get(result_var)
        found = report.get('campaign_counts') if _usable(report) else None
        if not isinstance(found, dict) or not isinstance(found.get('windows'), dict):
            continue
        limits = limits or found.get('limits')
        for window, text in found['windows'].items():
            try:
                pairs = parse_compact_counts(text)
            except (TypeError, ValueError) as exc:
                raise AnsibleFilterError('fleet_campaigns: the campaign counts of %s in %s: %s' % (host, window, exc))
            window_sums, window_members = sums.setdefault(window, Counter()), members.setdefault(window, {})
            for name, count in pairs.items():
                if name.startswith('m '):
                    key, dummy, member = name[2:].rpartition(' ')
                    window_members.setdefault(key, set()).add(member)
                else:
                    window_sums[name] += count
    numbers = [int(value) for value in (limits or '').split()]
    if len(numbers) != 4:
        return {'decisions': [], 'systems': [], 'networks': 0}
    decisions, systems = [], []
    for window in sorted(sums):
        crossed = []
        for name, count in sums[window].items():
            distinct = len(members[window].get(name, ()))
            kind = name[:1].encode('ascii')
            if name[1:2] == ' ' and kind in (NETWORK, AUTONOMOUS) and over(kind, count, distinct, numbers):
                crossed.append((name[2:], kind, count, distinct))
        networks = [_network(key) for key, kind, count, distinct in crossed if kind == NETWORK]
        for key, kind, count, distinct in sorted(crossed):
            if kind == AUTONOMOUS and key.isdigit():
                systems.append({'as': int(key), 'count': count, 'distinct': distinct, 'window': window})
                continue
            mine = _network(key) if kind == NETWORK else None
            if mine is None or any(other is not None and other.version == mine.version and other.prefixlen > mine.prefixlen
                                   and other.subnet_of(mine) for other in networks):
                continue
            decisions.append({'address': key, 'count': count, 'window': window, 'answer': 'challenge',
                              'reason': 'network %s, %d addresses fleet-wide' % (key, distinct)})
    return {'decisions': decisions, 'systems': systems, 'networks': len(decisions)}


class FilterModule(object):
    def filters(self):
        return {'fleet_candidates': fleet_candidates, 'fleet_totals': fleet_totals, 'fleet_campaigns': fleet_campaigns}
