"""playbooks/fleet.yml run by real ansible-playbook on 24 and 25 `ansible_connection: local`
web hosts, each with its own log, lists and activity log named in the inventory only, no
config file deployed (tests/fleethosts.py): the thin spreads of issue 13 blocked on every
host, the near-miss on none, a host's own block synced, an unreachable host left out, a
fleet threshold from group_vars of web; every phase takes the settings from the hosts'
variables, and nothing outside the test's directory is written."""
import os
import re

import pytest

from fleethosts import make_fleet, run_playbook

NAMES = ['web%02d' % i for i in range(1, 25)]
EVEN = '203.0.113.45'        # 45 an hour on each of 24 hosts: 1080
LUMPY = '198.51.100.2'       # 300 on two hosts, 20 on the other 22: 1040
NEAR = '192.0.2.41'          # 41 on each: 984, under 1000
OWN = '198.51.100.99'        # blocked by web03's own run earlier


# The built-in defaults a run without the inventory's settings would use (issue 21).
DEFAULT_PATHS = ('/etc/ipblocklist.txt', '/etc/ipexcludedlist.txt', '/var/log/bot-detector.log',
                 '/etc/bot-detector/bot-detector.conf', '/var/lib/bot-detector')


def _stat(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@pytest.fixture(autouse=True)
def nothing_written_outside():
    """The defaults' files are as they were; the hosts' decoy lists are never created."""
    before = dict((path, _stat(path)) for path in DEFAULT_PATHS)
    yield
    assert dict((path, _stat(path)) for path in DEFAULT_PATHS) == before


def no_decoys(hosts):
    return [path for host in hosts.values() for path in host.decoys if os.path.exists(path)]


def recap(out):
    return dict((m.group(1), (int(m.group(2)), int(m.group(3)))) for m in re.finditer(
        r'^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)', out, re.M))


def spread(names):
    return dict((name, {EVEN: 45, LUMPY: 300 if i < 2 else 20, NEAR: 41, '203.0.113.%d' % (100 + i): 50})
                for i, name in enumerate(names))


def test_thin_spreads_are_blocked_on_every_host_and_the_near_miss_on_none(tmp_path):
    activity = {'web03': 'Sat Nov 21 01:00:00 UTC 2026 | IP addess %s added to the block list, RPH=1500\n' % OWN}
    inventory, hosts = make_fleet(str(tmp_path), spread(NAMES), NAMES, exclusions={'web05': [LUMPY]}, activity=activity,
                                  blocked={'web03': [OWN]})
    run, seconds = run_playbook(inventory, forks=8)
    print('fleet playbook, 24 local hosts: %.1f s' % seconds)
    assert run.returncode == 0, run.stdout[-3000:]
    # ceil(1000 / 24) = 42; EVEN and LUMPY; every host reported EVEN, so phase 2 counts LUMPY only.
    assert 'Threshold 1000, floor 42; candidates: 2, counted in phase 2: 1' in run.stdout
    for name, host in hosts.items():
        blocked = host.blocked()
        assert NEAR not in blocked and '203.0.113.100' not in blocked
        assert EVEN in blocked and OWN in blocked
        assert (LUMPY in blocked) == (name != 'web05')             # allow-listed on web05 only
        activity = host.read(host.activity_log)
        assert 'IP addess %s added to the block list, RPH=1080 (fleet)' % EVEN in activity
        if name != 'web05':
            assert 'IP addess %s added to the block list, RPH=1040 (fleet)' % LUMPY in activity
        if name != 'web03':
            assert 'IP addess %s added to the block list, RPH=1500 (sync)' % OWN in activity
    assert hosts['web01'].blocked()[0] == '192.0.2.1'                   # appended to, never rewritten
    assert all(changed == 1 and unreachable == 0 for changed, unreachable in recap(run.stdout).values())
    assert no_decoys(hosts) == []
    # The counting phases use bot_detector_info, not bot_detector's deprecated mode=report (issue 39).
    assert 'DEPRECATION' not in run.stdout and 'deprecated' not in run.stdout, run.stdout[-3000:]


def test_a_threshold_in_group_vars_of_web_applies_and_an_unreachable_host_is_left_out(tmp_path):
    names = NAMES + ['web25']
    inventory, hosts = make_fleet(str(tmp_path), spread(NAMES), names, group_vars={'bot_detector_fleet_threshold': 1050},
                                  unreachable=['web25'])
    run, seconds = run_playbook(inventory, forks=8)
    print('fleet playbook, 24 local hosts and an unreachable one: %.1f s' % seconds)
    assert run.returncode == 4, run.stdout[-3000:]          # ansible-playbook's status for unreachable hosts
    assert "Hosts reporting: 24; without a report: ['web25']" in run.stdout
    assert 'Threshold 1050, floor 42;' in run.stdout          # ceil(1050 / 25)
    assert recap(run.stdout)['web25'] == (0, 1)
    for name in NAMES:
        blocked = hosts[name].blocked()
        assert EVEN in blocked                                  # 1080 >= 1050
        assert LUMPY not in blocked and NEAR not in blocked      # 1040 and 984 < 1050
    assert hosts['web25'].blocked() == ['192.0.2.1']
    assert no_decoys(hosts) == []


def test_a_host_with_another_fleet_threshold_fails_naming_both_values(tmp_path):
    names = ['web1', 'web2', 'web3']
    inventory, hosts = make_fleet(str(tmp_path), dict((n, {EVEN: 400}) for n in names), names,
                                  host_vars={'web3': {'bot_detector_fleet_threshold': 2000}})
    run, seconds = run_playbook(inventory)
    assert run.returncode == 2, run.stdout[-3000:]
    assert ('bot_detector_fleet_threshold is 2000 on web3 but 1000 on the first web host: the fleet has one threshold, '
            'set it for the group web') in run.stdout
    assert "Hosts reporting: 2; without a report: ['web3']" in run.stdout
    assert EVEN not in hosts['web3'].blocked()          # 800 on the two others: under 1000, blocked nowhere
    assert EVEN not in hosts['web1'].blocked()
