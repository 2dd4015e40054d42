"""Two-phase fleet counting (filters fleet_candidates, fleet_totals) on random fleets.

Each fleet is a table of every host's full counts per hour and key. The hosts' reports are
made from it as the module makes them (phase 1: every key at or over the floor; phase 2:
every candidate asked, zeros included), some hosts unreachable in phase 1 or in phase 2,
and the filters' decisions are compared with sums taken directly from the table."""
import math
import random

from hypothesis import given, settings, strategies as st

from ansible_collections.jobboard.bot_detector.plugins.filter.fleet import fleet_candidates, fleet_totals
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.compact import compact_counts

HOURS = ['21/Nov/2026:03', '21/Nov/2026:04', '21/Nov/2026:05']
KEYS = ['203.0.113.7', '203.0.113.8', '198.51.100.1', '192.0.2.50', '2001:db8:1:2::/64', '2001:db8::17',
        '10.0.0.0/24', '203.0.113.9']


@st.composite
def fleets(draw, any_floor=False):
    """(threshold, hosts, truth, floors, windows, down1, down2). The table comes from a
    seeded Random: one draw instead of hundreds keeps each example about a millisecond."""
    n = draw(st.integers(1, 30))
    threshold = draw(st.integers(1, 400))
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    share = threshold // n + 2
    hosts = ['web%02d' % i for i in range(n)]
    # Most hosts count hours 03 and 04; a few ran just after 05:00 (a run straddling the hour's end).
    windows = dict((h, HOURS[1:] if rnd.random() < 0.1 else HOURS[:2]) for h in hosts)
    tops = (share, 3 * share, threshold + 5)
    truth = dict((h, dict((w, dict((k, rnd.randint(0, rnd.choice(tops))) for k in KEYS if rnd.random() < 0.6))
                          for w in windows[h])) for h in hosts)
    standard = int(math.ceil(threshold / float(n)))
    floors = dict((h, rnd.randint(1, threshold + 5) if any_floor else standard) for h in hosts)
    lost1, lost2 = draw(st.sampled_from([0, 0, 0.1, 0.5])), draw(st.sampled_from([0, 0, 0.1, 0.5]))
    down1 = set(h for h in hosts[1:] if rnd.random() < lost1)
    down2 = set(h for h in hosts if rnd.random() < lost2)
    return threshold, hosts, truth, floors, windows, down1, down2


def report(counts_by_hour, floor, keep):
    """A module result; as the playbook asks (compact) for most hosts, as mappings for some."""
    names = ['previous', 'current']
    hours = sorted(counts_by_hour)
    counts = dict((name, dict((k, c) for k, c in counts_by_hour[hour].items() if keep(hour, k, c)))
                  for name, hour in zip(names, hours))
    if floor % 3:
        counts = dict((name, compact_counts(c)) for name, c in counts.items())
    return {'changed': False, 'report_floor': floor, 'local_blocks': [],
            'windows': [{'name': name, 'hour_stamp': hour} for name, hour in zip(names, hours)], 'counts': counts}


def run_fleet(threshold, hosts, truth, floors, down1, down2):
    """Both phases as the playbook runs them; returns (candidates, totals)."""
    hostvars = dict((h, {}) for h in hosts)
    for h in hosts:
        if h in down1:
            hostvars[h]['bot_detector_report'] = {'unreachable': True, 'msg': 'Failed to connect', 'changed': False}
        else:
            hostvars[h]['bot_detector_report'] = report(truth[h], floors[h], lambda w, k, c, f=floors[h]: c >= f)
    candidates = fleet_candidates(hosts, hostvars, threshold=threshold)
    asked = candidates['candidates']
    for h in hosts:
        if h in down1:
            continue                      # Ansible leaves a host unreachable in phase 1 out of the later plays
        if h in down2:
            hostvars[h]['bot_detector_exact'] = {'failed': True, 'msg': 'Timeout'}
        else:
            answer = dict((w, dict((k, truth[h][w].get(k, 0)) for k in asked.get(w, ()))) for w in truth[h])
            hostvars[h]['bot_detector_exact'] = report(answer, floors[h], lambda w, k, c: True)
    totals = fleet_totals(hosts, hostvars, threshold=threshold)
    assert fleet_totals(hosts, hostvars, threshold=threshold, candidates=candidates) == totals    # reused, same result
    return candidates, totals


def expected(threshold, hosts, truth, floors, down1, down2):
    """From the table: S = the reporting hosts' full sums; L = what the answers make known
    (phase-2 counts, and the phase-1 counts of hosts without an answer); B = the most the
    sum can be given what is known."""
    reporting = [h for h in hosts if h not in down1]
    full, known, bound = {}, {}, {}
    for h in reporting:
        for w, counts in truth[h].items():
            for k in KEYS:                 # absent keys too: a silent host may hold up to floor - 1 of them
                c = counts.get(k, 0)
                answered = h not in down2 or c >= floors[h]
                full[(w, k)] = full.get((w, k), 0) + c
                known[(w, k)] = known.get((w, k), 0) + (c if answered else 0)
                bound[(w, k)] = bound.get((w, k), 0) + (c if answered else floors[h] - 1)
    return full, known, bound


def offenders_of(sums, threshold):
    best = {}
    for (w, k), c in sums.items():
        if c >= threshold and c > best.get(k, (0, None))[0]:
            best[k] = (c, w)
    return best


def as_found(result):
    return dict((o['address'], (o['count'], o['window'])) for o in result['offenders'])


@settings(max_examples=500, deadline=None)
@given(fleets())
def test_two_phases_equal_the_full_sums(fleet):
    threshold, hosts, truth, floors, windows, down1, down2 = fleet
    candidates, result = run_fleet(threshold, hosts, truth, floors, down1, down2)
    full, known, bound = expected(threshold, hosts, truth, floors, down1, down2)
    assert candidates['exact'] and result['exact']
    # The candidates: reported counts plus floor - 1 for each reporting host that did not report
    # it reach T; phase 2 counts those that such a host with a floor above 1 could change.
    reach, reported, open_ = {}, {}, set()
    for h in hosts:
        if h not in down1:
            for w, counts in truth[h].items():
                for k in KEYS:
                    c = counts.get(k, 0)
                    reach[(w, k)] = reach.get((w, k), 0) + (c if c >= floors[h] else floors[h] - 1)
                    reported[(w, k)] = reported.get((w, k), 0) + (c if c >= floors[h] else 0)
                    if c < floors[h] and floors[h] > 1:
                        open_.add((w, k))
    expected_candidates = set(wk for wk, c in reach.items() if c >= threshold and any(
        truth[h].get(wk[0], {}).get(wk[1], 0) >= floors[h] for h in hosts if h not in down1))
    assert set((w, k) for w, sums in candidates['sums'].items() for k in sums) == expected_candidates
    assert all(c == reported[(w, k)] for w, sums in candidates['sums'].items() for k, c in sums.items())
    assert set((w, k) for w, keys in candidates['candidates'].items() for k in keys) == expected_candidates & open_
    assert result['missing'] == [h for h in hosts if h in down1]
    found = as_found(result)
    for o in result['offenders']:         # sound: an address is blocked only when the known counts reach T
        assert full[(o['window'], o['address'])] >= o['count'] >= threshold
    if not down1:                          # nobody missing: the sum over every host, directly from the table
        every = {}
        for h in hosts:
            for w, counts in truth[h].items():
                for k, c in counts.items():
                    every[(w, k)] = every.get((w, k), 0) + c
        assert dict((wk, c) for wk, c in full.items() if c) == dict((wk, c) for wk, c in every.items() if c)
    if not down2 or not candidates['count'] or all(floors[h] == 1 for h in down2):
        # Everyone answered: exactly the offenders of the reporting hosts' full sums, nothing undecided.
        assert found == offenders_of(full, threshold)
        assert result['undecided'] == [] and result['missing_exact'] == []
        return
    # Hosts without a phase-2 answer: decided on what is known; the rest is undecided.
    assert result['missing_exact'] == [h for h in hosts if h not in down1 and h in down2]
    assert found == offenders_of(known, threshold)
    undecided = set((u['window'], u['address']) for u in result['undecided'])
    assert undecided == set(wk for wk, b in bound.items() if known[wk] < threshold <= b and wk[1] not in found)
    for u in result['undecided']:
        wk = (u['window'], u['address'])
        assert (u['known'], u['bound']) == (known[wk], bound[wk])
        assert u['hosts'] and set(u['hosts']) <= down2
    for wk, c in full.items():             # complete: what is neither blocked nor undecided is under T
        if wk[1] not in found and wk not in undecided:
            assert c < threshold


@settings(max_examples=300, deadline=None)
@given(fleets(any_floor=True))
def test_a_raised_floor_misses_only_what_no_host_reported(fleet):
    threshold, hosts, truth, floors, windows, down1, down2 = fleet
    down2 = set()
    candidates, result = run_fleet(threshold, hosts, truth, floors, down1, down2)
    full, dummy, dummy = expected(threshold, hosts, truth, floors, down1, down2)
    reporting = [h for h in hosts if h not in down1]
    exact = all(sum(floors[h] - 1 for h in reporting if w in truth[h]) < threshold for w in HOURS
                if any(w in truth[h] for h in reporting))
    assert result['exact'] == candidates['exact'] == exact
    seen = dict(((w, k), c) for (w, k), c in full.items()
                if any(truth[h].get(w, {}).get(k, 0) >= floors[h] for h in reporting))
    assert as_found(result) == offenders_of(seen, threshold)
    if exact:
        assert as_found(result) == offenders_of(full, threshold)


def spread(counts):
    """A phase-1 report and the table row of one host: {key: count} in hour 03."""
    return {HOURS[0]: dict(counts), HOURS[1]: {}}


def test_the_issues_thin_spreads_on_24_hosts():
    # 45 an hour on all 24 (1080); 300 on two and 20 on 22 (1040); 41 on all 24 (984).
    hosts = ['web%02d' % i for i in range(24)]
    truth = dict((h, spread({'203.0.113.45': 45, '198.51.100.2': 300 if i < 2 else 20, '192.0.2.41': 41}))
                 for i, h in enumerate(hosts))
    floors = dict.fromkeys(hosts, 42)     # ceil(1000 / 24)
    candidates, result = run_fleet(1000, hosts, truth, floors, set(), set())
    # Both are candidates; every host reported the first, so phase 2 counts the second only.
    assert candidates['sums'][HOURS[0]] == {'198.51.100.2': 600, '203.0.113.45': 1080}
    assert candidates['candidates'][HOURS[0]] == ['198.51.100.2']
    assert [(o['address'], o['count']) for o in result['offenders']] == [('203.0.113.45', 1080), ('198.51.100.2', 1040)]
    # A floor raised to 50 by hand: 45 on every host is seen nowhere; the 300s still are, and
    # phase 2 adds the 20s that no host reported.
    candidates, result = run_fleet(1000, hosts, truth, dict.fromkeys(hosts, 50), set(), set())
    assert not result['exact'] and [(o['address'], o['count']) for o in result['offenders']] == [('198.51.100.2', 1040)]


def test_a_host_lost_in_phase_2_leaves_an_undecided_candidate():
    hosts = ['web1', 'web2', 'web3']
    truth = {'web1': spread({'203.0.113.7': 600}), 'web2': spread({'203.0.113.7': 300}),
             'web3': spread({'203.0.113.7': 200, '203.0.113.8': 1100})}
    floors = dict.fromkeys(hosts, 334)
    dummy, result = run_fleet(1000, hosts, truth, floors, set(), {'web3'})
    # web3's 1100 was reported in phase 1: exact, blocked. Its 200 of .7 is under its floor: unknown.
    assert result['offenders'] == [{'address': '203.0.113.8', 'count': 1100, 'window': HOURS[0], 'reason': 'fleet'}]
    assert result['undecided'] == [{'address': '203.0.113.7', 'window': HOURS[0], 'known': 900, 'bound': 1233,
                                    'hosts': ['web3']}]
    assert result['missing_exact'] == ['web3']
