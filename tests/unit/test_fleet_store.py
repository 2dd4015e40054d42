"""The fleet store (issue 37), with a real redis-server (and valkey-server where Debian has it)
started by the tests on a loopback port in a scratch directory, and real followers: three hosts
with their own logs, lists and state; a scraper spread over them, blocked on all three within
2 s of the fleet-wide 1000th line; one just under the threshold, never blocked; an allow-list on
one host only; kill -9 of the store and a restart with no data (the counts pushed again, exact);
the store away while a local scraper crosses on one host (blocked there at once)."""
import os
import subprocess
import sys
import time

import pytest

import fleetstore
from conftest import CORE, Files, run_core
from loadfactor import Slowdown
from test_follow import SERVER, Following, blocked, lines, wait_for

THRESHOLD = 1000
SECRET = 'Fl33t-S3cret'


def spread(total, hosts=3):
    """``total`` lines dealt over ``hosts`` as evenly as can be (the first get one more)."""
    return [total // hosts + (1 if i < total % hosts else 0) for i in range(hosts)]


class Host:
    """A web host: its log, lists, state and a follower with the fleet store."""

    def __init__(self, base, name, url, allow=()):
        self.name = name
        self.files = Files(base / name)
        if allow:
            self.files.exclusions.write_text(''.join(a + '\n' for a in allow))
        self.log = base / name / 'access.log'
        self.log.write_bytes(b'')
        self.follower = Following(base / name, self.files, self.log,
                                  extra=['--threshold', str(THRESHOLD), '--fleet-store', url, '--fleet-host', name])

    def write(self, address, count):
        with open(str(self.log), 'ab') as out:
            out.write(lines(address, count))

    def blocked(self):
        return [a.decode() for a in blocked(self.files)]

    def stop(self):
        proc = self.follower.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                out, err = proc.communicate(timeout=10)
            except Exception:
                proc.kill()
                raise
            return out.decode(), err.decode()
        return '', ''


def start_all(hosts):
    """Start the followers together, then wait for each one's first decision (its status file)."""
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')
    for host in hosts:
        follower = host.follower
        follower.started = time.time()
        follower.proc = subprocess.Popen([sys.executable, str(CORE), '--follow', '--state-dir', str(follower.state_dir),
                                          '--now', '@%d' % follower.now] + [str(a) for a in follower.options()]
                                         + [str(follower.log)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for host in hosts:
        follower = host.follower
        wait_for(lambda: follower.decided_since(follower.started) or follower.proc.poll() is not None, 30, 'first decision')
        assert follower.proc.poll() is None, follower.proc.communicate()


@pytest.fixture
def fleet(tmp_path):
    made = {'hosts': [], 'servers': []}

    def make(url=None, allow=None, server=None):
        if url is None:
            server = fleetstore.StoreServer(tmp_path, server or 'redis-server').start()
            made['servers'].append(server)
            url = server.url
        hosts = [Host(tmp_path, 'web%d' % i, url, (allow or {}).get(i, ())) for i in range(3)]
        made['hosts'].extend(hosts)
        start_all(hosts)
        return server, hosts
    yield make
    for host in made['hosts']:
        host.stop()
    for server in made['servers']:
        server.kill()


def store_sum(server, address, name='bot-detector'):
    """The fleet's sum of ``address`` over the windows' keys (those of each window's token), read with redis-cli."""
    return sum(fleetstore.window_sums(server.cli, start, name).get(address, 0) for start in fleetstore.store_starts(server, name))


def wait_sum(server, address, expected, timeout=5.0):
    wait_for(lambda: store_sum(server, address) == expected, timeout, 'the store summing %s to %d' % (address, expected))


@pytest.mark.parametrize('binary', fleetstore.SERVERS)
def test_a_scraper_spread_over_the_fleet_is_blocked_everywhere_within_2_s(fleet, binary):
    server, hosts = fleet(allow={2: ['198.51.100.9']}, server=binary)
    for host, n in zip(hosts, spread(999)):
        host.write('203.0.113.50', n)           # the near-miss: 999 over the fleet
        host.write('203.0.113.7', n)            # the scraper: 999 so far
    for host, n in zip(hosts, spread(1000)):
        host.write('198.51.100.9', n)           # allow-listed on web2 only
    for host, n in zip(hosts, spread(1500)):
        host.write(SERVER, n)                   # the hosts' own server address (--server-ip): summed, never blocked
    wait_sum(server, '203.0.113.7', 999)
    wait_sum(server, '203.0.113.50', 999)
    wait_for(lambda: all('198.51.100.9' in h.blocked() for h in hosts[:2]), 3, 'the allow-listed one elsewhere')
    assert all('203.0.113.7' not in h.blocked() for h in hosts)
    load = Slowdown()
    written = time.time()
    hosts[1].write('203.0.113.7', 1)            # the fleet-wide 1000th line
    wait_for(lambda: all('203.0.113.7' in h.blocked() for h in hosts), load.bound(2.0), 'the scraper blocked on every host')
    latency = time.time() - written
    time.sleep(1.0)         # the near-miss is never blocked: a second more of pushes and decisions
    for host in hosts:
        assert '203.0.113.50' not in host.blocked()
    assert '198.51.100.9' not in hosts[2].blocked()
    assert all(SERVER not in h.blocked() for h in hosts) and store_sum(server, SERVER) == 1500
    assert store_sum(server, '203.0.113.7') == 1000 and store_sum(server, '198.51.100.9') == 1000
    for host in hosts:
        activity = host.files.read('activity_log').decode()
        assert activity.endswith(' | IP addess 203.0.113.7 added to the block list, RPH=1000 (fleet)\n'), activity
        out, err = host.stop()
        assert 'Blocking IP address: 203.0.113.7 (1000 requests, fleet)' in out, out     # as a run says it
    assert latency < load.bound(2.0), (latency, load.factor)


def test_a_store_killed_and_restarted_empty_gets_the_counts_again_exactly(fleet):
    server, hosts = fleet()
    for host, n in zip(hosts, spread(700)):
        host.write('203.0.113.7', n)
    for host, n in zip(hosts, spread(998)):
        host.write('203.0.113.50', n)
    wait_sum(server, '203.0.113.7', 700)
    wait_sum(server, '203.0.113.50', 998)
    server.kill()
    for host, n in zip(hosts, spread(200)):
        host.write('203.0.113.7', n)            # while it is away
    time.sleep(0.6)
    server.start()                              # the same port, no data
    for host, n in zip(hosts, spread(99)):
        host.write('203.0.113.7', n)
    wait_sum(server, '203.0.113.7', 999, timeout=8)     # backing off up to 5 s while away
    wait_sum(server, '203.0.113.50', 998)
    assert all('203.0.113.7' not in h.blocked() for h in hosts)
    hosts[0].write('203.0.113.7', 1)
    wait_for(lambda: all('203.0.113.7' in h.blocked() for h in hosts), 2.0, 'blocked on every host after the restart')
    hosts[2].write('203.0.113.50', 1)          # 999: just under, exact after the restart too
    wait_sum(server, '203.0.113.50', 999)
    time.sleep(1.0)
    assert all('203.0.113.50' not in h.blocked() for h in hosts)
    assert store_sum(server, '203.0.113.7') == 1000


def test_with_the_store_away_a_local_scraper_is_blocked_at_once_and_the_fleet_catches_up(fleet):
    server, hosts = fleet()
    server.kill()
    time.sleep(0.3)
    load = Slowdown()
    written = time.time()
    hosts[0].write('203.0.113.7', 1000)         # crosses on web0 alone
    wait_for(lambda: '203.0.113.7' in hosts[0].blocked(), load.bound(2.0), 'blocked on its own counts')
    assert time.time() - written < load.bound(2.0), load.factor
    hosts[1].write('203.0.113.50', 1200)        # and another on web1
    wait_for(lambda: '203.0.113.50' in hosts[1].blocked(), load.bound(2.0), 'blocked on its own counts')
    assert hosts[1].blocked() == ['203.0.113.50'] and hosts[2].blocked() == []
    server.start()
    wait_for(lambda: all(set(h.blocked()) == {'203.0.113.7', '203.0.113.50'} for h in hosts), 8.0,
             'the others learn when the store is back')
    assert store_sum(server, '203.0.113.7') == 1000 and store_sum(server, '203.0.113.50') == 1200
    out, err = hosts[0].stop()
    assert 'fleet store redis://127.0.0.1:%d/0 unreachable' % server.port in err


def test_a_follower_shows_the_store_without_its_password(fleet, tmp_path):
    """The follower's status file (which --status reads), --status, its output and its state: the
    URL with the password as ***, whether the store answers, how far behind the pushes are."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        server.cli('config', 'set', 'requirepass', SECRET)
        url = 'redis://:%s@127.0.0.1:%d/0' % (SECRET, server.port)
        dummy, hosts = fleet(url=url)
        hosts[0].write('203.0.113.7', 10)
        wait_for(lambda: (hosts[0].follower.status() or {}).get('fleet', {}).get('up') is True, 5, 'the store up')
        shown = hosts[0].follower.status()['fleet']
        assert shown['store'] == 'redis://:***@127.0.0.1:%d/0' % server.port and shown['host'] == 'web0'
        assert shown['push_behind_seconds'] < 2 and shown['decisions_received'] == 0
        status = run_core(hosts[0].files.options() + ['--status', '--fleet-store', url, hosts[0].log])
        assert status.returncode == 0 and SECRET.encode() not in status.stdout + status.stderr, status
        server.kill()
        hosts[0].write('203.0.113.7', 10)
        wait_for(lambda: hosts[0].follower.status()['fleet']['up'] is False, 5, 'the store seen away')
        out, err = hosts[0].stop()
        assert SECRET not in out + err and 'redis://:***@127.0.0.1:%d/0 unreachable' % server.port in err
        assert SECRET not in open(str(hosts[0].follower.state_dir / os.listdir(str(hosts[0].follower.state_dir))[0])).read()
    finally:
        server.kill()


def test_counts_past_the_count_budget_are_pushed_exactly(tmp_path):
    """A follower whose windows spill to files (count_budget 7 addresses): every address's
    count reaches the store, and a spread scraper among them is blocked on every host."""
    server = fleetstore.StoreServer(tmp_path).start()
    hosts = [Host(tmp_path, 'web%d' % i, server.url) for i in range(2)]
    try:
        for host in hosts:
            host.follower.extra += ['--count-budget', '7']
        start_all(hosts)
        for k in range(30):
            for host in hosts:
                host.write('192.0.2.%d' % k, 3 + k)
        for host, n in zip(hosts, spread(1000, 2)):
            host.write('203.0.113.7', n)
        wait_for(lambda: all('203.0.113.7' in h.blocked() for h in hosts), 15, 'blocked on both hosts')
        wait_for(lambda: all(store_sum(server, '192.0.2.%d' % k) == 2 * (3 + k) for k in range(0, 30, 7)), 15, 'the sums')
        assert store_sum(server, '203.0.113.7') == 1000
    finally:
        for host in hosts:
            host.stop()
        server.kill()
