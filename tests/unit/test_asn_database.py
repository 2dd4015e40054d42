"""Autonomous systems from an offline database (issue 45, asn_database): an ip2asn TSV file
and a MaxMind-format database written here (the latter with mmdb-writer, read by the command
through Debian's python3-maxminddb), judged the same; hostile files refused with one line,
exit status 2, nothing written."""
import json
import os

import pytest

from conftest import run_core
from test_campaigns import NOW, browser, scraper

ASES = [  # (first, last, AS, name): seekers' ISP, a proxy network's AS, a cloud with IPv6
    ('10.0.0.0', '10.31.255.255', 64500, 'RESIDENTIAL-ISP'),
    ('10.128.0.0', '10.143.255.255', 65536, 'ELSEWHERE'),
    ('10.144.0.0', '10.159.255.255', 65537, 'ELSEWHERE-TOO'),
    ('2001:db8:ffff::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 64511, 'CLOUD'),
]
NETWORKS = {64500: ['10.0.0.0/11'], 65536: ['10.128.0.0/12'], 65537: ['10.144.0.0/12'], 64511: ['2001:db8:ffff::/48']}


def write_tsv(path):
    path.write_text(''.join('%s\t%s\t%d\tDE\t%s\n' % row for row in ASES))
    return path


def write_mmdb(path, record=lambda number, name: {'autonomous_system_number': number, 'autonomous_system_organization': name},
               ip_version=6):
    from mmdb_writer import MMDBWriter
    from netaddr import IPSet
    writer = MMDBWriter(ip_version=ip_version, database_type='GeoLite2-ASN', languages=['en'], description='test',
                        ipv4_compatible=ip_version == 6)
    for first, last, number, name in ASES:
        networks = [network for network in NETWORKS[number] if ip_version == 6 or ':' not in network]
        if networks:
            writer.insert_network(IPSet(networks), record(number, name))
    writer.to_db_file(str(path))
    return path


DATABASES = {'tsv': lambda tmp: write_tsv(tmp / 'ip2asn.tsv'), 'mmdb': lambda tmp: write_mmdb(tmp / 'asn.mmdb')}


def campaign(proxies):
    """``proxies`` addresses of AS65536 (one job page each, one /24 each: no network reaches its
    thresholds), as many in the seekers' ISP, and job seekers there."""
    text = ''.join(scraper('10.128.%d.9' % i, 1) for i in range(proxies))
    text += ''.join(scraper('10.1.%d.9' % i, 1) for i in range(proxies))
    return text + ''.join(browser('10.2.%d.7' % i, 2) for i in range(30))


def detect(tmp_path, files, text, database, *extra):
    log = tmp_path / 'access.log'
    log.write_text(text)
    return run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', NOW, '--campaigns', '--json',
                                       '--asn-database', database] + list(extra) + [log])


@pytest.mark.parametrize('kind', sorted(DATABASES))
@pytest.mark.parametrize('proxies', [20, 19])
def test_an_as_gets_its_ranges_without_seekers_challenged_never_blocked(tmp_path, files, kind, proxies):
    got = detect(tmp_path, files, campaign(proxies), DATABASES[kind](tmp_path))
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    # The seekers' ISP carried as many proxy addresses: its range is never listed whole, only
    # the /24s that carried them and no job seeker.
    expected = [('10.1.%d.0/24' % i, 1, 'AS64500 RESIDENTIAL-ISP, 20 addresses, 1 in network 10.1.%d.0/24, no job '
                 'seekers there, though range 10.0.0.0-10.31.255.255 carries some' % i) for i in range(20)]
    expected.append(('10.128.0.0/12', proxies, 'AS65536 ELSEWHERE, 20 addresses, 20 in range 10.128.0.0-10.143.255.255, '
                     'no job seekers there'))
    assert sorted((e['address'], e['count'], e['reason']) for e in result['challenged']) == (
        sorted(expected) if proxies == 20 else [])
    assert result['blocked'] == [] and files.read('blocklist') is None


@pytest.mark.parametrize('kind', sorted(DATABASES))
def test_in_a_range_with_job_seekers_only_the_networks_without_them_are_challenged(tmp_path, files, kind):
    """A proxy campaign's exits in the seekers' own ISP: its /24s (IPv4) and /64s (IPv6) without
    a job seeker's address are challenged, a /24 or /64 where a job seeker browsed never, nor
    the range (the ISP's /11)."""
    text = ''.join(scraper('10.1.%d.9' % i, 1) for i in range(19))
    text += scraper('10.2.0.9', 1) + browser('10.2.0.7', 2)                # a seeker's /24
    text += scraper('2001:db8:1000:5::9', 1) + browser('2001:db8:1000:5::7', 2)  # a seeker's /64
    text += ''.join(browser('10.3.%d.7' % i, 2) for i in range(30))
    database = tmp_path / 'ip2asn.tsv'
    database.write_text('10.0.0.0\t10.31.255.255\t64500\tDE\tRESIDENTIAL-ISP\n'
                        '2001:db8:1000::\t2001:db8:1000:ffff:ffff:ffff:ffff:ffff\t64500\tDE\tRESIDENTIAL-ISP\n')
    if kind == 'mmdb':
        from mmdb_writer import MMDBWriter
        from netaddr import IPSet
        writer = MMDBWriter(ip_version=6, database_type='GeoLite2-ASN', languages=['en'], description='test',
                            ipv4_compatible=True)
        writer.insert_network(IPSet(['10.0.0.0/11', '2001:db8:1000::/48']), {
            'autonomous_system_number': 64500, 'autonomous_system_organization': 'RESIDENTIAL-ISP'})
        database = tmp_path / 'asn.mmdb'
        writer.to_db_file(str(database))
    result = json.loads(detect(tmp_path, files, text, database).stdout)
    listed = sorted(e['address'] for e in result['challenged'])
    assert listed == sorted('10.1.%d.0/24' % i for i in range(19)), listed
    assert result['blocked'] == [] and files.read('blocklist') is None


@pytest.mark.parametrize('kind', sorted(DATABASES))
def test_ipv6_ranges_by_either_format(tmp_path, files, kind):
    text = ''.join(scraper('2001:db8:ffff:%x::1' % i, 15) for i in range(1, 21))
    result = json.loads(detect(tmp_path, files, text, DATABASES[kind](tmp_path), '--campaign-ipv6-prefix', '64').stdout)
    assert [e['address'] for e in result['challenged']] == ['2001:db8:ffff::/48']


def hostile(tmp_path):
    good = write_tsv(tmp_path / 'good.tsv').read_bytes()
    mmdb = write_mmdb(tmp_path / 'good.mmdb').read_bytes()
    cases = {
        'truncated': (good[:len(good) // 2], 'truncated'),
        'a missing field': (good.replace(b'\tDE', b''), 'line 1 is not range_start range_end AS_number'),
        'unsorted': (b''.join(reversed(good.splitlines(True))), 'ranges must be sorted and apart'),
        'not a database': (b'\x89PNG\r\n\x1a\n' + b'\0' * 64, 'not an ip2asn TSV file or a MaxMind database'),
        'text': (b'hello\n', 'line 1 is not range_start range_end AS_number'),
        # Its metadata whole, its tree cut: found at the first lookup, still before any list is read.
        'an mmdb cut short': (mmdb[:200] + mmdb[-300:], 'damaged ('),
        'empty': (b'', 'empty'),
        'an octal address': (b'010.0.0.0\t010.0.0.255\t5\tUS\tOCTAL\n', 'line 1 is not range_start range_end AS_number'),
        'text after an address': (b'1.0.0.0 junk\t1.0.0.255\t5\tUS\tX\n', 'line 1 is not range_start range_end AS_number'),
        'no AS but 0': (b'1.0.0.0\t1.0.0.255\t0\tNone\tNot routed\n', 'no range of an AS'),
        # Well-formed files whose values are not the format's types (a forged database)
        'an AS number as text': (write_mmdb(tmp_path / 'text.mmdb', lambda number, name: {
            'autonomous_system_number': 'AS%d' % number, 'autonomous_system_organization': name}).read_bytes(), 'damaged ('),
        'a name as a number': (write_mmdb(tmp_path / 'number.mmdb', lambda number, name: {
            'autonomous_system_number': number, 'autonomous_system_organization': 12345}).read_bytes(), 'damaged ('),
    }
    for name, (data, fragment) in sorted(cases.items()):
        path = tmp_path / name.replace(' ', '-')
        path.write_bytes(data)
        yield name, path, fragment
    huge = tmp_path / 'huge'
    with open(str(huge), 'wb') as out:
        out.truncate(300 * 1024 * 1024)     # sparse: no disk used
    yield 'huge', huge, 'larger than 256 MiB'
    link = tmp_path / 'link.tsv'
    os.symlink(str(tmp_path / 'good.tsv'), str(link))
    yield 'a symlink', link, 'a symbolic link'
    yield 'a directory', tmp_path, 'not a regular file'
    yield 'missing', tmp_path / 'absent.tsv', 'No such file or directory'


def test_a_hostile_database_is_one_clear_error_and_nothing_is_written(tmp_path, files):
    text = scraper('192.0.2.10', 1000) + campaign(20)
    for name, path, fragment in hostile(tmp_path):
        got = detect(tmp_path, files, text, path)
        assert got.returncode == 2, (name, got.stderr)
        assert got.stderr.decode().count('\n') == 1 and 'asn_database: %s: ' % path in got.stderr.decode(), name
        assert fragment in got.stderr.decode(), (name, got.stderr)
        assert got.stdout == b'', name
        assert files.read('blocklist') is None and files.read('activity_log') is None, name


def test_an_as_database_needs_the_profile(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_text('')
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--asn-database', write_tsv(tmp_path / 'a.tsv'), log])
    assert got.returncode == 2 and b'asn_database: needs the campaign profile' in got.stderr


def test_the_column_passes_read_a_file_as_the_row_by_row_reading(tmp_path):
    """Ip2asn reads a well-formed file a column at a time (its speed), and falls back to a row
    at a time to name a bad line: both give the same arrays, across several blocks."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import asn
    octets = [(10 + i // 65536, i // 256 % 256, i % 256) for i in range(70000)]
    lines = ['%d.%d.%d.0\t%d.%d.%d.255\t%d\tUS\tAS %d\n' % (a + b + (i % 7, i % 7)) for i, (a, b) in
             enumerate(zip(octets, octets))]
    lines += ['2001:db8:%x::\t2001:db8:%x:ffff:ffff:ffff:ffff:ffff\t%d\tDE\tV6\n' % (i, i, 64500 + i % 3) for i in range(3000)]
    data = ''.join(lines).encode()
    assert len(data) > 2 * asn.BLOCK
    fast = asn.Ip2asn('x', data)
    slow = asn.Ip2asn.__new__(asn.Ip2asn)
    slow._rows('x', data)
    assert fast.v4 == slow.v4 and fast.v6 == slow.v6 and len(fast.v4[0]) == 60000 and len(fast.v6[0]) == 3000
    assert fast.lookup_number(4, (10 << 24) + (1 << 8) + 9) == (1, (4, (10 << 24) + 256, (10 << 24) + 511))
    assert fast.lookup_number(4, 10 << 24) is None       # AS 0: not routed


def test_an_as_is_named_by_its_first_row_read_when_a_decision_names_it(tmp_path):
    """The descriptions are not held a row each: read from the opened file by AS number, the
    number matched as the whole third field (not inside a longer one), UTF-8 kept as it is."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import asn
    path = tmp_path / 'ip2asn.tsv'
    path.write_bytes('10.0.0.0\t10.0.0.255\t164500\tDE\tLONGER\n'
                     '10.0.1.0\t10.0.1.255\t64500\tDE\tMünchner Netz\n'
                     '10.0.2.0\t10.0.2.255\t64500\tDE\tRENAMED\n'
                     '10.0.3.0\t10.0.3.255\t0\tNone\tNot routed\n'.encode('utf-8'))
    database = asn.open_database(str(path))
    path.unlink()       # the file the arrays were read from, still
    assert database.names.get(64500, '') == 'Münchner Netz'.encode('utf-8')
    assert database.names.get(164500, '') == b'LONGER'
    assert database.names.get(64501, '') == ''
    assert database.lookup_number(4, (10 << 24) + 256 + 9) == (64500, (4, (10 << 24) + 256, (10 << 24) + 511))


def test_a_judgements_lookups_at_once_answer_as_one_at_a_time(tmp_path):
    """lookup_numbers (a judgement's thousands of addresses at once) against lookup_number, on
    every range's edges, between ranges, before the first and after the last, IPv4 and IPv6."""
    import ipaddress
    import random
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import asn
    database = asn.open_database(str(write_tsv(tmp_path / 'ip2asn.tsv')))
    rng = random.Random(45)
    pairs = [(4, 0), (4, 2 ** 32 - 1), (6, 1), (6, 2 ** 128 - 1)]
    for first, last, number, name in ASES:
        version = 6 if ':' in first else 4
        low, high = (int(ipaddress.ip_address(text)) for text in (first, last))
        pairs += [(version, low - 1), (version, low), (version, high), (version, high + 1)]
        pairs += [(version, rng.randint(low, high)) for dummy in range(20)]
    pairs += [(4, rng.randrange(2 ** 32)) for dummy in range(200)] + [(6, rng.randrange(2 ** 128)) for dummy in range(50)]
    found = database.lookup_numbers(pairs + pairs[:10])
    assert found == dict((pair, database.lookup_number(*pair)) for pair in pairs)
    assert sum(1 for answer in found.values() if answer is not None) > 80


@pytest.mark.parametrize('kind', sorted(DATABASES))
@pytest.mark.parametrize('proxies', [5, 4])
def test_a_hosting_as_is_judged_on_its_lowered_thresholds(tmp_path, files, kind, proxies):
    """AS65536 named a hosting AS: its thresholds divided by 4 (300 requests, 20 addresses:
    75 and 5); AS64500, as many addresses, is not one: nothing."""
    got = detect(tmp_path, files, campaign(proxies), DATABASES[kind](tmp_path), '--hosting-asn', '65536')
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    expected = [('10.128.0.0/12', 5, 'AS65536 ELSEWHERE (hosting), 5 addresses, 5 in range 10.128.0.0-10.143.255.255, '
                 'no job seekers there')] if proxies == 5 else []
    assert [(e['address'], e['count'], e['reason']) for e in result['challenged']] == expected
    assert result['blocked'] == []


@pytest.mark.parametrize('addresses', [4, 3])
def test_a_network_all_in_hosting_ases_is_judged_on_its_lowered_thresholds(tmp_path, files, addresses):
    """16 distinct addresses a network, divided by 4 for one all of whose addresses are in a
    hosting AS (AS65536's 10.128.7.0/24); the same in AS65537, not named: nothing."""
    text = ''.join(scraper('10.128.7.%d' % i, 1) + scraper('10.144.7.%d' % i, 1) for i in range(1, addresses + 1))
    got = detect(tmp_path, files, text, DATABASES['tsv'](tmp_path), '--hosting-asn', '65536', '--hosting-asn', '64511')
    assert got.returncode == 0, got.stderr
    expected = [('10.128.7.0/24', 4, 'network 10.128.7.0/24, 4 addresses, a hosting AS')] if addresses == 4 else []
    assert [(e['address'], e['count'], e['reason']) for e in json.loads(got.stdout)['challenged']] == expected


@pytest.mark.parametrize('extra,fragment', [
    (['--campaigns'], b'hosting_asns: needs an AS database (asn_database)'),
    ([], b'hosting_asns: needs the campaign profile'),
    (['--campaigns', '--asn-database', 'DB', '--hosting-asn', '0'], b'hosting-asn'),
    (['--campaigns', '--asn-database', 'DB', '--hosting-asn', 'AS65536'], b'hosting-asn'),
])
def test_hosting_ases_need_the_profile_and_a_database_and_are_as_numbers(tmp_path, files, extra, fragment):
    log = tmp_path / 'access.log'
    log.write_text('')
    extra = [str(write_tsv(tmp_path / 'ip2asn.tsv')) if item == 'DB' else item for item in extra]
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--hosting-asn', '65536'] + extra + [log])
    assert got.returncode == 2 and fragment in got.stderr, got.stderr
    assert files.read('blocklist') is None


def test_a_seekers_range_narrower_than_a_network_is_challenged_only_within_itself(tmp_path, files):
    """An AS's range that carried job seekers, not aligned on the networks' length (a /25 and a
    /25 of the next /24): the networks of the campaign's addresses are cut to the range, never
    reaching into the next AS's addresses (network thresholds raised: the AS rule alone)."""
    database = tmp_path / 'ip2asn.tsv'
    database.write_text('10.1.5.0\t10.1.5.127\t64999\tDE\tOTHER-NET\n10.1.5.128\t10.1.6.127\t64500\tDE\tRESIDENTIAL-ISP\n')
    text = ''.join(scraper('10.1.5.%d' % i, 1) for i in range(130, 150)) + browser('10.1.6.50', 2)
    got = detect(tmp_path, files, text, database, '--campaign-network-addresses', '100', '--campaign-network-threshold', '10000')
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    assert sorted((e['address'], e['count'], e['reason']) for e in result['challenged']) == [
        ('10.1.5.128/25', 20, 'AS64500 RESIDENTIAL-ISP, 20 addresses, 20 in network 10.1.5.128/25, no job seekers there, '
         'though range 10.1.5.128-10.1.6.127 carries some')]


@pytest.mark.parametrize('in_first', [5, 0])
def test_each_network_a_range_is_cut_into_counts_its_own_addresses(tmp_path, files, in_first):
    """A range starting inside a /24 (10.1.5.64) cuts that /24 into a /26 and a /25: each piece
    listed says its own campaign addresses and requests, and a piece the campaign did not come
    from is not listed (each had the sums of both, however many it held)."""
    database = tmp_path / 'ip2asn.tsv'
    database.write_text('10.1.5.0\t10.1.5.63\t64999\tDE\tOTHER-NET\n10.1.5.64\t10.1.6.127\t64500\tDE\tRESIDENTIAL-ISP\n')
    addresses = ['10.1.5.%d' % i for i in range(70, 70 + in_first)] + ['10.1.5.%d' % i for i in range(130, 150 - in_first)]
    text = ''.join(scraper(address, 1) for address in addresses) + browser('10.1.6.50', 2)
    got = detect(tmp_path, files, text, database, '--campaign-network-addresses', '100', '--campaign-network-threshold', '10000')
    assert got.returncode == 0, got.stderr
    head, tail = 'AS64500 RESIDENTIAL-ISP, 20 addresses, ', ', no job seekers there, though range 10.1.5.64-10.1.6.127 carries some'
    expected = [('10.1.5.128/25', 20 - in_first, head + '%d in network 10.1.5.128/25' % (20 - in_first) + tail)]
    if in_first:
        expected.append(('10.1.5.64/26', in_first, head + '%d in network 10.1.5.64/26' % in_first + tail))
    assert sorted((e['address'], e['count'], e['reason']) for e in json.loads(got.stdout)['challenged']) == sorted(expected)


def test_an_as_the_database_names_not_is_named_by_its_number(tmp_path, files):
    """A row without a description: the reason says 'AS64500, 20 addresses', not 'AS64500 , ...'."""
    database = tmp_path / 'ip2asn.tsv'
    database.write_text('10.128.0.0\t10.143.255.255\t64500\tDE\t\n')
    got = detect(tmp_path, files, ''.join(scraper('10.128.%d.9' % i, 1) for i in range(20)), database)
    assert got.returncode == 0, got.stderr
    assert [e['reason'] for e in json.loads(got.stdout)['challenged']] == [
        'AS64500, 20 addresses, 20 in range 10.128.0.0-10.143.255.255, no job seekers there']


def test_an_ipv4_only_mmdb_holds_no_ipv6_client_and_decides_the_ipv4_ones(tmp_path, files):
    """An IPv6 client looked up in an IPv4-only MaxMind database is in no AS (not a damaged file):
    the run decides the IPv4 campaign as with a database of both."""
    text = campaign(20) + scraper('2001:db8::1', 3)
    both = detect(tmp_path, files, text, write_mmdb(tmp_path / 'both.mmdb'), '--check')
    only = detect(tmp_path, files, text, write_mmdb(tmp_path / 'v4.mmdb', ip_version=4), '--check')
    assert both.returncode == 0 and only.returncode == 0, only.stderr
    assert json.loads(only.stdout)['challenged'] == json.loads(both.stdout)['challenged'] != []
