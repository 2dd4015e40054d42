"""An IPv4-mapped IPv6 address (``::ffff:192.0.2.20``, as a dual-stack nginx logs an IPv4
client) is its IPv4 address for the allow-list and the server addresses, in both rule sets
(issue 38, item 2): the enforcement maps it to the IPv4 address, so blocking it would drop an
allow-listed client or the server itself. Everything else about it stays the reference's."""
import pytest

import loggen
from conftest import run_core, run_reference

NOW = '2025-11-21 04:13:43'
NOW_EPOCH = 1763698423
SPELLINGS = ['::ffff:%s', '::FFFF:%s', '0:0:0:0:0:ffff:%s']


@pytest.mark.parametrize('rules', ['spec', 'precise'])
@pytest.mark.parametrize('spelling', SPELLINGS)
def test_a_mapped_address_is_its_ipv4_address_for_the_allow_list_and_the_servers(tmp_path, files, rules, spelling):
    allowed, server, scraper = spelling % '192.0.2.20', spelling % '192.0.2.1', '203.0.113.7'
    log = tmp_path / 'access.log'
    counts = {allowed: 1200, server: 1300, scraper: 1100, spelling % '198.51.100.4': 1050}
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous=counts))
    files.exclusions.write_bytes(b'192.0.2.20\n')
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '192.0.2.1', '--server-ip', '10.0.0.5', '--rules', rules,
                                      log])
    assert got.returncode == 0, got.stderr
    listed = (files.read('blocklist') or b'').split()
    # The allow-listed client and the server are spared; a mapped address on neither list is
    # blocked, as logged by the spec's rules, as its IPv4 address by the precise ones (as ever).
    other = spelling % '198.51.100.4' if rules == 'spec' else '198.51.100.4'
    assert sorted(listed) == sorted([scraper.encode(), other.encode()]), got.stdout
    shown = allowed if rules == 'spec' else '192.0.2.20'
    assert ('IP address %s is allow-listed and will not be blocked.' % shown).encode() in got.stdout
    assert b'192.0.2.1 ' not in got.stdout and b'192.0.2.1\n' not in got.stdout


def test_for_other_input_the_run_is_the_references(tmp_path, files):
    """Where the lists and the servers hold no mapped address's IPv4 form, nothing changes:
    the same output, blocklist and activity lines as the reference pipeline."""
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'::ffff:198.51.100.4': 1050, '203.0.113.7': 1100},
                                       current={'::ffff:198.51.100.5': 1001}))
    files.exclusions.write_bytes(b'192.0.2.20\n')
    reference = tmp_path / 'reference'
    reference.mkdir()
    ref_files = [reference / 'blocklist', reference / 'exclusions', reference / 'activity']
    ref_files[1].write_bytes(b'192.0.2.20\n')
    ref = run_reference(log, *ref_files, server_ips=['10.0.0.5'], now=NOW)
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', log])
    assert got.returncode == ref.returncode == 0
    assert without_duration(got.stdout) == without_duration(ref.stdout)
    assert files.read('blocklist') == ref_files[0].read_bytes()


def without_duration(stdout):
    return [line for line in stdout.split(b'\n') if not line.startswith(b'Execution time')]
