"""The opt-in precise rules: user-agent-only bot tests, crawler verification by
reverse and forward DNS (with an injected resolver: no network), exact and CIDR list
matching, IPv6 /64 grouping."""
import ipaddress
import json
import threading
import time

import pytest
from hypothesis import given, settings as hsettings, strategies as st

import loggen
from conftest import Files, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import precise, ranges
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run as entry
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'


class FakeResolver:
    """reverse/forward from tables; counts calls; an address missing from the table fails."""

    def __init__(self, reverse=None, forward=None):
        self.reverse_table, self.forward_table = reverse or {}, forward or {}
        self.calls = []

    def reverse(self, address):
        self.calls.append(('reverse', address))
        if address not in self.reverse_table:
            raise OSError('no PTR')
        return self.reverse_table[address]

    def forward(self, name):
        self.calls.append(('forward', name))
        return self.forward_table.get(name, [])


def lines(address, count, epoch=NOW_EPOCH - 3600, agent=loggen.BROWSERS[0], path='/job/%d'):
    return b''.join(loggen.line(address, epoch, path=path % i, agent=agent) for i in range(count))


def run(tmp_path, log_bytes, blocklist=b'', exclusions=b'', **options):
    files = Files(tmp_path / 'files')
    files.blocklist.write_bytes(blocklist)
    files.exclusions.write_bytes(exclusions)
    log = tmp_path / 'access.log'
    log.write_bytes(log_bytes)
    resolver = options.pop('resolver', None)
    chosen = settings.Settings(blocklist=str(files.blocklist), exclusions=str(files.exclusions),
                               activity_log=str(files.activity_log), server_ips=['10.0.0.5'], rules='precise', **options)
    return entry.detect(chosen, [str(log)], now=NOW_EPOCH, resolver=resolver).as_dict(), files


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv('TZ', 'UTC')
    time.tzset()
    yield
    time.tzset()


def test_stellenangebot_pages_count_in_precise_mode_only(tmp_path):
    log = lines('203.0.113.7', 1000, path='/stellenangebot/%d')
    doc, files = run(tmp_path, log, resolver=FakeResolver())
    assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1000, 'window': 'previous'}]
    chosen = settings.Settings(blocklist=str(tmp_path / 'b'), exclusions=str(tmp_path / 'e'),
                               activity_log=str(tmp_path / 'a'), server_ips=['10.0.0.5'])
    spec = entry.detect(chosen, [str(tmp_path / 'access.log')], now=NOW_EPOCH).as_dict()
    assert spec['blocked'] == [] and spec['windows'][0]['records'] == []


def test_self_declared_bot_is_counted_verified_crawler_is_exempt(tmp_path):
    resolver = FakeResolver(reverse={'66.249.66.1': ['crawl-66-249-66-1.googlebot.com']},
                            forward={'crawl-66-249-66-1.googlebot.com': ['66.249.66.1']})
    log = (lines('66.249.66.1', 3000, agent=GOOGLEBOT) + lines('203.0.113.9', 1500, agent=GOOGLEBOT)
           + lines('203.0.113.10', 1200, agent='AcmeScraperBot/1.0') + lines('66.249.66.1', 40))
    doc, files = run(tmp_path, log, resolver=resolver)
    assert [(b['address'], b['count']) for b in doc['blocked']] == [('203.0.113.9', 1500), ('203.0.113.10', 1200)]
    assert {'address': '66.249.66.1', 'crawler': 'google', 'verified': True} in doc['verifications']
    assert {'address': '203.0.113.9', 'crawler': 'google', 'verified': False} in doc['verifications']
    # The verified crawler's own browser requests still count.
    assert {'count': 40, 'address': '66.249.66.1'} in doc['windows'][0]['records']
    assert files.read('blocklist') == b'203.0.113.9\n203.0.113.10\n'


@pytest.mark.parametrize('reverse,forward', [
    (['crawl.googlebot.com.attacker.example'], {'crawl.googlebot.com.attacker.example': ['198.51.100.66']}),  # not under the domain
    (['fakegooglebot.com'], {'fakegooglebot.com': ['198.51.100.66']}),                                        # suffix, not a subdomain
    (['crawl-1.googlebot.com'], {'crawl-1.googlebot.com': ['66.249.66.2']}),                                  # forward mismatch
    (['crawl-1.googlebot.com'], {}),                                                                          # forward fails
])
def test_spoofed_crawler_is_not_verified(tmp_path, reverse, forward):
    resolver = FakeResolver(reverse={'198.51.100.66': reverse}, forward=forward)
    doc, dummy = run(tmp_path, lines('198.51.100.66', 1100, agent=GOOGLEBOT), resolver=resolver)
    assert doc['blocked'] == [{'address': '198.51.100.66', 'count': 1100, 'window': 'previous'}]
    assert doc['verifications'] == [{'address': '198.51.100.66', 'crawler': 'google', 'verified': False}]


def test_each_claim_is_verified_once_per_run(tmp_path):
    resolver = FakeResolver(reverse={'66.249.66.1': ['crawl.googlebot.com']}, forward={'crawl.googlebot.com': ['66.249.66.1']})
    log = lines('66.249.66.1', 2000, agent=GOOGLEBOT) + lines('66.249.66.1', 2000, epoch=NOW_EPOCH, agent=GOOGLEBOT)
    doc, dummy = run(tmp_path, log, resolver=resolver)
    assert doc['blocked'] == []
    assert resolver.calls.count(('reverse', '66.249.66.1')) == 1


def test_slow_lookup_times_out_and_does_not_verify():
    resolver = precise.SystemResolver(timeout=0.2)
    started = time.time()
    with pytest.raises(OSError):
        resolver._call(time.sleep, 5)      # pylint: disable=protected-access
    assert time.time() - started < 2


def test_lists_match_exact_addresses_and_networks(tmp_path):
    log = (lines('1.2.3.4', 1000) + lines('203.0.113.7', 1000) + lines('2001:db8::bad', 1000) + lines('198.51.100.20', 1000)
           + lines('192.0.2.9', 1000))
    blocklist = b'11.2.3.45\n203.0.113.0/24\n2001:db8:0::BAD\n# a comment\nnot an address\n'
    exclusions = b'198.51.100.16/28\n'
    doc, files = run(tmp_path, log, blocklist=blocklist, exclusions=exclusions, resolver=FakeResolver())
    assert [b['address'] for b in doc['blocked']] == ['192.0.2.9', '1.2.3.4']    # no substring match: 11.2.3.45 is not 1.2.3.4
    assert sorted(b['address'] for b in doc['already_blocked'] if b['window'] == 'previous') == ['2001:db8::bad', '203.0.113.7']
    assert [b['address'] for b in doc['allow_listed']] == ['198.51.100.20']
    assert files.read('blocklist') == blocklist + b'192.0.2.9\n1.2.3.4\n'


def test_ipv6_clients_grouped_per_64(tmp_path):
    log = lines('2001:db8:1:2::a', 600) + lines('2001:db8:1:2:ffff::1', 500) + lines('2001:db8:1:3::1', 900)
    doc, files = run(tmp_path, log, ipv6_prefix=64, resolver=FakeResolver())
    assert doc['blocked'] == [{'address': '2001:db8:1:2::/64', 'count': 1100, 'window': 'previous'}]
    assert files.read('blocklist') == b'2001:db8:1:2::/64\n'
    again, dummy = run(tmp_path / 'again', log, blocklist=files.read('blocklist'), ipv6_prefix=64, resolver=FakeResolver())
    assert [b['address'] for b in again['already_blocked']] == ['2001:db8:1:2::/64']


def test_server_address_dropped_by_exact_match(tmp_path):
    doc, dummy = run(tmp_path, lines('10.0.0.5', 5000) + lines('10.0.0.51', 1000), resolver=FakeResolver())
    assert doc['blocked'] == [{'address': '10.0.0.51', 'count': 1000, 'window': 'previous'}]


def test_command_precise_with_the_hosts_resolver(tmp_path):
    """The real resolver, answered from /etc/hosts: 127.0.0.1 is localhost and back."""
    log = tmp_path / 'access.log'
    log.write_bytes(lines('127.0.0.1', 1500, agent='LocalBot/1.0') + lines('127.0.0.2', 1200, agent='LocalBot/1.0'))
    files = Files(tmp_path / 'f')
    table = json.dumps({'local': {'user_agent': 'LocalBot', 'domains': ['localhost']}})
    got = run_core(files.options() + ['--rules', 'precise', '--crawlers', table, '--server-ip', '10.0.0.5',
                                      '--now', NOW, '--json', log])
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc['rules'] == 'precise'
    assert {'address': '127.0.0.1', 'crawler': 'local', 'verified': True} in doc['verifications']
    assert doc['blocked'] == [{'address': '127.0.0.2', 'count': 1200, 'window': 'previous'}]


@pytest.mark.parametrize('args,fragment', [
    (['--rules', 'fuzzy'], b'--rules'), (['--ipv6-prefix', '64'], b'needs the precise rules'),
    (['--rules', 'precise', '--ipv6-prefix', '129'], b'--ipv6-prefix'), (['--crawlers', '[1]'], b'--crawlers'),
    (['--rules', 'precise', '--crawlers', '{"x": {"user_agent": "("}}'], b'crawler'),
    (['--dns-timeout', '0'], b'--dns-timeout'),
])
def test_bad_precise_options(tmp_path, files, args, fragment):
    log = tmp_path / 'access.log'
    log.write_bytes(lines('203.0.113.7', 1000))
    got = run_core(files.options() + ['--server-ip', '10.0.0.5'] + args + [log])
    assert got.returncode == 2 and fragment in got.stderr, got.stderr
    assert not any(files.base.iterdir())


# Issue 20, item 1: an IPv4-mapped IPv6 client (nginx on [::]:80 with ipv6only=off logs IPv4
# clients so) is the IPv4 address it maps, in every spelling, everywhere precise mode looks.
def mapped_spellings(ipv4):
    a, b, c, d = (int(x) for x in ipv4.split('.'))
    return ['::ffff:%s' % ipv4, '::FFFF:%s' % ipv4, '::ffff:%x:%x' % (a << 8 | b, c << 8 | d),
            '0:0:0:0:0:ffff:%s' % ipv4, '0000:0000:0000:0000:0000:FFFF:%04X:%04X' % (a << 8 | b, c << 8 | d)]


MAPPED = mapped_spellings('198.51.100.8')


@pytest.mark.parametrize('spelling', MAPPED)
@pytest.mark.parametrize('grouping,expected', [
    ({}, '198.51.100.8'), ({'ipv4_prefix': 24}, '198.51.100.0/24'),
    ({'ipv6_prefix': 64}, '198.51.100.8'), ({'ipv6_prefix': 96}, '198.51.100.8'), ({'ipv6_prefix': 81}, '198.51.100.8'),
    ({'ipv6_prefix': 64, 'ipv4_prefix': 16}, '198.51.0.0/16'),
])
def test_mapped_client_is_keyed_grouped_and_written_as_ipv4(tmp_path, spelling, grouping, expected):
    # Half the requests in the mapped spelling, half plain: one client, one record.
    log = lines(spelling, 600) + lines('198.51.100.8', 500) + lines('::ffff:203.0.113.77', 1200)
    doc, files = run(tmp_path, log, resolver=FakeResolver(), **grouping)
    other = '203.0.113.77' if 'ipv4_prefix' not in grouping else (
        '203.0.113.0/24' if grouping['ipv4_prefix'] == 24 else '203.0.0.0/16')
    assert [(b['address'], b['count']) for b in doc['blocked']] == [(other, 1200), (expected, 1100)]
    assert files.read('blocklist') == ('%s\n%s\n' % (other, expected)).encode()
    assert doc['skipped_invalid'] == []


@pytest.mark.parametrize('spelling', mapped_spellings('127.0.0.1'))
@pytest.mark.parametrize('server', ['127.0.0.1', '::ffff:127.0.0.1'])
def test_mapped_server_address_is_the_server(tmp_path, spelling, server):
    log = tmp_path / 'access.log'
    log.write_bytes(lines(spelling, 5000) + lines('127.0.0.1', 3000) + lines('198.51.100.9', 1000))
    files = Files(tmp_path / 'f')
    chosen = settings.Settings(blocklist=str(files.blocklist), exclusions=str(files.exclusions),
                               activity_log=str(files.activity_log), server_ips=[server], rules='precise')
    doc = entry.detect(chosen, [str(log)], now=NOW_EPOCH, resolver=FakeResolver()).as_dict()
    assert doc['blocked'] == [{'address': '198.51.100.9', 'count': 1000, 'window': 'previous'}]
    assert [r['address'] for r in doc['windows'][0]['records']] == ['198.51.100.9']


@pytest.mark.parametrize('spelling', MAPPED)
@pytest.mark.parametrize('listed', [b'198.51.100.8', b'198.51.100.0/24', b'::ffff:198.51.100.8', b'::FFFF:C633:6400/120'])
def test_mapped_client_and_the_lists(tmp_path, spelling, listed):
    log = lines(spelling, 1000)
    doc, files = run(tmp_path / 'allow', log, exclusions=listed + b'\n', resolver=FakeResolver())
    assert doc['blocked'] == [] and [b['address'] for b in doc['allow_listed']] == ['198.51.100.8']
    doc, files = run(tmp_path / 'block', log, blocklist=listed + b'\n', resolver=FakeResolver())
    assert doc['blocked'] == [] and [b['address'] for b in doc['already_blocked']] == ['198.51.100.8']
    assert files.read('blocklist') == listed + b'\n'


def test_mapped_decision_from_the_fleet_is_applied_as_ipv4(tmp_path):
    files = Files(tmp_path / 'f')
    chosen = settings.Settings(blocklist=str(files.blocklist), exclusions=str(files.exclusions),
                               activity_log=str(files.activity_log), server_ips=['10.0.0.5'], rules='precise')
    doc = entry.apply(chosen, [{'address': a, 'count': 9} for a in MAPPED + ['::ffff:203.0.113.0/120']]).as_dict()
    assert [b['address'] for b in doc['blocked']] == ['198.51.100.8', '203.0.113.0/24']
    assert files.read('blocklist') == b'198.51.100.8\n203.0.113.0/24\n'


# Issue 20, item 2: crawler verification verifies only what can change a decision, in
# parallel, within a bound per run, outside the lock (test_dns_silent.py: a real resolver
# that answers nothing).
class SlowResolver(FakeResolver):
    """Every reverse lookup takes ``delay`` seconds, then fails."""

    def __init__(self, delay):
        super(SlowResolver, self).__init__()
        self.delay = delay
        self.guard = threading.Lock()
        self.running = self.most_at_once = 0

    def reverse(self, address):
        with self.guard:
            self.calls.append(('reverse', address))
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(self.delay)
        finally:
            with self.guard:
                self.running -= 1
        raise OSError('no answer')


@pytest.mark.parametrize('count', [1, 500, 999])
def test_claims_below_the_threshold_are_not_verified(tmp_path, count):
    resolver = FakeResolver()
    log = lines('203.0.113.9', count, agent=GOOGLEBOT) + lines('2001:db8::1', count, agent=GOOGLEBOT)
    doc, dummy = run(tmp_path, log, resolver=resolver, threshold=1000)
    assert resolver.calls == [] and doc['verifications'] == [] and doc['blocked'] == []
    assert sorted(r['count'] for r in doc['windows'][0]['records']) == [count, count]


def claimers(number, requests, agent=GOOGLEBOT):
    return b''.join(lines('2001:db8:1:2::%x' % (i + 1), requests, agent=agent) for i in range(number))


def test_verification_is_parallel_and_bounded_in_lookups(tmp_path):
    resolver = SlowResolver(0.3)
    doc, files = run(tmp_path, claimers(60, 20) + lines('2001:db8:1:2::ff', 10), resolver=resolver, threshold=100,
                     ipv6_prefix=64, dns_lookups=40)
    # Parallel: lookups overlap (counted, not timed: a wall-clock bound fails on a loaded machine).
    assert len(resolver.calls) == 40 and 2 <= resolver.most_at_once <= precise.WORKERS
    failed = [v for v in doc['verifications'] if v['verified'] is False]
    unresolved = [v for v in doc['verifications'] if v['verified'] is None]
    assert len(failed) == 40 and len(unresolved) == 20
    # The record stands on what is known: the plain requests and the claims that failed;
    # the claims left unverified are neither exempt nor counted.
    assert doc['blocked'] == [{'address': '2001:db8:1:2::/64', 'count': 40 * 20 + 10, 'window': 'previous'}]


def test_verification_is_bounded_in_time(tmp_path):
    resolver = SlowResolver(1.0)
    started = time.monotonic()
    doc, files = run(tmp_path, claimers(200, 20), resolver=resolver, threshold=100, ipv6_prefix=64, dns_budget=1.5)
    # Without the budget: 200 lookups of 1 s, 16 at a time, 13 s at least. The budget's 1.5 s and
    # the lookups still running (1 s) leave room for the run's own CPU time on a loaded machine.
    assert time.monotonic() - started < 10
    failed = [v for v in doc['verifications'] if v['verified'] is False]
    unresolved = [v for v in doc['verifications'] if v['verified'] is None]
    assert len(failed) + len(unresolved) == 200 and 0 < len(failed) < 200
    blocked = [(b['address'], b['count']) for b in doc['blocked']]
    assert blocked == ([('2001:db8:1:2::/64', 20 * len(failed))] if 20 * len(failed) >= 100 else [])


def test_verification_goes_by_the_largest_claims_first(tmp_path):
    resolver = SlowResolver(0)
    log = claimers(30, 10) + lines('2001:db8:1:2::aaaa', 500, agent=GOOGLEBOT)
    doc, dummy = run(tmp_path, log, resolver=resolver, threshold=100, ipv6_prefix=64, dns_lookups=1)
    assert resolver.calls == [('reverse', '2001:db8:1:2::aaaa')]
    assert doc['blocked'] == [{'address': '2001:db8:1:2::/64', 'count': 500, 'window': 'previous'}]


# Issue 20, item 3: the filter counts in C-level passes; its definition, per line: the first
# field, under (field, crawler) when the user agent (only) matches a crawler's pattern.
@pytest.mark.parametrize('table', [None, {'odd': {'user_agent': r'Crawl[0-9]+er\b', 'domains': ['odd.example']},
                                          'google': {'user_agent': 'Googlebot', 'domains': ['googlebot.com']}}])
@pytest.mark.parametrize('seed', range(5))
def test_precise_filter_counts_as_its_per_line_definition(table, seed):
    import random
    from collections import Counter
    rng = random.Random(seed)
    crawlers = table or settings.DEFAULT_CRAWLERS
    agents = [loggen.BROWSERS[0], GOOGLEBOT, 'msnBOT/1.1', 'BINGbot', 'Crawl42er x', 'YandexImages/3', 'curl/8',
              'Mozilla (GOOGLEOTHER)', 'baiduspider+']
    lines = []
    for i in range(3000):
        path = rng.choice(['/job/%d' % i, '/job/googlebot', '/jobs/bingbot?x', '/job/Crawl7er'])
        referer = rng.choice(['-', 'https://www.google.com/', 'http://applebot.example/'])
        address = rng.choice(['203.0.113.%d' % rng.randrange(9), '2001:db8::%x' % rng.randrange(5), '\t198.51.100.1'])
        lines.append(loggen.line(address, NOW_EPOCH, path=path, agent=rng.choice(agents), referer=referer).rstrip(b'\n'))
    subject = precise.PreciseFilter(settings.SPEC_JOB_PREFIXES, crawlers)
    got = Counter()
    subject.count_into(lines, got)
    pattern = precise.re.compile(b'|'.join(b'(?P<%s>%s)' % (n.encode(), c['user_agent'].encode()) for n, c in crawlers.items()),
                                 precise.re.IGNORECASE)
    expected = Counter()
    for line in lines:
        if not any(p.encode() in line for p in settings.SPEC_JOB_PREFIXES) or b'/files/' in line:
            continue
        field = precise.first_field(line)
        match = pattern.search(precise.user_agent(line))
        expected[field if match is None else (field, match.lastgroup)] += 1
    assert got == expected


@pytest.mark.parametrize('grouping', [{}, {'ipv4_prefix': 24}, {'ipv4_prefix': 20}])
def test_grouping_leaves_what_is_not_an_address_as_it_is(tmp_path, grouping):
    log = (lines('0.0.0.0', 1300) + lines('010.0.0.1', 1200) + lines('-', 1100) + lines('198.51.100.7', 700)
           + lines('198.51.100.9', 400, agent='curl/8') + lines('::ffff:198.51.100.9', 300))
    doc, dummy = run(tmp_path, log, resolver=FakeResolver(), **grouping)
    assert [(r['address'], r['count']) for r in doc['skipped_invalid']] == [('0.0.0.0', 1300), ('010.0.0.1', 1200), ('-', 1100)]
    if grouping:
        network = '198.51.96.0/20' if grouping['ipv4_prefix'] == 20 else '198.51.100.0/24'
        assert doc['blocked'] == [{'address': network, 'count': 1400, 'window': 'previous'}]
    else:
        assert doc['blocked'] == []


# ---- the C-level parse and spelling of IPv6 (socket.inet_pton, inet_ntop) are ipaddress's


def ipaddress_client(field):
    """ranges.client as it was written with ipaddress, the definition the C path must keep."""
    try:
        text = field.decode('ascii')
    except UnicodeDecodeError:
        return None
    if ranges.V4.match(field):
        value = int(ipaddress.IPv4Address(text))
        return (4, value) if value else None
    if ':' not in text or '%' in text:
        return None
    try:
        value = int(ipaddress.IPv6Address(text))
    except ValueError:
        return None
    if value >> 32 == 0xffff:
        return (4, value & 0xffffffff) if value & 0xffffffff else None
    return (6, value) if value else None


PIECES = st.sampled_from(['', '0', '00', '0000', '00000', '1', 'ffff', 'FFFF', 'db8', '12345', '1.2.3.4', '01.2.3.4',
                          '255.255.255.255', '256.1.1.1', '1.2.3', 'g', ' ', ':', '%eth0', '\t', '\n', '\xff'])


@hsettings(max_examples=3000, deadline=None)
@given(field=st.one_of(st.lists(PIECES, min_size=1, max_size=10).map(':'.join),
                       st.text('0123456789abcdefABCDEF:.% ', max_size=45)).map(lambda text: text.encode('latin-1')))
def test_ipv6_fields_are_read_as_ipaddress_reads_them(field):
    assert ranges.client(field) == ipaddress_client(field)


@hsettings(max_examples=3000, deadline=None)
@given(value=st.one_of(st.integers(0, 2 ** 128 - 1), st.integers(0, 2 ** 64 - 1).map(lambda v: v << 64),
                       st.integers(0, 2 ** 48), st.tuples(st.integers(0, 7), st.integers(0, 2 ** 128 - 1)).map(
                           lambda p: p[1] & ~(0xffffffff << (16 * p[0])))),
       length=st.sampled_from([128, 64, 48]))
def test_ipv6_keys_are_spelt_as_ipaddress_spells_them(value, length):
    first = ranges.grouped(6, value, length)
    spelt = str(ipaddress.IPv6Address(first))
    assert ranges.spelling(6, length, first) == (spelt if length == 128 else '%s/%d' % (spelt, length)).encode()
