"""Unit tests of the detection core, each stage against the real tool the spec names."""
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from conftest import in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock, errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import addresses, rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting import compact
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe']


def gnu_date(args, tz):
    env = dict(os.environ, TZ=tz, LC_ALL='C')
    return subprocess.run(['date'] + args, env=env, stdout=subprocess.PIPE, check=True).stdout.decode().strip()


@pytest.mark.parametrize('tz', ZONES)
def test_windows_match_gnu_date(zone, tz):
    zone(tz)
    rng = random.Random(tz)
    # Random instants, and the DST switches of 2026 in Europe and the US.
    instants = [1767225600 + rng.randrange(365 * 86400) for dummy in range(12)]
    instants += [1774747800, 1774751400, 1792888200, 1792891800, 1793518200, 1793521800]
    for epoch in instants:
        anchor = time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(epoch))
        previous, current = clock.hour_windows(epoch)
        assert previous.stamp.decode() == gnu_date(['-d', anchor + ' 1 hour ago', '+%d/%b/%Y:%H'], tz)
        assert current.stamp.decode() == gnu_date(['-d', anchor, '+%d/%b/%Y:%H'], tz)
        assert (previous.heading, current.heading) == ('Checking the previous hour...', 'Checking the current hour...')


@pytest.mark.parametrize('tz', ZONES)
def test_activity_date_is_date_default_format(zone, tz, monkeypatch):
    """The date of another moment (date -d @EPOCH) in this process's zone; the run's locale:
    tests/unit/test_activity_date.py."""
    zone(tz)
    monkeypatch.setenv('LC_ALL', 'C')
    for epoch in (1779000000, 1792888200, 1800000000, 1767225600):
        assert clock.date_default_format(epoch) == gnu_date(['-d', '@%d' % epoch], tz)


def test_hour_stamp_ignores_locale(zone):
    zone('UTC')
    env = dict(os.environ, LC_ALL='de_DE.UTF-8', LANG='de_DE.UTF-8')
    code = ('import sys; sys.path[:0] = %r; from bot_detector.base.clock import hour_stamp; print(hour_stamp(1792888200))'
            % [str(Path(clock.__file__).parents[2])])
    out = subprocess.run(['python3', '-c', code], env=env, stdout=subprocess.PIPE, check=True).stdout
    assert out == b'25/Oct/2026:00\n'


def test_first_field_is_awks():
    lines = [b'1.2.3.4 - - x', b'  \t 5.6.7.8\tfoo', b'a\x0bb c', b'x\ry z', b'\xff\xfe bad', b'', b'   ',
             b'::1 GET', b'2001:db8::1,10.0.0.1 - -', b'\x00\x00 nul']
    for line in lines:
        awk = subprocess.run(['awk', '{print $1}'], input=line + b'\n', stdout=subprocess.PIPE,
                             env=dict(os.environ, LC_ALL='C'), check=True).stdout
        assert rules.first_field(line) + b'\n' == awk, line


def test_top_records_order_is_sort_uniq_sort():
    rng = random.Random(7)
    addresses = ['10.0.%d.%d' % (rng.randrange(3), rng.randrange(40)) for dummy in range(4000)]
    addresses += ['2001:db8::%x' % rng.randrange(30) for dummy in range(2000)] + ['-', 'a', 'ab', 'Z'] * 50
    counts = {}
    for a in addresses:
        counts[a.encode()] = counts.get(a.encode(), 0) + 1
    pipeline = subprocess.run('sort | uniq -c | sort -nr', shell=True, input='\n'.join(addresses).encode() + b'\n',
                              stdout=subprocess.PIPE, env=dict(os.environ, LC_ALL='C'), check=True).stdout
    expected = [tuple(l.split()) for l in pipeline.splitlines()]
    got = rules.top_records(counts, [], top=len(counts))
    assert [(b'%d' % c, a) for c, a in got] == expected
    assert len(rules.top_records(counts, [], top=20)) == 20


def test_server_address_dropped_as_substring_of_record():
    counts = {b'10.0.0.5': 5000, b'10.0.0.51': 4000, b'110.0.0.5': 3000, b'8.8.8.8': 2000, b'9.9.9.9': 1000}
    kept = rules.top_records(counts, [b'10.0.0.5'], top=20)
    assert kept == [(2000, b'8.8.8.8'), (1000, b'9.9.9.9')]
    # The record is '<count> <address>': a server address can match the count too.
    assert rules.top_records({b'7.7.7.7': 1234}, [b'123'], top=20) == []
    # The drop comes before the top-N cut.
    assert rules.top_records(counts, [b'10.0.0.5'], top=1) == [(2000, b'8.8.8.8')]


@pytest.mark.parametrize('field,valid', [
    (b'1.2.3.4', True), (b'255.255.255.255', True), (b'2001:db8::1', True), (b'::ffff:1.2.3.4', True),
    (b'fe80::1', True), (b'0.0.0.0', False), (b'::', False), (b'-', False), (b'host.example.com', False),
    (b'1.2.3.4,5.6.7.8', False), (b'0.0.0.0/0', False), (b'1.2.3.04', False), (b'256.1.1.1', False),
    (b'1.2.3', False), (b'fe80::1%eth0', False), (b'[2001:db8::1]', False), (b'1.2.3.4\n', False),
    (b'\xff1.2.3.4', False), (b'', False), (b'2001:db8::1/64', False),
])
def test_is_client_address(field, valid):
    assert addresses.is_client_address(field) is valid


def test_decide_order_and_substring_quirk():
    assert rules.decide(999, b'1.2.3.4', 1000, rules.SubstringLists(b'', b'')) == rules.BELOW_THRESHOLD
    assert rules.decide(1000, b'1.2.3.4', 1000, rules.SubstringLists(b'', b'')) == rules.BLOCK
    assert rules.decide(1000, b'1.2.3.4', 1000, rules.SubstringLists(b'11.2.3.45\n', b'')) == rules.ALREADY_BLOCKED
    assert rules.decide(1000, b'1.2.3.4', 1000, rules.SubstringLists(b'1.2.3.4\n', b'1.2.3.4\n')) == rules.ALREADY_BLOCKED
    assert rules.decide(1000, b'1.2.3.4', 1000, rules.SubstringLists(b'', b'1.2.3.45\n')) == rules.ALLOW_LISTED
    assert rules.decide(5000, b'-', 1000, rules.SubstringLists(b'', b'')) == rules.INVALID
    assert rules.decide(5000, b'-', 1000, rules.SubstringLists(b'a-b\n', b'')) == rules.ALREADY_BLOCKED


def test_line_filter_rules():
    keep = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google').keep
    assert keep(b'1.1.1.1 "GET /job/1 HTTP/1.1" "curl"')
    assert keep(b'1.1.1.1 "GET /de/stellen/1" x')
    assert not keep(b'1.1.1.1 "GET /stellenangebot/1" x')          # the quirk: stellenangeBOT
    assert not keep(b'1.1.1.1 "GET /job/1" "Mozilla (compatible; BoT)"')
    assert not keep(b'1.1.1.1 "GET /job/1" "Google Web Preview"')
    assert keep(b'1.1.1.1 "GET /job/1" "google"')                  # the marker is case-sensitive
    assert not keep(b'1.1.1.1 "GET /job/files/a.pdf"')
    assert not keep(b'1.1.1.1 "POST /job/1"')
    assert not keep(b'1.1.1.1 "GET /Job/1"')
    assert keep(b'\xff\x00 "GET /jobs/1" \xc3(')


def test_batch_filter_agrees_with_the_per_line_rules():
    import loggen
    rng = random.Random(5)
    lines = [loggen.Scenario(i, 1795234423).noise('203.0.113.%d' % (i % 250), 1795234423).rstrip(b'\n') for i in range(400)]
    lines += [loggen.line('198.51.100.%d' % i, 1795234423, path=p, agent=rng.choice(loggen.BOTS + loggen.BROWSERS)).rstrip(b'\n')
              for i, p in enumerate(['/job/1', '/jobs/robot', '/stelle/9', '/files/x', '/de/stellen/3'] * 40)]
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    kept = line_filter.keep_all(lines)
    assert kept == [l for l in lines if line_filter.keep(l)]
    assert 0 < len(kept) < len(lines)


def test_count_windows_reads_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, 'READ_CHUNK', 64)
    windows = [clock.Window('previous', '', b'21/Nov/2026:03'), clock.Window('current', '', b'21/Nov/2026:04')]
    lines = []
    for i in range(300):
        hour = (3, 4, 5)[i % 3]
        lines.append(b'10.0.0.%d - - [21/Nov/2026:%02d:00:00 +0000] "GET /job/%d HTTP/1.1" 200 1 "-" "x"' % (i % 7, hour, i))
    lines.append(b'x' * 1000 + b' 21/Nov/2026:03 GET /job/ long line')
    lines.append(b'9.9.9.9 21/Nov/2026:03 and 21/Nov/2026:04 GET /jobs/ twice')  # counts in both windows
    log = tmp_path / 'a.log'
    log.write_bytes(b'\n'.join(lines))                                          # no final newline
    counted = tally.count_windows([str(log)], windows, rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google'))
    counts, scans = counted.counters, counted.scans
    assert [s.mode for s in scans] == ['full']
    expected = [{}, {}]
    for line in lines:
        for i, w in enumerate(windows):
            if w.stamp in line:
                first = line.split(b' ')[0]
                expected[i][first] = expected[i].get(first, 0) + 1
    assert counts == expected
    assert counts[0][b'9.9.9.9'] == 1 and counts[1][b'9.9.9.9'] == 1


def test_settings_reject_bad_values():
    for kwargs in ({'threshold': 0}, {'threshold': -5}, {'top': 0}, {'search_engine': ''},
                   {'job_prefixes': []}, {'job_prefixes': ['']}, {'server_ips': ['']}, {'threshold': True}):
        with pytest.raises(errors.BotDetectorError) as err:
            settings.Settings(**kwargs)
        assert err.value.exit_status == errors.EXIT_BAD_OPTION
    for text in ('yesterday', '@', '@-5', '@1.5', '@ 1'):
        with pytest.raises(errors.BotDetectorError):
            clock.parse_now(text)


def test_now_in_seconds_since_the_epoch_names_one_instant_even_in_a_dst_night():
    # 02:30 on 2026-10-25 happens twice in Berlin, CEST then CET; '@' tells them apart.
    def windows(epoch):
        return [w.stamp for w in clock.hour_windows(clock.parse_now('@%d' % epoch))]
    assert in_timezone('Europe/Berlin', lambda: windows(1792888200)) == [b'25/Oct/2026:01', b'25/Oct/2026:02']
    assert in_timezone('Europe/Berlin', lambda: windows(1792891800)) == [b'25/Oct/2026:02', b'25/Oct/2026:02']
    assert clock.parse_now('@1792888200') == 1792888200


def test_compact_counts_round_trip_any_key_the_log_can_give():
    counts = {'203.0.113.7': 1450, '2001:db8:1:2::/64': 27, 'odd\rkey': 3, '\\xff\u00e9': 1, '1.2.3.4,5.6.7.8': 0}
    text = compact.compact_counts(counts)
    assert text.count('\n') == len(counts) and '1450 203.0.113.7\n' in text
    assert compact.parse_compact_counts(text) == counts and compact.parse_compact_counts('') == {}
    for bad in ('1450\n', '1450 \n', 'x 1.2.3.4\n', ' 5 1.2.3.4\n'):
        with pytest.raises(ValueError):
            compact.parse_compact_counts(bad)
