"""playbooks/fleet.yml with the campaign profile (issue 45 §6), run by real ansible-playbook on
three `ansible_connection: local` web hosts (tests/fleethosts.py): a network's requests spread
over the hosts (100 + 70 + 30 from 12 addresses: 200, the network's threshold, which no host
reaches) are challenged on every host, never blocked; a network whose distinct addresses are
15 across the hosts (a union: the same addresses on two hosts count once) is not; and without
the profile nothing of it is reported or decided."""
import os

from fleethosts import make_fleet, run_playbook

NAMES = ['web1', 'web2', 'web3']


def current():
    """{host: {address: requests}}: 203.0.113.0/24 spread (200 in all, 12 addresses); 198.51.100.1-10
    on web1 and .6-.15 on web2, one request each (15 distinct, 20 requests)."""
    spread = {'web1': dict(('203.0.113.%d' % i, 20) for i in range(1, 6)),
              'web2': dict(('203.0.113.%d' % i, 14) for i in range(6, 11)),
              'web3': dict(('203.0.113.%d' % i, 15) for i in range(11, 13))}
    spread['web1'].update(('198.51.100.%d' % i, 1) for i in range(1, 11))
    spread['web2'].update(('198.51.100.%d' % i, 1) for i in range(6, 16))
    return spread


def listed(path):
    with open(path) as handle:
        return handle.read().split()


def test_a_campaign_network_spread_over_the_hosts_is_challenged_on_every_host(tmp_path):
    host_vars = dict((name, {'bot_detector_challenge_list': os.path.join(str(tmp_path), name, 'challenge.txt'),
                             'bot_detector_answer_dir': os.path.join(str(tmp_path), name, 'answers')}) for name in NAMES)
    inventory, hosts = make_fleet(str(tmp_path), current(), NAMES, group_vars={'bot_detector_campaigns': True},
                                  host_vars=host_vars)
    run, dummy = run_playbook(inventory)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "'address': '203.0.113.0/24', 'count': 200" in run.stdout, run.stdout[-3000:]
    for name in NAMES:
        assert listed(host_vars[name]['bot_detector_challenge_list']) == ['203.0.113.0/24'], name
        assert hosts[name].blocked() == ['192.0.2.1'], name         # its own earlier block only
        assert 'RPH=200, network 203.0.113.0/24, 12 addresses fleet-wide' in hosts[name].read(hosts[name].activity_log)


def test_without_the_profile_no_campaign_key_is_summed(tmp_path):
    inventory, hosts = make_fleet(str(tmp_path), current(), NAMES)
    run, dummy = run_playbook(inventory)
    assert run.returncode == 0, run.stdout[-3000:]
    assert 'Campaign networks challenged: []' in run.stdout, run.stdout[-3000:]
    assert all(hosts[name].blocked() == ['192.0.2.1'] for name in NAMES)
