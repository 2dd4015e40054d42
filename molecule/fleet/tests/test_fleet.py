"""Fleet mode on three podman hosts: a scraper spread over the hosts is blocked on all of
them by playbooks/fleet.yml and on none by the hosts' own runs; a host's own block is
propagated; an allow-listed address stays unblocked there; a second run changes nothing;
a thin spread, under the report floor on two hosts, is counted exactly against the fleet
threshold set in group_vars of web (900, molecule.yml)."""
import os
import re
import sys
import time

import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'default', 'tests'))
from helpers import ROOT, ansible_run, container_now, get, loggen, put  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://fweb1']
HOSTS = dict((name, testinfra.get_host('podman://' + name)) for name in ('fweb1', 'fweb2', 'fweb3'))
SCRAPER = '203.0.113.77'        # 400 requests an hour on each host: 1200 across the fleet (threshold 900)
LOCAL = '198.51.100.99'         # blocked by fweb1's own run only
LOG = '/var/log/nginx/access.log'


def recap(stdout):
    return dict((m.group(1), int(m.group(2))) for m in re.finditer(r'^(\S+)\s+: ok=\d+\s+changed=(\d+)', stdout, re.M))


def fleet_playbook():
    started = time.time()
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'playbooks', 'fleet.yml')], callback='ansible.builtin.default')
    run.elapsed = time.time() - started
    return run


def test_fleet_blocks_what_no_host_sees_alone():
    # fweb1's own run blocked LOCAL three hours ago (a replay with --now): outside the windows now.
    fweb1 = HOSTS['fweb1']
    earlier = container_now(fweb1) - 3 * 3600
    put(fweb1, '/var/log/nginx/earlier.log', loggen.planted_log(earlier, current={LOCAL: 1500}))
    replay = fweb1.run("/usr/local/sbin/bot-detector.sh /var/log/nginx/earlier.log --now '%s'"
                       % time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(earlier)))
    assert 'Blocking IP address: %s (1500 requests)' % LOCAL in replay.stdout, replay.stdout + replay.stderr
    for name, host in HOSTS.items():
        now = container_now(host)
        previous = {SCRAPER: 400, '192.0.2.%d' % (10 + int(name[-1])): 60}
        put(host, LOG, loggen.planted_log(now, previous=previous, current={SCRAPER: 10}))
        own = host.run('/usr/local/sbin/bot-detector.sh %s' % LOG)
        assert own.rc == 0, own.stderr
        assert SCRAPER not in own.stdout                          # 400 < 1000: no host blocks it alone
    assert LOCAL.encode() in get(HOSTS['fweb1'], '/etc/ipblocklist.txt')

    run = fleet_playbook()
    out = run.stdout.decode()
    assert run.returncode == 0, out + run.stderr.decode()
    print('fleet playbook, 3 hosts: %.1f s' % run.elapsed)
    for name, host in HOSTS.items():
        blocklist = get(host, '/etc/ipblocklist.txt').decode().split('\n')
        activity = get(host, '/var/log/bot-detector.log').decode()
        if name == 'fweb2':
            assert SCRAPER not in blocklist                       # allow-listed there
        else:
            assert SCRAPER in blocklist
            assert 'IP addess %s added to the block list, RPH=1200 (fleet)' % SCRAPER in activity
        assert LOCAL in blocklist
        if name != 'fweb1':
            assert 'IP addess %s added to the block list, RPH=1500 (sync)' % LOCAL in activity
    assert recap(out)['fweb2'] == 1 and recap(out)['fweb1'] == 1 and recap(out)['fweb3'] == 1

    again = fleet_playbook()
    assert again.returncode == 0
    assert set(recap(again.stdout.decode()).values()) == {0}      # a second run changes nothing


def test_thin_spread_is_counted_exactly_against_the_group_vars_threshold():
    # Floor ceil(900 / 3) = 300: fweb1 reports its 850, the 30s are under the floor and come
    # in phase 2. 910 >= 900 (under the default 1000); the near-miss, 890, stays unblocked.
    thin, near = '203.0.113.91', '203.0.113.89'
    for name, host in HOSTS.items():
        first = name == 'fweb1'
        put(host, LOG, loggen.planted_log(container_now(host), previous={thin: 850 if first else 30,
                                                                         near: 850 if first else 20}))
    run = fleet_playbook()
    out = run.stdout.decode()
    assert run.returncode == 0, out + run.stderr.decode()
    assert 'Threshold 900, floor 300; candidates: 2, counted in phase 2: 2' in out
    for name, host in HOSTS.items():
        blocklist = get(host, '/etc/ipblocklist.txt').decode().split('\n')
        assert thin in blocklist and near not in blocklist
        assert 'IP addess %s added to the block list, RPH=910 (fleet)' % thin in get(host, '/var/log/bot-detector.log').decode()


def test_unreachable_host_is_reported_and_the_others_go_on():
    import subprocess
    second = '203.0.113.88'       # 600 on each of the two reachable hosts
    for name in ('fweb1', 'fweb2'):
        put(HOSTS[name], LOG, loggen.planted_log(container_now(HOSTS[name]), previous={second: 600}))
    subprocess.run(['podman', 'stop', '-t', '1', 'fweb3'], check=True, stdout=subprocess.DEVNULL)
    try:
        run = fleet_playbook()
        out = run.stdout.decode()
        assert run.returncode == 4, out             # ansible-playbook's status for unreachable hosts
        assert "without a report: ['fweb3']" in out
        # Only the control node's tasks ran for it: the preflight role's argument validation and
        # its supported ansible-core check, the fleet settings' checks, and its settings built
        # from its variables (every phase takes them from there since 2.0.0).
        assert re.search(r'^fweb3\s+: ok=7\s+changed=0\s+unreachable=1\s+failed=0', out, re.M)
        for name in ('fweb1', 'fweb2'):
            assert second in get(HOSTS[name], '/etc/ipblocklist.txt').decode().split('\n')
    finally:
        subprocess.run(['podman', 'start', 'fweb3'], check=True, stdout=subprocess.DEVNULL)
    assert second not in get(HOSTS['fweb3'], '/etc/ipblocklist.txt').decode()
