"""Enforcement through playbooks/fleet.yml: two `ansible_connection: local` web hosts, each
host's module runs in a network namespace of its own (its interpreter is `ip netns exec NS
python3`), with `bot_detector_enforcement: nftables` in the inventory (every phase of a fleet
run takes its settings from the hosts' variables, not their config files). A scraper with 600 requests on
each host, under the threshold on both, is blocked by the fleet's apply; each host's own
table then holds it."""
import json
import os
import stat

from enforcement import Lab, require_tools, sh, the_table
from fleethosts import HOST_PYTHON, make_fleet, run_playbook

SCRAPER = '203.0.113.45'
NAMES = ['web01', 'web02']


def elements(namespace):
    """The IPv4 elements blocked: single addresses (blocked_addr_v4) and networks (blocked_v4)."""
    found = []
    for name in ('blocked_addr_v4', 'blocked_v4'):
        out = sh('ip', 'netns', 'exec', namespace, 'nft', '-j', 'list', 'set', *the_table(namespace), name).stdout
        found += [item['set'] for item in json.loads(out)['nftables'] if 'set' in item][0].get('elem', [])
    return found


def test_the_fleet_apply_loads_each_hosts_table(tmp_path):
    require_tools('ip', 'nft')
    labs = []
    try:
        inventory, hosts = make_fleet(str(tmp_path), dict((name, {SCRAPER: 600}) for name in NAMES), NAMES,
                                      group_vars={'bot_detector_enforcement': 'nftables'})
        with open(os.path.join(inventory, 'hosts.yml')) as f:
            text = f.read()
        for name, host in hosts.items():
            lab = Lab()
            labs.append(lab)
            interpreter = os.path.join(str(tmp_path), name + '-python')
            with open(interpreter, 'w') as f:
                f.write('#!/bin/sh\nexec ip netns exec %s %s "$@"\n' % (lab.server, HOST_PYTHON))
            os.chmod(interpreter, stat.S_IRWXU)
            text = text.replace('ansible_python_interpreter: %s\n' % HOST_PYTHON,
                                'ansible_python_interpreter: %s\n' % interpreter, 1)
        with open(os.path.join(inventory, 'hosts.yml'), 'w') as f:
            f.write(text)
        assert text.count('-python\n') == 2
        run, dummy = run_playbook(inventory)
        assert run.returncode == 0, run.stdout[-3000:]
        for lab, host in zip(labs, hosts.values()):
            assert SCRAPER in host.blocked()
            assert sorted(elements(lab.server)) == ['192.0.2.1', SCRAPER]
    finally:
        for lab in labs:
            lab.close()
