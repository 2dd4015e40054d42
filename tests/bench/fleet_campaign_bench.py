"""The campaign keys through the fleet store (issue 45 §6): how soon a follower decides a network
the fleet's sum took over its threshold, and what the keys cost the store. Prints its figures
(the campaigns guide, "Fleet-wide", quotes them).

  /usr/bin/python3 tests/bench/fleet_campaign_bench.py [ROUNDS]

Latency: a redis-server of its own on a loopback port and a follower (the command, `--follow
--campaigns`, /usr/bin/python3) with its own log, lists and state. Per round, a network of its
own: 100 job-page requests from 5 addresses appended to the follower's log; once the store holds
them, another host's push (decision/fleet_campaigns.CampaignStore, as a cron run pushes) adds 100
from 5 other addresses: 200, the network's threshold. From that push's start to the network in
the follower's challenge list (read every 5 ms).

Memory: another fresh server; three hosts push a residential campaign's keys (3,000 addresses,
one request each, in 1,000 /24s, each host seeing two thirds of them): the server's used_memory
(INFO) after, less before, per member of the union (network, address) and per host's member.
"""
import calendar
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'bench'))
sys.path.insert(0, os.path.join(ROOT, '.build'))

from fleet_store_bench import free_port, start_server, stop     # noqa: E402  (its redis-server, as it starts one)
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_campaigns  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings  # noqa: E402

CORE = os.path.join(ROOT, 'plugins', 'module_utils', 'bot_detector')
PYTHON = '/usr/bin/python3'
NOW = calendar.timegm((2026, 11, 21, 10, 50, 0))
START = NOW - 50 * 60
STAMP = '21/Nov/2026:10:20:00 +0000'
LENGTHS = {4: [24], 6: [64, 48]}


def line(address, i):
    return ('%s - - [%s] "GET /job/%d HTTP/1.1" 200 512 "-" "Mozilla/5.0 (X11)"\n' % (address, STAMP, i)).encode()


def pairs_of(addresses, each):
    """A host's campaign pairs for ``addresses`` (IPv4 text) with ``each`` requests each."""
    found = {}
    for address in addresses:
        number = int.from_bytes(bytes(int(part) for part in address.split('.')), 'big')
        key = b'n %s.0/24' % address.rsplit('.', 1)[0].encode()
        found[key] = found.get(key, 0) + each
        found[b'm ' + key + b' %x' % number] = 1
    return sorted(found.items())


def wait(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.005)
    raise SystemExit('%s: not within %s s' % (what, timeout))


class Server:
    """A redis-server of the bench's own (fleet_store_bench's start), ``cli`` its redis-cli."""

    def __init__(self, base):
        self.port = free_port()
        self.url = 'redis://127.0.0.1:%d/0' % self.port
        self.proc = start_server(os.path.join(base, 'store'), self.port)

    def cli(self, *args):
        return subprocess.run(['redis-cli', '-p', str(self.port)] + list(args), stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout

    def kill(self):
        stop([self.proc])


def latency(base, rounds):
    server = Server(base)
    settings = Settings(fleet_store=server.url, fleet_host='web-c', fleet_name='bench', campaigns=True)
    other = fleet_campaigns.CampaignStore(settings, LENGTHS, machine='web-c')
    limits = fleet_campaigns.limits(settings)
    log, listed = os.path.join(base, 'access.log'), os.path.join(base, 'challenge.txt')
    open(log, 'wb').close()
    args = [PYTHON, CORE, '--follow', '--campaigns', '--now', '@%d' % NOW, '--state-dir', os.path.join(base, 'state'),
            '--blocklist', os.path.join(base, 'blocklist'), '--exclusions', os.path.join(base, 'exclusions'),
            '--activity-log', os.path.join(base, 'activity.log'), '--server-ip', '198.51.100.1',
            '--fleet-store', server.url, '--fleet-host', 'web-f', '--fleet-name', 'bench', '--challenge-list', listed,
            '--answer-dir', os.path.join(base, 'answers'), log]
    follower = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, TZ='UTC'))
    times = []
    try:
        for round_ in range(rounds):
            network = '10.%d.%d' % (round_ // 200, round_ % 200)
            with open(log, 'ab') as handle:
                handle.write(b''.join(line('%s.%d' % (network, host), i) for host in range(1, 6) for i in range(20)))
            key = 'n %s.0/24' % network
            tag = '{bench:v2c:%d}' % START

            def pushed():
                token = server.cli('get', tag + ':epoch').strip()
                return token and server.cli('hget', '%s:%s:sum' % (tag, token), key).strip() == '100'
            wait(pushed, 60, 'the follower\'s push')
            began = time.time()
            other.push(START, 9000, pairs_of(['%s.%d' % (network, host) for host in range(6, 11)], 20), True, limits)
            wanted = ('%s.0/24\n' % network).encode()

            def decided():
                try:
                    with open(listed, 'rb') as handle:
                        return wanted in handle.read()
                except OSError:
                    return False
            wait(decided, 30, 'the follower\'s decision')
            times.append(time.time() - began)
    finally:
        follower.send_signal(signal.SIGKILL)
        follower.wait()
        other.close()
        server.kill()
    return times


def memory(base):
    server = Server(base)
    try:
        def used():
            return int([f for f in server.cli('info', 'memory').split() if f.startswith('used_memory:')][0].split(':')[1])
        before = used()
        addresses = ['10.%d.%d.%d' % (n // 250 // 4, n // 4 % 250, 1 + n % 250) for n in range(3000)]
        by_host = [[address for n, address in enumerate(addresses) if n % 3 != i] for i in range(3)]      # 2,000 each
        members = sum(len(host) for host in by_host)
        for index, seen in enumerate(by_host):
            settings = Settings(fleet_store=server.url, fleet_host='web%d' % index, fleet_name='bench', campaigns=True)
            store = fleet_campaigns.CampaignStore(settings, LENGTHS, machine='web%d' % index)
            store.push(START, 9000, pairs_of(seen, 1), True, fleet_campaigns.limits(settings))
            store.close()
        grown = used() - before
        return grown, len(set(addresses)), members
    finally:
        server.kill()


def main(argv):
    rounds = int(argv[0]) if argv else 20
    with tempfile.TemporaryDirectory() as base:
        times = latency(base, rounds)
    with tempfile.TemporaryDirectory() as base:
        grown, union, members = memory(base)
    print('decided on the follower after the crossing push: p50 %.2f s, max %.2f s (%d networks)'
          % (statistics.median(times), max(times), len(times)))
    print('store: %.2f MiB for %d addresses (the union) seen %d times by 3 hosts: %d bytes an address, %d a host\'s'
          % (grown / 1048576.0, union, members, grown // union, grown // members))


if __name__ == '__main__':
    main(sys.argv[1:])
