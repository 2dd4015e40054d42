"""The fleet store's writers and windows (issue 43), against a real redis-server and a 3-master
cluster (the session's, conftest.py's fleet_cluster): counts kept per writer (the machine and the
log), so a host's two logs add up, a cron run, a follower and a restarted follower of one log
count once, and two machines under one fleet_host add up and are told; the windows keyed by their
start, so hosts in two zones sum one hour and the two 02:00 hours of a DST night stay apart; the
key layout's version in every key, and hosts of the first layout said; a cluster master of one
window away stops no other window's pushes."""
import calendar
import os
import subprocess
import sys
from collections import Counter

import pytest

import fleetstore
import loggen
from conftest import CORE, Files, in_timezone
from test_fleet_runs import NOW, THRESHOLD, blocked, cron_run
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import messages
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

SCRAPER = '203.0.113.7'
WINDOWS = in_timezone('UTC', lambda: hour_windows(NOW))


@pytest.fixture(params=fleetstore.SERVERS + ['cluster'])
def store(request, tmp_path):
    """(url, fleet name, cli): a redis-server (valkey-server where Debian has it) of this test's
    own, or the session's cluster (conftest.py) under a fleet name of this test's own."""
    name = 'fleet-%s' % request.node.name.split('[')[0][-30:].replace('_', '-')
    yield from fleetstore.store_under(request, tmp_path, name)


def test_two_logs_of_a_host_add_up_and_each_log_counts_once(tmp_path, store):
    """The role runs a cron entry (or a follower) per log, all under the host's one fleet_host:
    400 + 400 on host A's two logs and 300 on host B make 1100, blocked; a second run of a log,
    and a follower of it, are that log's writer again: nothing added."""
    url, name, cli = store
    named = ['--fleet-name', name]
    for log in ('log1', 'log2', 'log1'):        # log1 twice: a later cron run of the same log
        got, files = cron_run(tmp_path / log, url, 'webA', previous={SCRAPER: 400}, extra=named)
        assert got.returncode == 0 and blocked(files) == [] and b'unreachable' not in got.stderr, got
    said = []
    follower = Fleet(Settings(fleet_store=url, fleet_host='webA', fleet_name=name, threshold=THRESHOLD), said.append,
                     logs=[str(tmp_path / 'log1' / 'webA' / 'access.log')])
    counters = {WINDOWS[0].stamp: Counter({SCRAPER.encode(): 400}), WINDOWS[1].stamp: Counter()}
    for dummy in range(3):
        follower.offer(counters, WINDOWS)
        assert follower.push_once()
    follower.store.close()
    assert said == [] and fleetstore.window_sums(cli, WINDOWS[0].start, name) == {SCRAPER: 800}
    got, files = cron_run(tmp_path, url, 'webB', previous={SCRAPER: 300}, extra=named)
    assert got.returncode == 0 and blocked(files) == [SCRAPER], got
    assert b'Blocking IP address: 203.0.113.7 (1100 requests, fleet)' in got.stdout, got.stdout
    assert fleetstore.window_sums(cli, WINDOWS[0].start, name) == {SCRAPER: 1100}


def test_two_machines_under_one_name_add_up_and_are_told(store):
    url, name, cli = store
    said = dict((machine, []) for machine in ('m1', 'm2', 'm3', 'm1-again'))

    def writer(machine, host='web0'):
        settings = Settings(fleet_store=url, fleet_host=host, fleet_name=name)
        return fleet_store.Store(settings, machine=machine.replace('-again', ''), warn=said[machine].append,
                                 logs=['/var/log/nginx/access.log'])
    first, second, other = writer('m1'), writer('m2'), writer('m3', 'web1')
    start = WINDOWS[0].start
    assert first.push(start, 9000, [(SCRAPER.encode(), 400)], True, THRESHOLD) == (True, [])
    assert other.push(start, 9000, [(SCRAPER.encode(), 100)], True, THRESHOLD) == (True, [])
    assert second.push(start, 9000, [(SCRAPER.encode(), 500)], True, THRESHOLD) == (True, [(SCRAPER.encode(), 1000)])
    assert first.push(start, 9000, [], False, THRESHOLD) == (True, [(SCRAPER.encode(), 1000)])
    restarted = writer('m1-again')      # machine m1's follower restarted: the same writer
    assert restarted.push(start, 9000, [(SCRAPER.encode(), 400)], True, THRESHOLD) == (True, [(SCRAPER.encode(), 1000)])
    assert fleetstore.window_sums(cli, start, name) == {SCRAPER: 1000}
    told = messages.FLEET_HOST_TWICE % 'web0'
    assert said['m1'] == [told] and said['m2'] == [told] and said['m3'] == []
    for each in (first, second, other, restarted):
        each.close()


def dst_night():
    """The end of summer time in Berlin, 2026-10-25: 02:00-03:00 comes twice; at 01:30 UTC (the
    second one) the previous hour and the current one have the same stamp."""
    return calendar.timegm((2026, 10, 25, 1, 30, 0))


def test_the_windows_are_keyed_by_their_start_and_the_layouts_version(store):
    url, name, cli = store
    night = in_timezone('Europe/Berlin', lambda: hour_windows(dst_night()))
    assert night[0].stamp == night[1].stamp == b'25/Oct/2026:02' and night[1].start - night[0].start == 3600
    hosts = [fleet_store.Store(Settings(fleet_store=url, fleet_host='web%d' % i, fleet_name=name)) for i in range(2)]
    for host, window in zip(hosts, night):
        assert host.push(window.start, 9000, [(SCRAPER.encode(), 600)], True, THRESHOLD) == (True, [])    # never 1200
    assert [fleetstore.window_sums(cli, w.start, name) for w in night] == [{SCRAPER: 600}, {SCRAPER: 600}]
    keys = fleet_store.window_keys(name, night[0].start, 'web0', 'token', 'writer')
    assert all(key.startswith('{%s:v2:%d}:' % (name, night[0].start)) for key in keys)
    # Keys of the first layout (by the hour stamp) in the store: said, not summed with.
    cli('set', '{%s:%s}:epoch' % (name, WINDOWS[0].stamp.decode()), 'layout-1-token')
    said = []
    upgraded = fleet_store.Store(Settings(fleet_store=url, fleet_host='web2', fleet_name=name), warn=said.append)
    for dummy in range(2):
        assert upgraded.push(WINDOWS[0].start, 9000, [], True, THRESHOLD, WINDOWS[0].stamp)[0]
    assert said == [messages.FLEET_OTHER_LAYOUT % (upgraded.describe(), 1, 2)]
    for host in hosts + [upgraded]:
        host.close()


def zoned_run(base, url, host, tz, previous, extra=()):
    """A cron run of a host whose clock and log are in ``tz`` (the same moment NOW)."""
    files = Files(base / host)
    log = base / host / 'access.log'
    log.write_bytes(in_timezone(tz, lambda: loggen.planted_log(NOW, previous=previous)))
    args = files.options() + ['--now', '@%d' % NOW, '--state-dir', base / host / 'state', '--fleet-store', url,
                              '--fleet-host', host] + list(extra) + [log]
    env = dict(os.environ, TZ=tz, LC_ALL='C.UTF-8')
    got = subprocess.run([sys.executable, str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, check=False, timeout=120)
    return got, files


def test_hosts_in_two_time_zones_sum_the_same_hour(tmp_path, store):
    url, name, dummy = store
    first, files0 = zoned_run(tmp_path, url, 'web-utc', 'UTC', {SCRAPER: 600}, ['--fleet-name', name])
    second, files1 = zoned_run(tmp_path, url, 'web-berlin', 'Europe/Berlin', {SCRAPER: 400}, ['--fleet-name', name])
    assert first.returncode == 0 and second.returncode == 0, (first, second)
    assert blocked(files0) == [] and blocked(files1) == [SCRAPER], second
    assert b'Blocking IP address: 203.0.113.7 (1000 requests, fleet)' in second.stdout


def test_a_dead_master_of_one_window_stops_no_other_windows_pushes(fleet_cluster):
    """In a cluster without full coverage, the master of the previous hour's window stopped:
    the current window's counts are pushed all the same; the master is started again after."""
    cluster = fleet_cluster
    for attempt in range(50):       # a fleet name whose two windows are on two masters, the URL's the one to stop
        name = 'fleet-dead-master-%d' % attempt
        owners = [owner_of(cluster, int(cluster.nodes[0].cli('cluster', 'keyslot', '{%s:v2:%d}' % (name, w.start)).strip()))
                  for w in WINDOWS]
        if owners[0] is cluster.nodes[0] and owners[1] is not owners[0]:
            break
    assert owners[0] is cluster.nodes[0] and owners[1] is not owners[0]
    live = [n for n in cluster.nodes if n is not owners[0]][0]
    fleet = Fleet(Settings(fleet_store=cluster.url, fleet_host='web0', fleet_name=name, threshold=THRESHOLD), lambda line: None)
    try:
        for node in cluster.nodes:      # the live masters answer for their slots (the cluster)
            node.cli('config', 'set', 'cluster-require-full-coverage', 'no')
        counters = {WINDOWS[0].stamp: Counter({SCRAPER.encode(): 5}), WINDOWS[1].stamp: Counter({SCRAPER.encode(): 7})}
        fleet.offer(counters, WINDOWS)
        assert fleet.push_once()
        owners[0].kill()
        counters[WINDOWS[1].stamp][SCRAPER.encode()] += 3
        counters[WINDOWS[0].stamp][SCRAPER.encode()] += 1
        fleet.offer(counters, WINDOWS)
        assert fleet.push_once() is False and fleet.store_up is False
        assert fleetstore.window_sums(lambda *a: live.cli('-c', *a), WINDOWS[1].start, name) == {SCRAPER: 10}
        assert WINDOWS[0].stamp in fleet.pending and WINDOWS[1].stamp not in fleet.pending    # kept for when it is back
    finally:
        fleet.store.close()
        if owners[0].proc is None:
            owners[0].start()       # its nodes.conf: back with its slots
        for node in cluster.nodes:
            node.cli('config', 'set', 'cluster-require-full-coverage', 'yes')
        fleetstore.wait_cluster_ok(cluster)


def test_a_dead_master_stops_no_fresh_connections_push_of_a_window_on_a_live_one(fleet_cluster):
    """A cron run (a new connection each time) loads the script (SCRIPT LOAD: every master, by
    default) and asks, for each window, whether hosts of key layout 1 push too (a key of another
    slot than the window's). A master stopped (no full coverage) that holds neither the window
    nor anything the push needs: the window's counts are pushed all the same."""
    cluster = fleet_cluster
    current = WINDOWS[1]
    for attempt in range(200):      # the window on a live master, the layout-1 probe's key on the URL's, to stop
        name = 'fleet-dead-probe-%d' % attempt
        slot = int(cluster.nodes[0].cli('cluster', 'keyslot', '{%s:v2:%d}' % (name, current.start)).strip())
        probe = int(cluster.nodes[0].cli('cluster', 'keyslot', '{%s:%s}:epoch' % (name, current.stamp.decode())).strip())
        if owner_of(cluster, probe) is cluster.nodes[0] and owner_of(cluster, slot) is not cluster.nodes[0]:
            break
    else:
        pytest.fail('no fleet name found with the probe and the window on two masters')
    live = owner_of(cluster, slot)
    store = None
    try:
        for node in cluster.nodes:
            node.cli('config', 'set', 'cluster-require-full-coverage', 'no')
        warm = fleet_store.Store(Settings(fleet_store=cluster.url, fleet_host='web0', fleet_name=name, threshold=THRESHOLD))
        warm.push(current.start, 7200, [], True, THRESHOLD)     # the client learns the cluster's nodes
        known = warm.known_nodes
        warm.close()
        cluster.nodes[0].kill()
        store = fleet_store.Store(Settings(fleet_store='redis://127.0.0.1:%d/0?cluster=yes' % live.port, fleet_host='web0',
                                           fleet_name=name, threshold=THRESHOLD))
        store.known_nodes = [node for node in known if node[1] != cluster.nodes[0].port] or known
        applied = store.push(current.start, 7200, [(SCRAPER.encode(), 9)], True, THRESHOLD, current.stamp)[0]
        assert applied is True
        assert fleetstore.window_sums(lambda *a: live.cli('-c', *a), current.start, name) == {SCRAPER: 9}
    finally:
        if store is not None:
            store.close()
        if cluster.nodes[0].proc is None:
            cluster.nodes[0].start()
        for node in cluster.nodes:
            node.cli('config', 'set', 'cluster-require-full-coverage', 'yes')
        fleetstore.wait_cluster_ok(cluster)


def owner_of(cluster, slot):
    for node in cluster.nodes:
        for line in node.cli('cluster', 'nodes').splitlines():
            fields = line.split()
            if 'myself' in fields[2] and 'master' in fields[2]:
                for part in fields[8:]:
                    low, dummy, high = part.partition('-')
                    if low.isdigit() and int(low) <= slot <= int(high or low):
                        return node
    raise AssertionError('no master holds slot %d' % slot)
