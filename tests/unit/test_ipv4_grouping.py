"""--ipv4-prefix N (precise rules): IPv4 clients counted and blocked per /N network, as
--ipv6-prefix does for IPv6; the lists match networks as they do in precise mode."""
import pytest

import loggen
from conftest import in_timezone, mask_dates, mask_duration, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SPREAD = dict(('203.0.113.%d' % (10 + i), 150) for i in range(10))     # 1500 from one /24, 150 each


def write_log(tmp_path, previous):
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous=previous)))
    return log


def detect(files, log, *extra):
    return run_core(files.options() + ['--rules', 'precise', '--server-ip', '10.0.0.5', '--now', NOW] + list(extra) + [log])


def test_ten_addresses_of_one_slash_24_are_blocked_as_the_network(tmp_path, files):
    log = write_log(tmp_path, dict(SPREAD, **{'198.51.100.7': 999, '2001:db8:1:2::7': 600, '2001:db8:1:2::8': 600}))
    alone = detect(files, log, '--check')
    assert b'Would block' not in alone.stdout                  # 150 each: nobody alone reaches 1000
    got = detect(files, log, '--ipv4-prefix', '24', '--ipv6-prefix', '64')
    assert got.returncode == 0, got.stderr
    assert mask_duration(got.stdout).split(b'\n') == [
        b'Checking the previous hour...', b'Blocking IP address: 203.0.113.0/24 (1500 requests)',
        b'Blocking IP address: 2001:db8:1:2::/64 (1200 requests)', b'Checking the current hour...',
        b'Execution time: N seconds', b'']
    assert files.read('blocklist') == b'203.0.113.0/24\n2001:db8:1:2::/64\n'
    assert mask_dates(files.read('activity_log'))[0] == b'IP addess 203.0.113.0/24 added to the block list, RPH=1500'
    again = detect(files, log, '--ipv4-prefix', '24')
    assert b'IP address 203.0.113.0/24 is already blocked.' in again.stdout


@pytest.mark.parametrize('blocklist,exclusions,line', [
    (b'', b'203.0.113.12\n', b'IP address 203.0.113.0/24 is allow-listed and will not be blocked.'),
    (b'203.0.0.0/16\n', b'', b'IP address 203.0.113.0/24 is already blocked.'),
])
def test_lists_match_the_network(tmp_path, files, blocklist, exclusions, line):
    """An allow-listed address inside the network keeps the whole network off the list (the
    NAT trade-off: one good client protects its neighbours); a wider listed network holds it."""
    files.blocklist.write_bytes(blocklist)
    files.exclusions.write_bytes(exclusions)
    got = detect(files, write_log(tmp_path, SPREAD), '--ipv4-prefix', '24')
    assert line in got.stdout.split(b'\n')
    assert files.read('blocklist') == blocklist


def test_the_servers_own_network_is_never_examined(tmp_path, files):
    got = detect(files, write_log(tmp_path, dict(('10.0.0.%d' % (20 + i), 150) for i in range(10))), '--ipv4-prefix', '24')
    assert b'10.0.0.0/24' not in got.stdout and not files.blocklist.exists()


@pytest.mark.parametrize('args,fragment', [
    (['--rules', 'spec', '--ipv4-prefix', '24'], b'ipv4_prefix: IPv4 grouping needs the precise rules (rules: precise)'),
    (['--ipv4-prefix', '7'], b'--ipv4-prefix 7: must be a whole number from 8 to 32, got 7'),
    (['--ipv4-prefix', '33'], b'--ipv4-prefix 33: must be a whole number from 8 to 32, got 33'),
])
def test_bad_ipv4_prefix_exit_2(tmp_path, files, args, fragment):
    got = run_core(files.options() + ['--rules', 'precise', '--now', NOW] + args + [write_log(tmp_path, SPREAD)])
    assert got.returncode == 2 and got.stdout == b'' and fragment in got.stderr, got.stderr
