"""Each fast path against its definition, on any input.

The batch filter and the tally against the per-line rules, on random lines made of the
pieces the rules look for (prefixes, 'bot' in any case, the search-engine marker,
'/files/', stamps, blanks and tabs) and of bad bytes: ``LineFilter.keep`` and
``first_field`` are the definition (checked against the real tools in test_core.py).
The partial ranking against a full sort, the direct reading of --now against strptime,
and when counting forks."""
import os
import random
import time
from collections import Counter
from operator import itemgetter

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock, errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

STAMPS = [b'21/Nov/2026:03', b'21/Nov/2026:04', b'21/Nov/2026:05', b'22/Nov/2026:00', b'03/Nov/2026:03']
PIECES = [p.encode() for p in settings.SPEC_JOB_PREFIXES] + [
    b'bot', b'BoT', b'bOT', b'Bot', b'b0t', b'bo', b't', b'Google', b'google', b'GOOGLE', b'Googl',
    b'/files/', b'/FILES/', b'/files', b'GET /Job/', b'POST /job/', b'GET  /job/', b'GET /jo',
    b' ', b'  ', b'\t', b'\r', b'\x00', b'\xff\xfe', b'\xc3(', b'"', b'[', b']', b'-', b'::1', b'10.0.0.5',
    b'2001:DB8::1', b'1.2.3.4,5.6.7.8', b'x' * 300,
] + STAMPS

piece = st.one_of(st.sampled_from(PIECES), st.binary(max_size=8).map(lambda b: b.replace(b'\n', b'')))
line = st.lists(piece, max_size=12).map(b''.join)
marker = st.sampled_from([b'Google', b'G', b'bot', b'oo', b'/files/', b'\xff', b'Goo\ngle'])


def per_line_spec(line_filter, lines, stamp):
    return Counter(rules.first_field(l) for l in lines if stamp in l and line_filter.keep(l))


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(line, max_size=40), search_engine=marker)
def test_batch_filter_equals_per_line_rules(lines, search_engine):
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, search_engine.decode('latin-1'))
    assert line_filter.keep_all(lines) == [l for l in lines if line_filter.keep(l)]
    counted = Counter()
    line_filter.count_into(lines, counted)
    assert counted == Counter(rules.first_field(l) for l in lines if line_filter.keep(l))


def precise_filter():
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import precise
    return precise.PreciseFilter(settings.SPEC_JOB_PREFIXES, {'Googlebot': {'user_agent': 'Google'}, 'Bing': {'user_agent': 'b.T'}})


def per_line_precise(line_filter, lines, stamp):
    counted = Counter()
    for l in lines:
        if stamp in l:
            line_filter.count_into([l], counted)        # one line at a time: no batching
    return counted


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(line, max_size=60), final_newline=st.booleans(), dense=st.booleans(), precise=st.booleans())
def test_tally_equals_per_line_rules(lines, final_newline, dense, precise):
    """Every stamp counted, the windows' by the fast path and the others as tracked ones,
    over chunks cut at a newline or not, whatever share of the lines holds a stamp; the
    spec's rules against their per-line definition, the precise ones against themselves
    applied one line at a time."""
    if dense:       # most lines hold the first stamp (an incremental run's chunk), some do not
        lines = [l + b' [' + STAMPS[0] + b':00:00 +0000]' if i % 7 else l for i, l in enumerate(lines)]
    line_filter = precise_filter() if precise else rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    per_line_counts = per_line_precise if precise else per_line_spec
    buf = b'\n'.join(lines) + (b'\n' if final_newline else b'')
    counted = tally.Tally(STAMPS[:2], line_filter, tracked=STAMPS[1:])
    counted.chunk(buf)
    for stamp in STAMPS:
        assert counted.counters[stamp] == per_line_counts(line_filter, lines, stamp), stamp
    # The same buffer handed over with an unfinished last line beyond ``limit``.
    if final_newline and lines:
        cut = tally.Tally(STAMPS[:2], line_filter, tracked=STAMPS[2:])
        cut.chunk(buf + b'1.1.1.1 GET /job/ ' + STAMPS[0] + b' ' + STAMPS[3], limit=len(buf) - 1)
        for stamp in STAMPS:
            assert cut.counters[stamp] == per_line_counts(line_filter, lines, stamp), stamp


def test_a_line_holding_two_stamps_counts_under_both():
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    counted = tally.Tally(STAMPS[:2], line_filter, tracked=STAMPS[2:])
    counted.chunk(b'9.9.9.9 [21/Nov/2026:04:59:59 +0000] "GET /job/1" "https://x/?t=22/Nov/2026:00" "curl"\n')
    assert counted.counters[STAMPS[1]] == counted.counters[STAMPS[3]] == {b'9.9.9.9': 1}
    assert not counted.counters[STAMPS[0]] and not counted.counters[STAMPS[2]]


@hsettings(max_examples=200, deadline=None)
@given(counts=st.dictionaries(st.binary(min_size=1, max_size=6), st.integers(1, 40), max_size=300),
       top=st.integers(1, 30), servers=st.lists(st.binary(min_size=1, max_size=3), max_size=2))
def test_partial_ranking_equals_a_full_sort(counts, top, servers):
    ordered = sorted(counts.items(), key=itemgetter(1, 0), reverse=True)
    assert tally.largest(counts, top) == ordered[:top]
    if len(servers) == 1:       # the spec's substring rule; several are matched as whole addresses
        expected = [(c, a) for a, c in ordered if servers[0] not in b'%d %s' % (c, a)][:top]
    else:
        whole = set(rules.address_key(ip) for ip in servers)
        expected = [(c, a) for a, c in ordered if rules.address_key(a) not in whole][:top]
    assert rules.top_records(counts, servers, top) == expected


@pytest.mark.parametrize('tz', ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe'])
def test_now_read_directly_equals_strptime(tz, monkeypatch):
    monkeypatch.setenv('TZ', tz)
    time.tzset()
    try:
        rng = random.Random(tz)
        texts = ['2026-10-25 02:30:00', '2026-03-29 02:30:00', '2026-02-29 00:00:00', '2024-02-29 23:59:60',
                 '2026-1-2 03:04:05', ' 2026-01-02 03:04:05', '2026-01-02T03:04:05', '2026-01-02 03:04:05 ',
                 '0000-01-01 00:00:00', '1899-12-31 23:59:59', '２０２６-01-02 03:04:05', '']
        texts += ['%04d-%02d-%02d %02d:%02d:%02d' % (rng.choice([1900, 1970, 2026, 2100, 9999]), rng.randint(0, 13),
                                                     rng.randint(0, 32), rng.randint(0, 25), rng.randint(0, 61),
                                                     rng.randint(0, 62)) for dummy in range(3000)]
        for text in texts:
            try:
                expected = time.mktime(time.strptime(text, '%Y-%m-%d %H:%M:%S'))
            except (ValueError, OverflowError):
                expected = 'error'
            try:
                got = clock.parse_now(text)
            except errors.BotDetectorError:
                got = 'error'
            assert got == expected, text
    finally:
        monkeypatch.undo()
        time.tzset()


def test_workers_fork_only_for_large_ranges_on_idle_cores(monkeypatch, tmp_path):
    loadavg = tmp_path / 'loadavg'
    monkeypatch.setattr(chunks, 'LOADAVG', str(loadavg))
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1})
    loadavg.write_text('1.50 1.20 0.90 1/312 4242\n')       # only this run is running now
    assert chunks.workers_for(chunks.PARALLEL_MIN_BYTES) == 2
    assert chunks.workers_for(chunks.PARALLEL_MIN_BYTES - 1) == 1
    loadavg.write_text('0.10 0.20 0.30 2/312 4242\n')       # one core busy elsewhere
    assert chunks.workers_for(10 * chunks.PARALLEL_MIN_BYTES) == 1
    loadavg.write_text('0.00 0.00 0.00 9/312 4242\n')       # more busy than there are cores
    assert chunks.workers_for(10 * chunks.PARALLEL_MIN_BYTES) == 1
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: set(range(64)))
    loadavg.write_text('0.00 0.00 0.00 1/312 4242\n')
    assert chunks.workers_for(10 * chunks.PARALLEL_MIN_BYTES) == chunks.MAX_WORKERS
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1})
    loadavg.unlink()                                        # no /proc: the load average
    monkeypatch.setattr(os, 'getloadavg', lambda: (1.2, 0.0, 0.0))
    assert chunks.workers_for(10 * chunks.PARALLEL_MIN_BYTES) == 1
    monkeypatch.setattr(os, 'getloadavg', lambda: (0.2, 0.0, 0.0))
    assert chunks.workers_for(10 * chunks.PARALLEL_MIN_BYTES) == 2


def test_idle_cores_reads_this_machine():
    """On this Linux machine: a real /proc/loadavg, at least one core, at most the CPUs."""
    assert 1 <= chunks.idle_cores() <= len(os.sched_getaffinity(0))


def test_an_hours_chunk_finds_the_other_stamps_on_its_other_lines():
    """A chunk mostly of one hour (an incremental run's): late lines of the previous hour,
    a line stamped ahead, a referrer with another hour on a line of the hour."""
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')

    def request(address, stamp, extra=b''):
        return b'%s - - [%s:10:00 +0000] "GET /job/1 HTTP/1.1" 200 1 "%s" "curl"' % (address, stamp, extra)
    lines = [request(b'10.0.0.%d' % (i % 9), STAMPS[1]) for i in range(400)]
    lines[5] = request(b'10.9.9.1', STAMPS[0])                       # late: the previous hour
    lines[9] = request(b'10.9.9.2', STAMPS[2])                       # ahead: a tracked hour
    lines[11] = request(b'10.9.9.3', STAMPS[3])                      # tomorrow: tracked
    for with_referrer in (False, True):
        if with_referrer:
            lines[20] = request(b'10.9.9.4', STAMPS[1], b'https://x/?t=' + STAMPS[2])
        counted = tally.Tally(STAMPS[:2], line_filter, tracked=STAMPS[2:4])
        counted.chunk(b'\n'.join(lines) + b'\n')
        for stamp in STAMPS[:4]:
            assert counted.counters[stamp] == per_line_spec(line_filter, lines, stamp), stamp
        assert counted.counters[STAMPS[0]] == {b'10.9.9.1': 1}


@hsettings(max_examples=2000, deadline=None)
@given(year=st.integers(1, 9999), month=st.integers(1, 12), day=st.integers(1, 31), hour=st.integers(0, 23),
       minute=st.integers(0, 59), second=st.integers(0, 60))
def test_utc_seconds_is_calendar_timegm(year, month, day, hour, minute, second):
    import calendar
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
    assert clock.utc_seconds(year, month, day, hour, minute, second) == calendar.timegm(
        (year, month, day, hour, minute, second, 0, 0, 0))


def test_a_timestamp_of_year_zero_is_no_time(tmp_path):
    """calendar refused year 0 with a traceback; such a line is garbage, counted by its text."""
    from conftest import Files, mask_duration, run_core, run_reference
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(b'1.2.3.%d - - [01/Jan/0000:00:00:00 +0000] "GET /job/1 HTTP/1.1" 200 1 "-" "x"\n' % i
                             for i in range(5)) + b'9.9.9.9 - - [21/Nov/2026:04:00:00 +0000] "GET /job/1" 200 1 "-" "x"\n')
    theirs = Files(tmp_path / 'theirs')
    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log, ['10.0.0.5'], '2026-11-21 04:13:43',
                        extra_env={'BD_THRESHOLD': '1'})
    for extra in ([], ['--rotated'], ['--state-dir', str(tmp_path / 'state')]):
        ours = Files(tmp_path / ('ours%s' % ''.join(extra).replace('/', '')))
        got = run_core(ours.options() + ['--server-ip', '10.0.0.5', '--threshold', '1', '--now', '2026-11-21 04:13:43'] + extra + [log])
        assert got.returncode == 0 and got.stderr == b'', got.stderr
        assert mask_duration(got.stdout) == mask_duration(ref.stdout) and b'9.9.9.9' in got.stdout


def test_the_campaigns_address_parse_agrees_with_what_may_be_appended():
    """decision/campaigns.address_number (inet_pton, then inet_ntoa's dotted form for IPv4) must
    take exactly the keys is_client_address takes: leading zeros, octets over 255, 0.0.0.0, short
    and long forms, blanks, zone ids and non-ASCII digits among them."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.addresses import is_client_address
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.campaigns import address_number
    rng = random.Random(45)
    parts = ['0', '00', '01', '1', '9', '10', '99', '100', '199', '200', '249', '250', '255', '256', '300', '0x1', ' 1',
             '1 ', '', '-1', '+1', '1e1', '\u0661']
    keys = [b'::', b'::1', b'2001:db8::1', b'2001:db8::1%eth0', b'::ffff:192.0.2.1', b'2001:db8::g', b'\xff1.2.3.4']
    for dummy in range(20000):
        text = '.'.join(rng.choice(parts) for dummy in range(rng.choice([3, 4, 4, 4, 5])))
        keys.append((text + rng.choice(['', '', '', '\n', '.', '/24', '%eth0', ' '])).encode('utf-8'))
    wrong = [key for key in keys if (address_number(key) is not None) != is_client_address(key)]
    assert wrong == []
    assert address_number(b'192.0.2.1') == (4, 0xc0000201) and address_number(b'2001:db8::1') == (6, 0x20010db8 << 96 | 1)


@hsettings(max_examples=400, deadline=None)
@given(st.sampled_from([4, 6]), st.integers(min_value=0, max_value=2 ** 128 - 1), st.integers(min_value=0, max_value=2 ** 128 - 1),
       st.integers(min_value=0, max_value=40))
def test_a_span_as_networks_by_integers_is_what_ipaddress_summarizes(version, one, other, low_bits):
    """ranges.cidrs, range_networks and address_text, by integers, against ipaddress (their
    definition): spans of any width, ending on a boundary or not, up to the whole space and its
    last address; IPv6 addresses whose first 80 bits are zero (::a.b.c.d, ::ffff:a.b.c.d) too."""
    import ipaddress
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import ranges
    top = 2 ** (32 if version == 4 else 128) - 1
    first, last = sorted((one & top, other & top))
    if low_bits % 3 == 0:       # often a narrow span: a boundary near it
        last = min(top, first + (1 << low_bits) - 1)
    kind = ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address
    nets = list(ipaddress.summarize_address_range(kind(first), kind(last)))
    assert ranges.cidrs(version, first, last) == [(int(n.network_address), int(n.broadcast_address)) for n in nets]
    assert [ranges.network_text(version, low, length) for low, length in ranges.range_networks(version, first, last)] \
        == [str(n) for n in nets]
    assert ranges.address_text(version, first) == str(kind(first))
    assert ranges.cidrs(version, 0, top) == [(0, top)] and ranges.cidrs(version, top, top) == [(top, top)]
    if version == 6:
        for low in (first >> 80, (0xffff << 32) | (first & 0xffffffff), first >> 96):
            assert ranges.address_text(6, low) == str(ipaddress.IPv6Address(low))
