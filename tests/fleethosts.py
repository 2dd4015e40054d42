"""A fleet of `ansible_connection: local` web hosts for playbooks/fleet.yml, each with its
own access log, blocklist, exclusion list and activity log in a scratch directory, named
in the inventory only: shared by the end-to-end test and the playbook benchmark. No host has
its config file: every other host's bot_detector_config_file is missing, and the others'
is a decoy naming other lists (decoy-*), which the fleet must not read."""
import os
import subprocess
import sys
import time

import yaml

import loggen

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
# `make setup` links the checkout as .build/ansible_collections/jobboard/bot_detector.
sys.path.insert(0, os.path.join(ROOT, '.build'))

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.config import format_config

PLAYBOOK = os.path.join(ROOT, 'playbooks', 'fleet.yml')
HOST_PYTHON = '/usr/bin/python3'       # the hosts' interpreter (design.md)
SERVER_IP = '10.0.0.5'


class Host:
    """One web host's scratch files."""

    def __init__(self, base, name):
        self.name = name
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, 'access.log')
        self.blocklist = os.path.join(self.dir, 'ipblocklist.txt')
        self.exclusions = os.path.join(self.dir, 'ipexcludedlist.txt')
        self.activity_log = os.path.join(self.dir, 'bot-detector.log')
        self.config = os.path.join(self.dir, 'bot-detector.conf')
        self.state_dir = os.path.join(self.dir, 'state')
        os.makedirs(self.state_dir, mode=0o700)
        self.decoys = [os.path.join(self.dir, 'decoy-' + name) for name in ('blocklist', 'exclusions', 'activity')]

    def read(self, path):
        with open(path) as f:
            return f.read()

    def blocked(self):
        return self.read(self.blocklist).split('\n')[:-1] if os.path.exists(self.blocklist) else []


def make_fleet(base, current, names, group_vars=None, unreachable=(), exclusions=None, activity=None, host_vars=None,
               blocked=None):
    """Hosts ``names`` under ``base``, each host's log holding ``current[name]`` ({address:
    requests}) stamped now, in the current hour (a run crossing the hour's end still counts
    it, as the previous hour). ``unreachable`` hosts get an SSH address where nothing
    listens. ``activity`` and ``blocked``: a host's activity log and the addresses its
    blocklist holds after 192.0.2.1 (its own earlier blocks). Returns (inventory directory,
    {name: Host})."""
    hosts, inventory = {}, {}
    now = time.time()
    for name in names:
        host = hosts[name] = Host(base, name)
        with open(host.log, 'wb') as f:
            f.write(loggen.planted_log(now, current=current.get(name, {})))
        with open(host.blocklist, 'w') as f:
            f.write(''.join(a + '\n' for a in ['192.0.2.1'] + (blocked or {}).get(name, [])))
        with open(host.exclusions, 'w') as f:
            f.write(''.join(a + '\n' for a in (exclusions or {}).get(name, [])))
        with open(host.activity_log, 'w') as f:
            f.write((activity or {}).get(name, ''))
        if len(hosts) % 2 == 0:
            with open(host.config, 'w') as f:
                f.write(format_config({'blocklist': host.decoys[0], 'exclusions_file': host.decoys[1],
                                       'activity_log': host.decoys[2], 'server_ips': [SERVER_IP]}, header='# decoy'))
        inventory[name] = {'bot_detector_logs': [host.log], 'bot_detector_config_file': host.config,
                           'bot_detector_blocklist': host.blocklist, 'bot_detector_exclusions_file': host.exclusions,
                           'bot_detector_activity_log': host.activity_log, 'bot_detector_server_ips': [SERVER_IP],
                           'bot_detector_state_dir': host.state_dir}
        inventory[name].update((host_vars or {}).get(name, {}))
        if name in unreachable:
            inventory[name].update(ansible_connection='ssh', ansible_host='127.0.0.1', ansible_port=1,
                                   ansible_ssh_common_args='-o ConnectTimeout=5')
        else:
            inventory[name].update(ansible_connection='local', ansible_python_interpreter=HOST_PYTHON)
    directory = os.path.join(base, 'inventory')
    os.makedirs(os.path.join(directory, 'group_vars'))
    with open(os.path.join(directory, 'hosts.yml'), 'w') as f:
        yaml.safe_dump({'all': {'children': {'web': {'hosts': inventory}}}}, f)
    if group_vars:
        with open(os.path.join(directory, 'group_vars', 'web.yml'), 'w') as f:
            yaml.safe_dump(group_vars, f)
    return directory, hosts


def run_playbook(inventory, forks=None, extra=()):
    """ansible-playbook playbooks/fleet.yml on the inventory; returns (CompletedProcess, seconds)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default', ANSIBLE_HOST_KEY_CHECKING='False')
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory, PLAYBOOK]
    if forks:
        argv += ['-f', str(forks)]
    started = time.perf_counter()
    proc = subprocess.run(argv + list(extra), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc, time.perf_counter() - started
