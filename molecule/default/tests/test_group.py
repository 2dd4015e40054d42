"""Tests on the whole group, after test_default.py: the ad-hoc module run, a wrongly
typed variable, a core changed on a host put right, the unblock playbook, and state absent
(with and without the state kept)."""
import json
import os
import re

import testinfra

from helpers import CORE, ROOT, ansible_run, container_now, get, loggen, put

testinfra_hosts = ['podman://web1']
HOSTS = dict((name, testinfra.get_host('podman://' + name)) for name in ('web1', 'web2'))


def test_ad_hoc_module_run_applies_the_deployed_settings():
    """Given only the log, an ad-hoc run takes each host's deployed settings from its config
    file: web2's threshold (1150) and the group's server address (10.0.0.5, never examined)."""
    plants = {'web1': '203.0.113.21', 'web2': '203.0.113.22'}
    for name, address in plants.items():
        put(HOSTS[name], '/var/log/nginx/adhoc.log',
            loggen.planted_log(container_now(HOSTS[name]), current={address: 1100, '10.0.0.5': 5000}))
    run = ansible_run(['ansible', 'web', '-m', 'jobboard.bot_detector.bot_detector', '-a',
                       json.dumps({'log': '/var/log/nginx/adhoc.log'})])
    assert run.returncode == 0, run.stderr
    hosts = json.loads(run.stdout)['plays'][0]['tasks'][0]['hosts']
    assert hosts['web1']['changed'] is True
    assert hosts['web1']['blocked'] == [{'address': plants['web1'], 'count': 1100, 'window': 'current'}]
    assert hosts['web2']['changed'] is False and hosts['web2']['blocked'] == []
    for name in plants:
        records = [r['address'] for w in hosts[name]['windows'] for r in w['records']]
        assert '10.0.0.5' not in records and plants[name] in records
    assert get(HOSTS['web1'], '/etc/ipblocklist.txt').endswith(plants['web1'].encode() + b'\n')
    assert plants['web2'].encode() not in get(HOSTS['web2'], '/etc/ipblocklist.txt')


def test_wrongly_typed_variable_fails_before_any_change(host):
    before = get(host, '/etc/cron.d/bot-detector')
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'molecule', 'default', 'converge.yml'),
                       '--limit', 'web1', '-e', '{"bot_detector_threshold": "many", "bot_detector_cron_minute": "*/1"}'])
    assert run.returncode != 0
    out = run.stdout.decode()
    assert "bot_detector_threshold" in out and 'unable to convert to int' in out, out
    assert get(host, '/etc/cron.d/bot-detector') == before


def test_a_deploy_puts_right_a_changed_core_and_removes_what_the_collection_no_longer_has(host):
    """The deploy copies only the core files that differ (one checksum look per host): a file
    edited on the host, one whose mode changed, one the collection does not have and one of
    the flat layout before the stages (an upgraded host's) are all put right, and nothing else
    is copied."""
    lib = '/usr/local/lib/bot-detector/bot_detector/'
    host.check_output('echo "# edited on the host" >> %sdecision/rules.py && chmod 0600 %sbase/text.py && echo "x = 1" > %sstale.py'
                      ' && echo "x = 1" > %stally.py' % (lib, lib, lib, lib))
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'molecule', 'default', 'converge.yml'), '--limit', 'web1'],
                      callback='ansible.builtin.default')
    out = run.stdout.decode()
    assert run.returncode == 0, out[-3000:]
    for name in ('decision/rules.py', 'base/text.py'):
        with open(os.path.join(CORE, name), 'rb') as source:
            assert get(host, lib + name) == source.read(), name
        assert host.file(lib + name).mode == 0o644
    assert not host.file(lib + 'stale.py').exists and not host.file(lib + 'tally.py').exists
    # Exactly those: two files copied, two removed, nothing else changed.
    changed = set(re.findall(r'^changed: \[web1\] => \(item=(\S+)\)', out, re.M))
    assert changed == {'decision/rules.py', 'base/text.py', 'stale.py', 'tally.py'}, out
    assert re.search(r'^web1\s+: ok=\d+\s+changed=2\s', out, re.M), out[-2000:]      # two tasks: the copies, the removal


def test_unblock_playbook_on_the_web_hosts():
    """playbooks/unblock.yml removes an address from every host's blocklist and, asked to,
    allow-lists it there; the hosts' other lines, owner and mode stay."""
    for host in HOSTS.values():
        put(host, '/etc/ipblocklist.txt', get(host, '/etc/ipblocklist.txt') + b'203.0.113.251\n')
    before = dict((name, get(host, '/etc/ipblocklist.txt')) for name, host in HOSTS.items())
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'playbooks', 'unblock.yml'), '-e',
                       '{"bot_detector_unblock": ["203.0.113.251"], "bot_detector_unblock_allow": true}'],
                      callback='ansible.builtin.default')
    assert run.returncode == 0, run.stdout.decode()[-3000:]
    for name, host in HOSTS.items():
        assert get(host, '/etc/ipblocklist.txt') == before[name][:-len(b'203.0.113.251\n')]
        assert get(host, '/etc/ipexcludedlist.txt').endswith(b'\n203.0.113.251\n')
        assert host.file('/etc/ipblocklist.txt').mode == 0o600
        assert get(host, '/var/log/bot-detector.log').endswith(b'IP addess 203.0.113.251 removed from the block list (unblock)\n')


def test_state_absent_keeps_operators_data():
    host = HOSTS['web2']
    data = dict((p, get(host, p)) for p in ('/etc/ipblocklist.txt', '/etc/ipexcludedlist.txt', '/var/log/bot-detector.log'))
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'molecule', 'default', 'converge.yml'),
                       '--limit', 'web2', '-e', 'bot_detector_state=absent'])
    assert run.returncode == 0, run.stdout
    for gone in ('/etc/cron.d/bot-detector', '/usr/local/sbin/bot-detector.sh', '/usr/local/lib/bot-detector',
                 '/etc/logrotate.d/bot-detector', '/etc/bot-detector',
                 '/var/lib/node_exporter/textfile_collector/bot_detector.prom', '/var/lib/bot-detector'):
        assert not host.file(gone).exists, gone
    for path, content in data.items():
        assert get(host, path) == content


def test_state_absent_can_keep_the_state_directory():
    host = HOSTS['web1']
    put(host, '/var/lib/bot-detector/kept', b'counts\n')
    run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'molecule', 'default', 'converge.yml'), '--limit', 'web1',
                       '-e', '{"bot_detector_state": "absent", "bot_detector_absent_keep_state": true}'])
    assert run.returncode == 0, run.stdout
    assert not host.file('/etc/cron.d/bot-detector').exists and not host.file('/usr/local/lib/bot-detector').exists
    assert get(host, '/var/lib/bot-detector/kept') == b'counts\n'
