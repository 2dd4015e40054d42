"""A follower's hand-overs to the fleet store in bounded memory (issue 43, item 8): the keys
counted since the last push are noted where the counts are made (the tally, the rules' count
functions), at most a quarter of count_budget of them; no copy of the counts is kept to diff
against. Past the bound (and for counts spilled to files) a window goes whole, and the sums in a
real redis-server stay exact. The follower's own code: a real Tally with the product's rules and
spill session, the product's Fleet and its pushes."""
import random
from collections import Counter

import pytest

import fleetstore
import loggen
from conftest import in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.choice import rules_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.changed import Changed
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.spill import Session
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.tally import Tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

NOW = 1795258200            # 2026-11-21 10:50:00 UTC: the windows 09 and 10
THRESHOLD = 1000
BUDGET = 800                # count_budget: the Fleet notes at most 200 keys


def entries_held(value, seen=None):
    """How many entries the containers reachable from ``value`` hold (dicts, sets, lists,
    tuples, objects' attributes), each container once."""
    seen = set() if seen is None else seen
    if id(value) in seen or isinstance(value, (bytes, str, int, float, bool, type(None))):
        return 0
    seen.add(id(value))
    if isinstance(value, dict):
        return len(value) + sum(entries_held(v, seen) for v in value.values())
    if isinstance(value, (set, frozenset)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return len(value) + sum(entries_held(v, seen) for v in value)
    if hasattr(value, '__dict__'):
        return sum(entries_held(v, seen) for v in vars(value).values())
    return 0


def handed_over(fleet):
    """What the Fleet holds of the counts for the store: every attribute but its store client,
    thread, lock and wake-up event."""
    return dict((name, value) for name, value in vars(fleet).items() if name not in ('store', 'thread', 'lock', 'wake'))


class Host:
    """A follower's counting and hand-over: the rules' line filter into a Tally (spill session
    of BUDGET keys), the Fleet tracking the keys the tally notes; ``expected``: the log's counts
    by this test's own reckoning (one request a line, every line a job page)."""

    def __init__(self, url, tmp_path, monkeypatch):
        monkeypatch.setenv('TMPDIR', str(tmp_path))
        settings = Settings(fleet_store=url, fleet_host='web0', threshold=THRESHOLD, count_budget=BUDGET)
        self.windows = in_timezone('UTC', lambda: hour_windows(NOW))
        self.session = Session(BUDGET)
        self.session.summaries = True
        self.fleet = Fleet(settings, lambda line: None, tracked=True)
        self.tally = Tally([w.stamp for w in self.windows], rules_for(settings).line_filter, session=self.session,
                           changed=self.fleet.changed)
        self.expected = Counter()

    def count(self, addresses, epoch=NOW - 60):
        lines = in_timezone('UTC', lambda: [loggen.line(address, epoch) for address in addresses])
        self.tally.chunk(b''.join(lines))
        self.expected.update(addresses)

    def push(self):
        self.fleet._spilled_at.clear()      # a spilled window's changes go every SPILLED_EVERY seconds: now
        self.fleet.offer(self.tally.counters, self.windows)
        assert entries_held(handed_over(self.fleet)) <= 4 * BUDGET      # snapshots within count_budget
        assert self.fleet.push_once(), self.fleet.last_error
        assert not self.fleet.full and not self.fleet.pending and not self.fleet.redo
        assert self.fleet.changed.held == 0 and not self.fleet.changed.whole      # emptied by the push

    def close(self):
        self.fleet.store.close()
        self.session.close()


@pytest.fixture
def host(tmp_path, monkeypatch):
    server = fleetstore.StoreServer(tmp_path).start()
    made = Host(server.url, tmp_path, monkeypatch)
    made.server = server
    try:
        yield made
    finally:
        made.close()
        server.kill()


def sums(host):
    return fleetstore.window_sums(host.server.cli, host.windows[1].start)


def test_hand_overs_hold_no_copy_of_the_counts_and_the_sums_stay_exact(host):
    """5,000 addresses (six times count_budget, spilled to files) pushed in rounds of a few
    changed keys: what the Fleet holds is bounded by count_budget at every step (the old
    hand-over kept every address's count), emptied by each push, and the store's sums are the
    log's counts."""
    rng = random.Random(43)
    crowd = ['198.51.%d.%d' % (i // 250, i % 250) for i in range(5000)]
    for start in range(0, len(crowd), 500):
        host.count(crowd[start:start + 500])
    host.push()
    assert any(getattr(c, 'spilled', False) for c in host.tally.counters.values())
    for step in range(6):
        host.count([rng.choice(crowd) for dummy in range(40)] + ['203.0.113.7'] * 180)
        assert 0 < host.fleet.changed.held <= host.fleet.changed.bound
        host.push()
    assert entries_held(handed_over(host.fleet)) < 100
    assert sums(host) == dict(host.expected)
    assert host.expected['203.0.113.7'] == 1080 and host.fleet.take_crossed()[0][host.windows[1].stamp] == {b'203.0.113.7': 1080}


def test_more_keys_than_the_bound_between_pushes_send_the_window_whole(host):
    """More distinct keys counted between two pushes than the bound (a quarter of count_budget):
    the tracking set is dropped for the window (never past its bound), the window pushed whole,
    exact; then tracking resumes."""
    host.count(['192.0.2.%d' % i for i in range(50)])
    host.push()
    burst = ['2001:db8::%x' % i for i in range(3 * BUDGET)]
    host.count(burst[:150])
    assert host.fleet.changed.held == 150
    host.count(burst[150:])
    assert host.fleet.changed.held <= host.fleet.changed.bound and host.windows[1].stamp in host.fleet.changed.whole
    host.push()
    assert sums(host) == dict(host.expected)
    host.count(['192.0.2.1'] * 3)
    assert host.fleet.changed.keys == {host.windows[1].stamp: {b'192.0.2.1'}}
    host.push()
    assert sums(host)['192.0.2.1'] == 4


def test_a_store_away_keeps_the_changed_keys_and_sends_them_when_back(host):
    """The store killed between pushes: the changed keys stay (one snapshot a window, bounded), and
    with the store back empty, the window goes whole: sums exact."""
    host.count(['192.0.2.%d' % i for i in range(100)])
    host.push()
    host.server.kill()
    for round_ in range(3):
        host.count(['192.0.2.%d' % (round_ * 7 + i) for i in range(20)])
        host.fleet.offer(host.tally.counters, host.windows)
        assert host.fleet.push_once() is False
        assert entries_held(handed_over(host.fleet)) <= 4 * BUDGET
    host.server.start()
    for dummy in range(3):
        host.fleet.offer(host.tally.counters, host.windows)
        assert host.fleet.push_once()
    assert sums(host) == dict(host.expected)


def test_changed_keeps_its_bound():
    changed = Changed(10)
    changed.note(b'a', [b'%d' % i for i in range(8)])
    changed.note(b'b', [b'x', b'y'])
    assert changed.held == 10 and changed.take(b'b') == {b'x', b'y'} and changed.held == 8
    changed.note(b'a', [b'%d' % i for i in range(8, 12)])
    assert changed.held <= 10 and changed.take(b'a') is None and changed.held == 0
    assert changed.take(b'a') == set()


def test_a_spilled_windows_deferred_keys_go_when_the_log_falls_quiet(host, monkeypatch):
    """A spilled window's changed keys go at most every SPILLED_EVERY seconds: those held back
    when the log then falls quiet (no line read) are still handed over at a later round."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import fleet as fleet_module
    monkeypatch.setattr(fleet_module, 'SPILLED_EVERY', 3600)
    host.count(['198.51.%d.%d' % (i // 250, i % 250) for i in range(3000)])
    host.fleet.tick(host.tally.counters, host.windows, read=1)      # whole: the first hand-over
    assert host.fleet.push_once()
    host.count(['203.0.113.9'] * 7)
    host.fleet._offered_at = 0.0        # the offers' spacing passed
    host.fleet.tick(host.tally.counters, host.windows, read=1)      # within SPILLED_EVERY: held back
    assert host.fleet.changed.held == 1 and not host.fleet.pending
    monkeypatch.setattr(fleet_module, 'SPILLED_EVERY', 0.3)
    deadline = fleet_module.time.time() + 30
    while host.fleet.changed.held:
        assert fleet_module.time.time() < deadline, 'the held-back keys were never handed over'
        host.fleet._offered_at = 0.0
        host.fleet.tick(host.tally.counters, host.windows, read=0)      # nothing new read
        fleet_module.time.sleep(0.05)
    assert host.fleet.push_once()
    assert sums(host) == dict(host.expected)
