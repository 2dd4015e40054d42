"""Issue 19 for the precise rules: past ``count_budget`` their counts (fields, and
(field, crawler) claims) spill to files partitioned by the hash of the group's key
(precise.SpillCodec), and ranking, crawler verification and the decisions are those of the
plain in-memory path. Both paths are driven against each other on random counts, and the
command on a churn hour with a budget far below its addresses against the same command
with the budget above them."""
import json
import subprocess
import sys
from collections import Counter

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from unit.test_bounded_memory import NOW, SERVER, churn_log
from conftest import CORE, Files
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import precise
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import spill
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

CRAWLERS = sorted(settings.DEFAULT_CRAWLERS)
FIELDS = st.sampled_from([b'10.0.0.5', b'10.0.0.50', b'::ffff:10.0.0.5', b'010.0.0.1', b'0.0.0.0', b'-', b'a',
                          b'192.0.2.1', b'192.0.2.200', b'192.0.3.1', b'2001:db8::5', b'2001:DB8:0::5',
                          b'2001:db8::6', b'2001:db8:0:1::7', b'::ffff:192.0.2.1', b'198.51.100.9'])
KEYS = st.one_of(FIELDS, st.tuples(FIELDS, st.sampled_from(CRAWLERS)),
                 st.integers(0, 5000).map(lambda n: b'203.0.%d.%d' % (n >> 8, n & 255)),
                 st.integers(0, 5000).map(lambda n: b'2001:db8:%x::%x' % (n >> 4, n)))


class Resolver:
    """Verifies a claim when its address's last digit is even: reverse and forward agree."""

    def reverse(self, address):
        if address[-1] in '02468':
            return ['crawl.googlebot.com', 'x.search.msn.com', 'a.applebot.apple.com', 'b.crawl.yahoo.net']
        raise OSError('no PTR')

    def forward(self, name):
        return [self.address]

    def __init__(self):
        self.address = None


class Verifying(Resolver):
    def reverse(self, address):
        self.address = address
        return Resolver.reverse(self, address)


def rules_for(options):
    chosen = settings.Settings(rules='precise', **options)
    return precise.PreciseRules(chosen, Verifying())


def spilled_counter(session, rules, batches, budget):
    """The ``batches`` of (key, count) counted in a counter of ``session`` that spills with
    the rules' codec past ``budget`` after each batch, and in a plain Counter."""
    session.codec = rules.line_filter.spill_codec
    counter, whole = session.counter(), Counter()
    for batch in batches:
        for key, count in batch:
            counter[key] += count
            whole[key] += count
        if len(counter) > budget:
            counter.spill()
    return counter, whole


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(st.tuples(KEYS, st.integers(1, 9)), max_size=60), max_size=10),
       budget=st.integers(1, 40), top=st.integers(1, 8), threshold=st.integers(1, 30),
       grouping=st.sampled_from([{}, {'ipv4_prefix': 24}, {'ipv4_prefix': 16, 'ipv6_prefix': 48}, {'ipv6_prefix': 64}]),
       lookups=st.integers(1, 6), servers=st.sampled_from([[], [b'10.0.0.5'], [b'2001:db8::5', b'192.0.2.1']]))
def test_spilled_precise_counts_decide_as_the_whole_counter(tmp_path_factory, batches, budget, top, threshold, grouping, lookups, servers):
    options = dict(grouping, threshold=threshold, dns_lookups=lookups)
    bounded_rules = rules_for(options)
    with spill.Session(budget, str(tmp_path_factory.getbasetemp() / 'state')) as session:
        counter, whole = spilled_counter(session, bounded_rules, batches, budget)
        plain_rules = rules_for(options)
        expected = plain_rules.examined(whole, servers, top)
        assert bounded_rules.examined(counter, servers, top) == expected
        assert bounded_rules.verifications == plain_rules.verifications
        groups = {}
        for part in spill.parts(counter):       # a part holds its groups whole
            for key in part:
                field = key[0] if isinstance(key, tuple) else key
                group = groups.setdefault(bounded_rules.key(field), id(part))
                assert group == id(part)
        assert sum(sum(part.values()) for part in spill.parts(counter)) == sum(whole.values())


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(st.tuples(KEYS, st.integers(1, 9)), max_size=60), max_size=10),
       budget=st.integers(1, 40), threshold=st.integers(1, 30), floor=st.integers(1, 40),
       grouping=st.sampled_from([{}, {'ipv4_prefix': 24}, {'ipv6_prefix': 64}]), picks=st.lists(st.integers(0, 10 ** 6)),
       servers=st.sampled_from([[], [b'10.0.0.5'], [b'2001:db8::5', b'192.0.2.1']]))
def test_the_fleet_reports_cuts_are_those_of_every_record(tmp_path_factory, batches, budget, threshold, floor, grouping, picks, servers):
    """The fleet's report ranks only the records at or over its floor (phase 1), or the keys
    asked (phase 2), spilled or not: each equals every record of the whole counter, cut
    afterwards (a verification only lowers a count, so the cut can come first)."""
    options = dict(grouping, threshold=threshold, dns_lookups=1000)
    cut_rules, asked_rules = rules_for(options), rules_for(options)
    with spill.Session(budget, str(tmp_path_factory.getbasetemp() / 'state')) as session:
        counter, whole = spilled_counter(session, cut_rules, batches, budget)
        every = rules_for(options).examined(whole, servers, 10 ** 9)
        assert cut_rules.examined(counter, servers, 10 ** 9, at_least=floor) == [r for r in every if r[0] >= floor]
        keys = [key for count, key in every]
        wanted = set(keys[pick % len(keys)] for pick in picks) if keys else set()
        assert (asked_rules.examined(counter, servers, 10 ** 9, wanted=wanted.__contains__)
                == [r for r in every if r[1] in wanted])


def test_the_spill_codec_writes_claims_and_reads_them_back():
    codec = rules_for({}).line_filter.spill_codec
    keys = [b'192.0.2.1', (b'192.0.2.1', CRAWLERS[0]), (b'2001:db8::1', CRAWLERS[-1]), b'-']
    assert codec.decode(b'\n'.join(codec.encode(keys))) == keys
    assert codec.hash(b'2001:DB8::1') == codec.hash((b'2001:db8:0::1', CRAWLERS[0]))


def test_the_key_cache_stays_bounded(monkeypatch):
    monkeypatch.setattr(precise, 'KEY_CACHE', 100)
    subject = rules_for({'ipv6_prefix': 64})
    for n in range(1, 1000):
        assert subject.key(b'2001:db8:%x::1' % n) == b'2001:db8:%x::/64' % n
    assert len(subject._keys) <= 100          # pylint: disable=protected-access


def command(files, log, budget, extra=()):
    args = files.options() + ['--server-ip', SERVER, '--threshold', '40', '--top', '5', '--now', NOW, '--rules', 'precise',
                              '--count-budget', str(budget), '--json'] + list(extra) + [str(log)]
    return subprocess.run([sys.executable, str(CORE)] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={'TZ': 'UTC', 'LC_ALL': 'C.UTF-8', 'PATH': '/usr/bin:/bin', 'TMPDIR': str(files.base)}, check=False)


def test_a_churn_hour_in_precise_mode_decides_as_in_memory(tmp_path):
    for seed, ipv6, extra in [(1, True, []), (2, False, ['--ipv4-prefix', '24']), (3, True, ['--ipv6-prefix', '64'])]:
        log = churn_log(tmp_path / ('access-%d.log' % seed), 3000, 40, seed, ipv6=ipv6)
        outputs = []
        for budget in (1000000, 50):
            files = Files(tmp_path / ('files-%d-%d' % (seed, budget)))
            done = command(files, log, budget, extra)
            assert done.returncode == 0, done.stderr
            document = json.loads(done.stdout)
            messages = [m for m in document['messages'] if not m.startswith('Execution time')]
            outputs.append((document['windows'], document['blocked'], messages, files.read('blocklist')))
        assert outputs[0] == outputs[1]
        assert outputs[0][3]            # the scrapers over the threshold are blocked
