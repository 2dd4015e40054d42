"""Verify nftables enforcement on the host: the deploy loaded the blocklist into the table
inet bot_detector, the boot unit is installed and enabled, and an unblock syncs the set."""
import ipaddress
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'plugins', 'module_utils'))
from bot_detector.enforce.sync import parse_entries  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://eweb1']


def elements(host, name):
    """What ``name`` blocks: its networks and the addresses of its twin hash set (blocked_addr_v4)."""
    found = []
    for each in (name, name.replace('blocked_', 'blocked_addr_')):
        out = host.check_output('nft -j list set inet bot_detector %s' % each)
        found += [item['set'] for item in json.loads(out)['nftables'] if 'set' in item][0].get('elem', [])
    return sorted(ipaddress.ip_network(e if isinstance(e, str) else '%s/%d' % (e['prefix']['addr'], e['prefix']['len']))
                  for e in found)


def expected(host):
    entries = parse_entries(host.file('/etc/ipblocklist.txt').content)
    return [sorted(ipaddress.ip_network(element) for element in elements) for elements in (entries.v4, entries.v6)]


def test_the_sets_equal_the_blocklist(host):
    v4, v6 = expected(host)
    assert [str(n) for n in v4] == ['192.0.2.50/32', '198.51.100.0/24', '203.0.113.9/32']
    assert elements(host, 'blocked_v4') == v4
    assert elements(host, 'blocked_v6') == v6 == [ipaddress.ip_network('2001:db8::/48')]
    rules = host.check_output('nft list chain inet bot_detector prerouting')
    assert 'th dport { 80, 443, 8443 } ip saddr @blocked_v4 drop' in rules


def test_the_boot_unit(host):
    unit = host.file('/etc/systemd/system/bot-detector-enforce.service')
    assert unit.contains('ExecStart=/usr/local/sbin/bot-detector.sh --enforce-now')
    assert unit.contains('After=nftables.service')
    assert host.file('/etc/systemd/system/multi-user.target.wants/bot-detector-enforce.service').linked_to == unit.path
    assert host.file('/usr/local/lib/bot-detector/bot_detector/enforce/nftables.py').exists


def test_enforce_now_restores_a_flushed_table_and_an_unblock_syncs(host):
    host.check_output('nft delete table inet bot_detector')
    assert host.run('/usr/local/sbin/bot-detector.sh --enforce-now').rc == 0
    assert elements(host, 'blocked_v4') == expected(host)[0]
    assert host.run('/usr/local/sbin/bot-detector.sh --unblock 192.0.2.50').rc == 0
    assert [str(n) for n in elements(host, 'blocked_v4')] == ['198.51.100.0/24', '203.0.113.9/32']
    metrics = host.file('/var/lib/node_exporter/textfile_collector/bot_detector.prom').content_string
    assert 'bot_detector_enforcement_in_sync{backend="nftables"} 1' in metrics
    assert 'bot_detector_enforcement_entries{backend="nftables"} 3' in metrics
