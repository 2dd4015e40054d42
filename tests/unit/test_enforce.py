"""Enforcement's parts: which blocklist lines are entries (the class of input), the nft file
(checked by nft itself in a throwaway namespace), the nginx geo file, the metrics, the
settings."""
import ipaddress
import os
import random
import subprocess

import pytest

from conftest import run_core
from enforcement import Lab, require_tools
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting import metrics
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nftables, nginx
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

ENTRY = sync.parse_entry


@pytest.mark.parametrize('line, network', [
    (b'192.0.2.7', '192.0.2.7/32'),
    (b'  192.0.2.7\r', '192.0.2.7/32'),                 # blanks and CRLF around it
    (b'192.0.2.0/24', '192.0.2.0/24'),
    (b'192.0.2.7/24', '192.0.2.0/24'),                  # host bits set: cleared
    (b'192.0.2.7/32', '192.0.2.7/32'),
    (b'2001:db8::7', '2001:db8::7/128'),
    (b'2001:DB8:0::7', '2001:db8::7/128'),
    (b'2001:db8::/32', '2001:db8::/32'),
    (b'2001:db8::1/48', '2001:db8::/48'),
    (b'::ffff:192.0.2.7', '192.0.2.7/32'),             # IPv4-mapped: its IPv4 address
    (b'::FFFF:c000:0207', '192.0.2.7/32'),
    (b'::ffff:192.0.2.0/120', '192.0.2.0/24'),
    (b'255.255.255.255', '255.255.255.255/32'),
    (b'0.0.0.0/8', '0.0.0.0/8'),
    (b'::1', '::1/128'),
    (b'::ffff:0:0/80', '::/80'),                        # wider than ::ffff:0:0/96: stays IPv6
])
def test_entries(line, network):
    assert ENTRY(line) == ipaddress.ip_network(network)


@pytest.mark.parametrize('line', [
    b'not-an-address', b'192.0.2', b'192.0.2.256', b'192.0.2.7/33', b'192.0.2.7/', b'192.0.2.7/+8', b'192.0.2.7/08',
    b'010.0.0.1', b'192.0.2.7 # scraper', b'2001:db8::7/129', b'fe80::1%eth0', b'0.0.0.0', b'::', b'0.0.0.0/0',
    b'::/0', b'::ffff:0.0.0.0/96', b'2001:db8:::7', b'\xff\xfe', b'192.0.2.7,198.51.100.7', b'example.com',
])
def test_not_entries(line):
    assert ENTRY(line) is None


def test_entries_of_a_blocklist_collapse_and_name_the_junk_once():
    content = (b'# comment\n192.0.2.7\n192.0.2.7\n192.0.2.0/24\n192.0.2.9/32\n198.51.100.0/25\n198.51.100.128/25\n'
               b'\n2001:db8::/48\n2001:db8::1\n::ffff:203.0.113.5\r\nfoo\n\xffbar\nfoo\n203.0.113.0/24')
    entries = sync.parse_entries(content)
    assert entries.v4 == ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24']
    assert entries.v6 == ['2001:db8::/48']
    assert len(entries) == 4
    assert entries.skipped == ['foo', '\\xffbar', 'foo']
    assert entries.skipped_warning() == (
        "enforcement: 3 blocklist lines are not an address or network and not enforced: 'foo', '\\\\xffbar', 'foo'")
    many = sync.parse_entries(b''.join(b'junk%d\n' % i for i in range(25)))
    assert many.skipped_warning().endswith("'junk9' and 15 more")
    assert sync.parse_entries(b'').skipped_warning() is None and len(sync.parse_entries(b'')) == 0


def test_collapsed_entries_never_overlap_whatever_the_input():
    rng = random.Random(18)
    lines = []
    for dummy in range(3000):
        prefix = rng.choice([32, 32, 32, 28, 24, 16])
        lines.append(('10.%d.%d.%d/%d' % (rng.randrange(4), rng.randrange(256), rng.randrange(256), prefix)).encode())
    entries = sync.parse_entries(b'\n'.join(lines))
    covered = set(ipaddress.ip_network(l.decode(), strict=False) for l in lines)
    loaded = [ipaddress.ip_network(element) for element in entries.v4]
    for a, b in zip(loaded, loaded[1:]):
        assert a.broadcast_address < b.network_address           # sorted, disjoint, so auto-merge takes them
    assert sum(n.num_addresses for n in loaded) == len(set().union(*(set(range(int(n.network_address), int(
        n.broadcast_address) + 1)) for n in covered)))           # exactly the addresses listed, no more, no fewer


class Ports:
    enforcement_ports = [443, 80, 8080]


def test_the_nft_file_is_one_transaction_touching_only_its_table():
    entries = sync.parse_entries(b'192.0.2.7\n198.51.100.0/24\n2001:db8::/32\n2001:db8:1::1\n')
    text = nftables.ruleset(entries, [443, 80], 'ab' * 16)
    statements = text.splitlines()
    assert all(' inet bot_detector ' in s or s.endswith(' inet bot_detector') for s in statements)
    assert 'flush ruleset' not in statements
    # Only the input chain of earlier releases is deleted, declared first so the delete cannot fail.
    assert [s for s in statements if s.startswith('delete')] == ['delete chain inet bot_detector input']
    assert 'add chain inet bot_detector prerouting { type filter hook prerouting priority raw - 10; policy accept; }' in statements
    assert statements.index('flush set inet bot_detector blocked_v4') < statements.index(
        'add element inet bot_detector blocked_v4 { 198.51.100.0/24 }')
    assert 'add element inet bot_detector blocked_addr_v4 { 192.0.2.7 }' in statements      # single addresses: a hash set
    assert 'add element inet bot_detector blocked_v6 { 2001:db8::/32 }' in statements
    assert not any(s.startswith('add element inet bot_detector blocked_addr_v6') for s in statements)   # inside the /32
    assert 'th dport { 80, 443 } ip saddr @blocked_v4 drop comment "bot-detector %s 3"' % ('ab' * 16) in text
    assert 'th dport { 80, 443 } ip saddr @blocked_addr_v4 drop comment "bot-detector %s 3"' % ('ab' * 16) in text
    empty = nftables.ruleset(sync.parse_entries(b''), [80])
    assert 'add element' not in empty and 'flush set inet bot_detector blocked_v6' in empty


def test_the_digest_names_the_blocklist_the_backend_and_the_ports():
    digest = sync.digest_of
    nft = Settings(enforcement='nftables')
    assert digest(nft, b'192.0.2.7\n') == digest(Settings(enforcement='nftables', enforcement_ports=[443, 80]), b'192.0.2.7\n')
    assert digest(nft, b'192.0.2.7\n') != digest(Settings(enforcement='nftables', enforcement_ports=[80]), b'192.0.2.7\n')
    assert digest(nft, b'192.0.2.7\n') != digest(nft, b'192.0.2.8\n')
    assert digest(nft, b'192.0.2.7\n') != digest(Settings(enforcement='nginx'), b'192.0.2.7\n')


def test_nft_accepts_the_file_and_loads_it_twice_with_every_kind_of_entry(tmp_path):
    """nft itself, in a namespace of the test's: a large list with overlapping networks
    loads in one go, and again over itself (the sets flushed in the same transaction)."""
    require_tools('ip', 'nft')
    lab = Lab()
    try:
        rng = random.Random(7)
        lines = ['198.51.%d.%d/%d' % (rng.randrange(256), rng.randrange(256), rng.choice([32, 30, 24])) for dummy in range(20000)]
        lines += ['2001:db8:%x::%x' % (rng.randrange(65536), rng.randrange(65536)) for dummy in range(2000)]
        lines += ['2001:db8:1::/48', '::ffff:203.0.113.9', 'junk']
        entries = sync.parse_entries('\n'.join(lines).encode())
        for dummy in range(2):
            proc = subprocess.run(['ip', 'netns', 'exec', lab.server, 'nft', '-f', '-'], input=nftables.ruleset(
                entries, [80, 443], 'cd' * 16).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
            assert proc.returncode == 0, proc.stderr[:2000]
        listed = subprocess.run(['ip', 'netns', 'exec', lab.server, 'nft', '-t', 'list', 'table', 'inet', 'bot_detector'],
                                stdout=subprocess.PIPE, check=True).stdout.decode()
        assert 'comment "bot-detector %s %d"' % ('cd' * 16, len(entries)) in listed
    finally:
        lab.close()


def test_the_geo_file():
    entries = sync.parse_entries(b'192.0.2.7\n198.51.100.9/24\n2001:db8::/32\n::ffff:203.0.113.9\nfoo\n')
    assert nginx.render(entries).decode().splitlines() == [
        nginx.HEADER.decode().rstrip('\n'), '192.0.2.7 1;', '198.51.100.0/24 1;', '203.0.113.9 1;', '2001:db8::/32 1;']


def test_enforcement_metrics_this_sync_else_the_last_ones():
    on = Settings(enforcement='nftables')
    synced = {'backend': 'nftables', 'in_sync': True, 'entries': 12}
    assert metrics.enforcement_samples(on, synced, []) == [
        ('enforcement_in_sync', (('backend', 'nftables'),), 1), ('enforcement_entries', (('backend', 'nftables'),), 12)]
    old = metrics.parse(metrics.render(metrics.enforcement_samples(on, synced, [])))
    assert metrics.enforcement_samples(on, None, old) == old
    failed = dict(synced, in_sync=False, entries=None)
    assert metrics.enforcement_samples(on, failed, old) == [
        ('enforcement_in_sync', (('backend', 'nftables'),), 0), ('enforcement_entries', (('backend', 'nftables'),), 12)]
    assert metrics.enforcement_samples(Settings(), None, old) == []       # enforcement off: gone


def test_a_record_of_the_last_load_nested_deep_is_no_record(tmp_path):
    """The nftables record beside the lock, garbled into JSON nested deeper than Python's json
    reads (a RecursionError, no ValueError): no record, so a full load follows; never a sync, or a
    follower at every start, ended by the traceback."""
    (tmp_path / 'blocklist').write_text('192.0.2.9\n')
    settings = Settings(blocklist=str(tmp_path / 'blocklist'), enforcement='nftables')
    record = nftables.record_path(settings)
    try:
        with open(record, 'w') as handle:
            handle.write('[' * 100000 + ']' * 100000)
        assert nftables.loaded(settings) is None
        assert nftables.add(settings, b'192.0.2.9\n192.0.2.10\n', 'ab' * 16, sync._span) is None
    finally:
        os.unlink(record)


def test_settings_ports_and_choices(tmp_path):
    assert Settings().enforcement == 'none' and Settings().enforcement_ports == [80, 443]
    assert Settings(enforcement_ports=['8080', 443]).enforcement_ports == [8080, 443]
    for bad in ([0], [65536], ['http'], [True]):
        with pytest.raises(Exception) as caught:
            Settings(enforcement_ports=bad)
        assert 'enforcement_ports' in str(caught.value)
    bad = run_core(['--enforcement', 'iptables', '--enforce-now'])
    assert bad.returncode == 2 and b'--enforcement' in bad.stderr
    port = run_core(['--enforcement', 'nftables', '--enforcement-port', '99999', '--enforce-now'])
    assert port.returncode == 2 and b'--enforcement-port: must be a whole number from 1 to 65535' in port.stderr
    off = run_core(['--blocklist', tmp_path / 'b', '--enforce-now'])
    assert off.returncode == 2 and b'--enforce-now: setting enforcement is none' in off.stderr
    both = run_core(['--enforcement', 'nginx', '--enforce-now', tmp_path / 'log'])
    assert both.returncode == 2 and b'--enforce-now takes no LOG' in both.stderr
