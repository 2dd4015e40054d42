"""A fleet store at fault (issue 43), real redis-server processes and real runs: one that lost part
of its data but kept its token (restored from a backup; a key evicted: a host's hash, the sums,
the crossings), found by what the hosts know they pushed and sent again; an eviction policy that
can drop keys, said by a run, --status and a metric; a full store under noeviction, a store away;
a store whose reply drips a byte every 0.5 s, a store away for a run, --status and a follower
within the bound of a whole exchange; a password file that is a FIFO or readable by others."""
import json
import os
import subprocess
import sys
from collections import Counter

import pytest

import fleetstore
from conftest import CORE, in_timezone
from test_fleet_runs import NOW, THRESHOLD, blocked, cron_run
from test_fleet_store import Host, spread, start_all
from test_follow import wait_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import messages
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.metrics import fleet_samples
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

WINDOWS = in_timezone('UTC', lambda: hour_windows(NOW))
CURRENT = WINDOWS[1]


class Fleet3:
    """Three hosts' Fleets (the product's push code, driven by the test) with their counts."""

    def __init__(self, url):
        self.said = []
        self.fleets = [Fleet(Settings(fleet_store=url, fleet_host='web%d' % i, threshold=THRESHOLD), self.said.append)
                       for i in range(3)]
        self.counters = [dict((w.stamp, Counter()) for w in WINDOWS) for dummy in self.fleets]

    def add(self, address, total):
        """``total`` requests of ``address`` dealt over the hosts in the current hour, then every
        host's pushes until all is sent, twice over (the second round reads the others' crossings)."""
        for counter, n in zip(self.counters, spread(total)):
            counter[CURRENT.stamp][address.encode()] += n
        for dummy in range(2):
            for fleet, counter in zip(self.fleets, self.counters):
                for attempt in range(4):
                    fleet.offer(counter, WINDOWS)
                    assert fleet.push_once(), fleet.last_error
                    if not fleet.full and not fleet.pending:
                        break

    def learnt(self):
        return [sorted(k.decode() for k in f.take_crossed()[0].get(CURRENT.stamp, {})) for f in self.fleets]

    def close(self):
        for fleet in self.fleets:
            fleet.store.close()


@pytest.mark.parametrize('binary', fleetstore.SERVERS)
def test_a_store_restored_from_a_backup_gets_the_lost_counts_again(tmp_path, binary):
    """The backup holds the first crossing only; the crossing and the counts after it are lost
    with the token kept: the next scraper spread over the hosts is blocked on all three, the sums
    exact again."""
    server = fleetstore.StoreServer(tmp_path, binary).start()
    hosts = Fleet3(server.url)
    try:
        hosts.add('203.0.113.1', 1000)
        server.cli('save')          # the backup
        hosts.add('203.0.113.2', 1000)
        hosts.add('203.0.113.3', 600)
        assert hosts.learnt() == [['203.0.113.1', '203.0.113.2']] * 3
        server.kill()
        server.start()              # restored: the backup's data, its token
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.1': 1000}
        hosts.add('203.0.113.4', 1000)
        assert hosts.learnt() == [['203.0.113.1', '203.0.113.2', '203.0.113.4']] * 3
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.1': 1000, '203.0.113.2': 1000,
                                                                     '203.0.113.3': 600, '203.0.113.4': 1000}
        assert any(line.startswith('fleet store %s lost counts of the window starting at ' % server.url) for line in hosts.said)
    finally:
        hosts.close()
        server.kill()


def test_an_append_only_file_missing_its_last_pushes_is_found(tmp_path):
    """The store killed and started again from an append-only file cut short (its last pushes,
    and half a command: a crash before the disk had them): the token is the file's, the counts
    after the cut are sent again, the next spread scraper is blocked on all three."""
    server = fleetstore.StoreServer(tmp_path, extra=['--appendonly', 'yes', '--appendfsync', 'always']).start()
    hosts = Fleet3(server.url)
    try:
        hosts.add('203.0.113.1', 1000)
        aof = [os.path.join(root, name) for root, dummy, names in os.walk(str(server.dir)) for name in names
               if name.endswith('.incr.aof')]
        assert len(aof) == 1, aof
        cut = os.path.getsize(aof[0]) + 5
        hosts.add('203.0.113.2', 1000)
        hosts.add('203.0.113.3', 600)
        server.kill()
        os.truncate(aof[0], cut)
        server.start()
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.1': 1000}
        hosts.add('203.0.113.4', 1000)
        assert hosts.learnt() == [['203.0.113.1', '203.0.113.2', '203.0.113.4']] * 3
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.1': 1000, '203.0.113.2': 1000,
                                                                     '203.0.113.3': 600, '203.0.113.4': 1000}
    finally:
        hosts.close()
        server.kill()


@pytest.mark.parametrize('binary', fleetstore.SERVERS)
def test_keys_evicted_are_found_and_the_counts_sent_again(tmp_path, binary):
    """As maxmemory eviction would: one host's hash dropped (300 + 300 + 300 and one more line is
    901, never 1201, never blocked), then the sums, then the crossings list."""
    server = fleetstore.StoreServer(tmp_path, binary).start()
    hosts = Fleet3(server.url)

    def keys(kind):
        return server.cli('--scan', '--pattern', '{bot-detector:v2:%d}:*:%s' % (CURRENT.start, kind)).split()
    try:
        hosts.add('203.0.113.7', 900)
        evicted = keys('w:web0:*')
        assert len(evicted) == 1
        server.cli('del', evicted[0])
        hosts.add('203.0.113.7', 1)
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.7': 901}
        assert hosts.learnt() == [[]] * 3
        server.cli('del', *keys('sum'))
        hosts.add('203.0.113.7', 2)
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.7': 903}
        hosts.add('203.0.113.8', 1000)
        server.cli('del', *keys('crossed'))
        hosts.add('203.0.113.9', 1000)
        assert hosts.learnt() == [['203.0.113.8', '203.0.113.9']] * 3
        assert fleetstore.window_sums(server.cli, CURRENT.start) == {'203.0.113.7': 903, '203.0.113.8': 1000,
                                                                     '203.0.113.9': 1000}
    finally:
        hosts.close()
        server.kill()


def test_an_eviction_policy_that_drops_keys_is_said_by_a_run_status_and_a_metric(tmp_path):
    server = fleetstore.StoreServer(tmp_path, extra=['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']).start()
    try:
        metrics = tmp_path / 'metrics.prom'
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.7': 10}, extra=['--metrics-file', metrics])
        assert got.returncode == 0, got
        told = messages.FLEET_EVICTION % (server.url, 'allkeys-lru')
        assert got.stderr.decode().count(told) == 1, got.stderr
        assert ('bot_detector_fleet_store_eviction_safe{store="%s",policy="allkeys-lru"} 0' % server.url
                in metrics.read_text()), metrics.read_text()
        status = run(files.options() + ['--status', '--fleet-store', server.url, '--fleet-host', 'web0'])
        assert ': reachable, maxmemory_policy allkeys-lru (may drop counts: noeviction is safe)' in status.stdout.decode()
        server.cli('config', 'set', 'maxmemory-policy', 'noeviction')
        status = run(files.options() + ['--status', '--json', '--fleet-store', server.url, '--fleet-host', 'web0'])
        assert json.loads(status.stdout)['fleet_store']['eviction_policy'] == 'noeviction'
    finally:
        server.kill()


def test_a_full_store_under_noeviction_is_a_store_away(tmp_path):
    server = fleetstore.StoreServer(tmp_path, extra=['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction']).start()
    try:
        server.cli('eval', "for i = 1, 60000 do redis.call('SET', 'filler:' .. i, string.rep('x', 100)) end", '0')
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.7': 1000})
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert b'unreachable' in got.stderr and b'maxmemory' in got.stderr and b'evicts' not in got.stderr, got.stderr
    finally:
        server.kill()


def run(args, timeout=90):
    """The command as a real process, given ``timeout`` seconds (a hang fails the test, never holds it)."""
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')
    return subprocess.run([sys.executable, str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, check=False, timeout=timeout)


def test_a_reply_that_drips_is_a_store_away_for_a_run_status_and_a_follower(tmp_path):
    """One byte every 0.5 s (each read in time, the reply never whole): a run decides on its own
    counts, --status says unreachable, a follower says the store away (up false, the metric 0)."""
    drip = fleetstore.DrippingStore()
    host = None
    try:
        got, files = cron_run(tmp_path, drip.url, 'web0', previous={'203.0.113.7': 1000}, python=[sys.executable])
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert (messages.FLEET_SLOW % fleet_store.EXCHANGE_SECONDS).encode() in got.stderr, got.stderr
        status = run(files.options() + ['--status', '--json', '--fleet-store', drip.url])
        shown = json.loads(status.stdout)['fleet_store']
        assert shown['reachable'] is False and shown['error'] == messages.FLEET_SLOW % fleet_store.EXCHANGE_SECONDS
        fleet = Fleet(Settings(fleet_store=drip.url, fleet_host='web1', threshold=THRESHOLD), lambda line: None)
        fleet.offer({CURRENT.stamp: Counter({b'203.0.113.7': 5})}, WINDOWS)
        assert fleet.push_once() is False and fleet.status()['fleet']['up'] is False
        assert ('fleet_store_up', (('log', 'access.log'), ('store', drip.url)), 0) in fleet_samples('access.log', fleet, 0)
        fleet.store.close()
        host = Host(tmp_path, 'web2', drip.url)
        start_all([host])
        wait_for(lambda: (host.follower.status() or {}).get('fleet', {}).get('up') is False, 30, 'the follower saying the store away')
        host.write('203.0.113.9', 1000)
        wait_for(lambda: host.blocked() == ['203.0.113.9'], 10, 'its own block')
    finally:
        if host is not None:
            host.stop()
        drip.close()


def test_a_password_file_that_is_a_fifo_or_readable_by_others(tmp_path):
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        server.cli('acl', 'setuser', 'bd', 'on', '>S3cret-pw', *(list(fleet_store.ACL_RULES) + ['~{bot-detector:*']))
        url = 'redis://bd@127.0.0.1:%d/0' % server.port
        fifo = tmp_path / 'password.fifo'
        os.mkfifo(str(fifo), 0o600)
        got, files = cron_run(tmp_path, url, 'web0', previous={'203.0.113.7': 1000}, python=[sys.executable],
                              extra=['--fleet-store-password-file', fifo])
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert (messages.FLEET_PASSWORD_FILE % (fifo, 'not a regular file')).encode() in got.stderr, got.stderr
        readable = tmp_path / 'password'
        readable.write_text('S3cret-pw\n')
        os.chmod(str(readable), 0o644)
        got, files = cron_run(tmp_path, url, 'web1', previous={'203.0.113.8': 10}, extra=['--fleet-store-password-file', readable])
        assert got.returncode == 0 and b'unreachable' not in got.stderr, got
        assert got.stderr.decode().count(messages.FLEET_PASSWORD_READABLE % (readable, 0o644)) == 1, got.stderr
        status = subprocess.run([sys.executable, str(CORE), '--status', '--json', '--blocklist', str(tmp_path / 'none'),
                                 '--fleet-store', url, '--fleet-store-password-file', str(readable)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False)
        report = json.loads(status.stdout)      # --status warns as a run does
        assert report['fleet_store']['reachable'] is True, status
        assert messages.FLEET_PASSWORD_READABLE % (readable, 0o644) in report['warnings'], report
        os.chmod(str(readable), 0o600)
        got, files = cron_run(tmp_path, url, 'web1', previous={'203.0.113.8': 10}, extra=['--fleet-store-password-file', readable])
        assert got.returncode == 0 and got.stderr == b'', got
    finally:
        server.kill()
