"""The campaign profile (issue 45): each key, signal and the sliding hour on small logs
written here, each at its threshold and one request short of it, through the command as a
real process. The expected lines are written out by hand from the profile's rules."""
import json
import os

import pytest

from conftest import Files, mask_dates, run_core

NOW = '2026-11-21 10:50:00'         # UTC; the current hour is 21/Nov/2026:10
SITE = 'https://jobs.example'
TRAP = '/jobs/featured-x/'
AGENT = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'


def request(address, path, minute=10, second=0, referer='-', hour=10):
    return '%s - - [21/Nov/2026:%02d:%02d:%02d +0000] "GET %s HTTP/1.1" 200 512 "%s" "%s"\n' % (
        address, hour, minute, second, path, referer, AGENT)


def scraper(address, pages, minute=10, hour=10):
    """``pages`` job pages, no assets, no referer."""
    return ''.join(request(address, '/job/%d' % i, minute + i % 30, i % 60, hour=hour) for i in range(pages))


def browser(address, pages, minute=10):
    """``pages`` job pages, each with a referer from the site and its assets."""
    lines = []
    for i in range(pages):
        page = '/job/%d' % (i * 7)
        lines.append(request(address, page, minute + i % 30, i % 60, SITE + '/jobs/?q=cook'))
        lines.append(request(address, '/static/app.css', minute + i % 30, i % 60, SITE + page))
        lines.append(request(address, '/static/logo.png', minute + i % 30, i % 60, SITE + page))
    return ''.join(lines)


def detect(tmp_path, files, text, *extra):
    log = tmp_path / 'access.log'
    log.write_text(text)
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', NOW, '--campaigns', '--json']
                   + list(extra) + [log])
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def challenged(result):
    return sorted((entry['address'], entry['count'], entry['reason']) for entry in result['challenged'])


def blocked(result):
    return sorted((entry['address'], entry['count']) for entry in result['blocked'])


def test_an_address_over_the_threshold_without_browser_behaviour_is_blocked_saying_why(tmp_path, files):
    result = detect(tmp_path, files, scraper('192.0.2.10', 1000) + scraper('192.0.2.11', 999))
    assert blocked(result) == [('192.0.2.10', 1000)]
    assert mask_dates(files.read('activity_log')) == [
        b'IP addess 192.0.2.10 added to the block list, RPH=1000 (address, no browser behaviour: 0 assets, 0 referers)']
    assert ('192.0.2.11', 999, 'address, no browser behaviour: 0 assets, 0 referers') in challenged(result)
    assert files.read('blocklist') == b'192.0.2.10\n'


def test_a_shared_address_with_browser_behaviour_is_never_blocked(tmp_path, files):
    result = detect(tmp_path, files, browser('100.64.0.7', 1200) + browser('100.64.0.8', 1199),
                    '--campaign-shared-threshold', '1200')
    assert blocked(result) == [] and files.read('blocklist') is None
    assert challenged(result) == [('100.64.0.7', 1200, 'shared address, browser behaviour: 2400 assets, 1200 referers')]
    assert ('IP address 100.64.0.8 behaves as a browser and will not be blocked (1199 requests, shared address, '
            'browser behaviour: 2398 assets, 1199 referers).') in result['messages']


def test_behaviour_alone_is_a_challenge_from_its_threshold(tmp_path, files):
    result = detect(tmp_path, files, scraper('192.0.2.20', 100) + scraper('192.0.2.21', 99) + browser('192.0.2.22', 300))
    assert challenged(result) == [('192.0.2.20', 100, 'address, no browser behaviour: 0 assets, 0 referers')]
    assert blocked(result) == []


def rotating(prefix, addresses, each):
    return ''.join(scraper(prefix % i, each) for i in range(1, addresses + 1))


@pytest.mark.parametrize('addresses,each,decided', [
    (10, 20, True),          # 200 requests from 10 addresses: the network's threshold
    (10, 19, False),         # 190
    (16, 1, True),           # 16 distinct addresses: the distinct addresses' threshold
    (15, 1, False),
])
def test_a_network_is_challenged_by_its_requests_or_its_distinct_addresses(tmp_path, files, addresses, each, decided):
    result = detect(tmp_path, files, rotating('203.0.113.%d', addresses, each) + rotating('198.51.100.%d', 9, 22)[:-1])
    expected = [('203.0.113.0/24', addresses * each, 'network 203.0.113.0/24, %d addresses' % addresses)] if decided else []
    assert challenged(result) == expected
    assert blocked(result) == [] and files.read('blocklist') is None


def test_one_request_short_of_the_networks_threshold_decides_nothing(tmp_path, files):
    log = rotating('203.0.113.%d', 10, 20)
    short = log[:log.rindex('\n', 0, len(log) - 1) + 1]         # the last line dropped: 199
    assert challenged(detect(tmp_path, files, short)) == []


def test_browsers_do_not_count_towards_their_network(tmp_path, files):
    result = detect(tmp_path, files, ''.join(browser('198.51.100.%d' % i, 30) for i in range(2, 40)))
    assert challenged(result) == [] and blocked(result) == []


def test_ipv6_networks_the_narrower_first_the_wider_on_the_rest(tmp_path, files):
    one_64 = ''.join(scraper('2001:db8:1:1::%x' % i, 1) for i in range(1, 17))
    spread_48 = ''.join(scraper('2001:db8:2:%x::1' % i, 1) for i in range(1, 17))
    result = detect(tmp_path, files, one_64 + spread_48)
    assert challenged(result) == [
        ('2001:db8:1:1::/64', 16, 'network 2001:db8:1:1::/64, 16 addresses'),
        ('2001:db8:2::/48', 16, 'network 2001:db8:2::/48, 16 addresses')]


def test_a_trap_hit_blocks_its_address_and_from_a_browser_is_a_challenge(tmp_path, files):
    text = (request('192.0.2.30', TRAP + '7') + scraper('192.0.2.31', 3) + browser('192.0.2.32', 4)
            + request('192.0.2.32', TRAP + '7') + request('192.0.2.33', TRAP[:-1]))
    result = detect(tmp_path, files, text, '--trap-path', TRAP)
    # The trap is under /jobs/: its request is a job page's too.
    assert blocked(result) == [('192.0.2.30', 1)]
    assert challenged(result) == [('192.0.2.32', 5, 'trap, 1 hits, browser behaviour: 8 assets, 4 referers')]
    assert mask_dates(files.read('activity_log')) == [
        b'IP addess 192.0.2.30 added to the block list, RPH=1 (trap, 1 hits, no browser behaviour: 0 assets, 0 referers)']


def test_a_profile_decision_is_already_listed_only_as_a_line_of_the_blocklist_not_inside_another(tmp_path, files):
    """The reference's rule looks for a ranked record as a substring of the blocklist (kept); a
    decision of the profile is listed as the enforcement reads an entry: a line that is it, blanks
    around it aside, or its network of one address. 192.0.2.3's trap hit is blocked though
    192.0.2.34 and 10.192.0.2.3 are listed and a comment names it, and so is 192.0.2.6's (its line
    holds a comment after it: no entry); 192.0.2.5's and 192.0.2.7's are not (listed)."""
    listed = b'192.0.2.34\n10.192.0.2.3\n# 192.0.2.3 by hand\n 192.0.2.5 \r\n192.0.2.6  # by hand\n192.0.2.7/32\n'
    files.blocklist.write_bytes(listed)
    text = ''.join(request('192.0.2.%d' % last, TRAP + '7') for last in (3, 5, 6, 7))
    result = detect(tmp_path, files, text, '--trap-path', TRAP)
    assert blocked(result) == [('192.0.2.3', 1), ('192.0.2.6', 1)]
    assert [entry['address'] for entry in result['already_blocked']] == ['192.0.2.5', '192.0.2.7']
    assert files.read('blocklist') == listed + b'192.0.2.3\n192.0.2.6\n'


def test_a_bots_trap_hit_is_not_counted(tmp_path, files):
    text = request('192.0.2.40', TRAP).replace(AGENT, 'ExampleBot/1.0')
    assert blocked(detect(tmp_path, files, text, '--trap-path', TRAP)) == []


def test_signals_take_awks_first_field_and_a_trap_line_once(tmp_path, files):
    """The signals' keys cut as awk cuts a line's first field (a line starting with a blank,
    a tab after the address), and a trap hit is a line after its method, one a line however
    many trap paths it holds: the faster ways of finding both must agree with that."""
    text = (request('192.0.2.50', '/job/1', referer=SITE + '/jobs/')
            + ' ' + request('192.0.2.50', '/static/app.css', referer=SITE + '/job/1')
            + '\t' + request('192.0.2.50', '/static/logo.png', referer=SITE + '/job/1').replace(' - - ', '\t- - ', 1)
            + request('192.0.2.50', TRAP, referer=SITE + '/job/1')
            + request('192.0.2.51', TRAP + '?next=/jobs/featured-y/&again=' + TRAP)
            + request('192.0.2.52', '/job/5', referer=SITE + TRAP))
    result = detect(tmp_path, files, text, '--trap-path', TRAP, '--trap-path', '/jobs/featured-y/')
    assert blocked(result) == [('192.0.2.51', 1)]
    assert challenged(result) == [('192.0.2.50', 2, 'trap, 1 hits, browser behaviour: 2 assets, 2 referers')]


def test_an_asset_is_the_request_after_the_time_never_a_user_agent(tmp_path, files):
    """An asset is what the request, the quoted field after the time, asks for: a user agent
    holding an asset request's text (a log that does not escape quotes) is none, which would
    make a scraper look like a browser; a user name holding a quote (Apache writes it \\")
    hides none of a browser's."""
    faked = ''.join(request('192.0.2.70', '/job/%d' % i, referer=SITE + '/jobs/').replace(
        AGENT, 'x" "GET /static/app.css HTTP/1.1" 200 1 "y') for i in range(100))
    quoted_user = browser('203.0.113.71', 100).replace(' - - [', ' - a\\"b [')
    result = detect(tmp_path, files, faked + quoted_user + browser('192.0.2.72', 100))
    assert challenged(result) == [('192.0.2.70', 100, 'address, no browser behaviour: 0 assets, 100 referers')]


def test_with_job_prefixes_a_referer_may_hold_a_browsers_assets_count(tmp_path, files):
    """A job prefix without the method (``/job/``) is also in the referer of each asset a job page
    loads: those lines are job-page requests to the reference's rule, and assets all the same."""
    result = detect(tmp_path, files, browser('192.0.2.80', 100) + scraper('198.51.100.81', 300), '--job-prefix', '/job/')
    assert challenged(result) == [('198.51.100.81', 300, 'address, no browser behaviour: 0 assets, 0 referers')]


@pytest.mark.parametrize('path,fragment', [
    ('/', b"trap_paths: '/' would match every page"),
    ('/job', b"trap_paths: '/job' would match every page under /job/"),
    ('/stellen', b"would match every page under /stellen/"),
    ('jobs/x', b'is not a request path'),
    ('/trap\nx', b'is not a request path'),      # on no line: it would never match
    ('/trap\tx', b'is not a request path'),
    ('/trap\x01x', b'is not a request path'),
    ('/trap\x7fx', b'is not a request path'),
])
def test_trap_paths_that_match_every_page_are_refused(tmp_path, files, path, fragment):
    log = tmp_path / 'access.log'
    log.write_text(scraper('192.0.2.10', 1000))
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', NOW, '--campaigns', '--trap-path', path, log])
    assert got.returncode == 2 and fragment in got.stderr and got.stdout == b''
    assert files.read('blocklist') is None and files.read('activity_log') is None


def test_trap_paths_need_the_profile(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_text('')
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--trap-path', TRAP, log])
    assert got.returncode == 2 and b'trap_paths: needs the campaign profile' in got.stderr


def test_the_servers_address_is_never_decided(tmp_path, files):
    result = detect(tmp_path, files, scraper('198.51.100.1', 1000) + request('198.51.100.1', TRAP), '--trap-path', TRAP)
    assert blocked(result) == [] and challenged(result) == []


def test_the_sliding_hour_adds_the_previous_hours_share_still_inside(tmp_path, files):
    """999 requests at 09:59 and 999 at 10:00: at 10:00:30, 999 * (3570 / 3600) = 990 of the
    previous hour are still inside the last 60 minutes: 1989 in all."""
    text = (''.join(request('192.0.2.50', '/job/%d' % i, 59, i % 60, hour=9) for i in range(999))
            + ''.join(request('192.0.2.50', '/job/%d' % i, 0, i % 30, hour=10) for i in range(999)))
    log = tmp_path / 'access.log'
    log.write_text(text)
    base = files.options() + ['--server-ip', '198.51.100.1', '--now', '2026-11-21 10:00:30', '--json']
    plain = json.loads(run_core(base + [log]).stdout)
    assert plain['blocked'] == []
    got = json.loads(run_core(base + ['--sliding-hour', log]).stdout)
    assert [(e['address'], e['count'], e['window']) for e in got['blocked']] == [('192.0.2.50', 1989, 'current')]
    late = json.loads(run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', '2026-11-21 10:59:59',
                                                  '--json', '--sliding-hour', log]).stdout)
    assert late['blocked'] == []        # 999 * 1 / 3600 of the previous hour: 999 in all
    # With the profile: the previous window's 999 (a behaviour verdict, a challenge) is not listed
    # beside the current window's block of the same address: each key on one list.
    fresh = Files(tmp_path / 'fresh').options() + ['--server-ip', '198.51.100.1', '--now', '2026-11-21 10:00:30', '--json']
    profile = json.loads(run_core(fresh + ['--sliding-hour', '--campaigns', '--challenge-list', tmp_path / 'challenge.txt',
                                           '--answer-dir', tmp_path / 'answers', log]).stdout)
    assert [(e['address'], e['count']) for e in profile['blocked']] == [('192.0.2.50', 1989)]
    assert profile['answers']['challenge']['added'] == [] and not (tmp_path / 'challenge.txt').exists()
    assert profile['challenged'] == []


@pytest.mark.parametrize('night', ['25/Oct/2026', '24/Oct/2026'])
def test_the_sliding_hour_counts_the_repeated_hour_of_a_dst_night_once(tmp_path, files, night):
    """700 requests in the second 02:xx of the autumn night in Berlin (+0100): the previous and the
    current window are both the hour stamp 02, the same lines; the estimate of the last 60
    minutes is 700, as on an ordinary night, not 700 plus half of them again (1050, a block)."""
    log = tmp_path / 'access.log'
    log.write_text(''.join('192.0.2.60 - - [%s:02:%02d:%02d +0100] "GET /job/%d HTTP/1.1" 200 100 "-" "curl/8.5.0"\n'
                           % (night, i // 60 % 25, i % 60, i) for i in range(700)))
    now = '%s-10-%s 02:30:00' % (night[-4:], night[:2])
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', now, '--json', '--campaigns', '--sliding-hour', log],
                   tz='Europe/Berlin')
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    assert result['blocked'] == []
    assert sorted((e['address'], e['count']) for e in result['challenged']) == [('192.0.2.60', 700)]


def test_the_same_decisions_when_the_counts_spill(tmp_path, files):
    text = (rotating('203.0.113.%d', 10, 20) + scraper('192.0.2.10', 1000) + request('192.0.2.30', TRAP)
            + browser('100.64.0.7', 1001) + ''.join(browser('10.%d.0.1' % i, 2) for i in range(200)))
    first = detect(tmp_path, files, text, '--trap-path', TRAP)
    files.blocklist.unlink()
    spilled = detect(tmp_path, files, text, '--trap-path', TRAP, '--count-budget', '50')
    assert blocked(first) == blocked(spilled) == [('192.0.2.10', 1000), ('192.0.2.30', 1)]
    assert challenged(first) == challenged(spilled) == [('203.0.113.0/24', 200, 'network 203.0.113.0/24, 10 addresses')]


def test_a_state_carries_the_signals_and_one_saved_without_the_profile_is_not_used(tmp_path, files):
    """A state saved by a run with the profile decides as a cold run; one saved without it
    (no signals counted) starts cold."""
    text = (rotating('203.0.113.%d', 10, 20) + scraper('192.0.2.10', 1000) + request('192.0.2.30', TRAP)
            + browser('100.64.0.7', 1001))
    log = tmp_path / 'access.log'
    log.write_text(text)
    base = files.options() + ['--server-ip', '198.51.100.1', '--now', NOW, '--json', '--trap-path', TRAP]
    for profile in (['--campaigns', '--trap-path', TRAP], []):
        state = tmp_path / ('state%d' % len(profile))
        state.mkdir()
        saved = run_core(base[:-2] + profile + ['--state-dir', state, '--blocklist', tmp_path / 'other', log])
        assert saved.returncode == 0, saved.stderr
        assert os.listdir(str(state))
        warm = json.loads(run_core(base + ['--campaigns', '--state-dir', state, '--check', log]).stdout)
        cold = json.loads(run_core(base + ['--campaigns', '--check', log]).stdout)
        assert warm['messages'][:-1] == cold['messages'][:-1] and warm['challenged'] == cold['challenged']
        assert [b['address'] for b in warm['blocked']] == ['192.0.2.10', '192.0.2.30']
        assert (warm['scans'][0]['mode'] == 'incremental') == bool(profile)       # else counted cold


def test_challenges_go_to_the_challenge_list_once_and_never_to_the_blocklist(tmp_path, files):
    """A campaign crafted to get a network of job seekers listed (16 addresses of it without
    browser behaviour, one request each) gets it challenged at most."""
    text = ''.join(browser('192.0.2.%d' % i, 3) for i in range(100, 140)) + rotating('192.0.2.%d', 16, 1)
    challenge_list = tmp_path / 'challenge.txt'
    runs = [detect(tmp_path, files, text, '--challenge-list', challenge_list, '--answer-dir', tmp_path / 'answers')
            for dummy in range(2)]
    for result in runs:
        assert [e['address'] for e in result['challenged']] == ['192.0.2.0/24'] and result['blocked'] == []
    assert 'Challenging IP address: 192.0.2.0/24 (RPH=16, network 192.0.2.0/24, 16 addresses)' in runs[0]['messages']
    assert challenge_list.read_bytes() == b'192.0.2.0/24\n'        # the second run listed it again nowhere
    assert files.read('blocklist') is None
    # Listed once; the second run's decision renews it (its expiry starts again), with its own line.
    assert mask_dates(files.read('activity_log')) == [
        b'IP addess 192.0.2.0/24 added to the challenge list (RPH=16, network 192.0.2.0/24, 16 addresses)'] * 2
    assert runs[1]['answers']['challenge']['renewed'] == ['192.0.2.0/24'] and runs[1]['answers']['challenge']['added'] == []


def test_without_a_challenge_list_challenges_are_said_and_warned_about(tmp_path, files):
    result = detect(tmp_path, files, rotating('203.0.113.%d', 16, 1))
    assert 'Challenging IP address: 203.0.113.0/24 (RPH=16, network 203.0.113.0/24, 16 addresses)' in result['messages']
    assert result['warnings'] == ['1 challenge decisions are not listed anywhere: challenge_list is not set (they never go '
                                  'to the blocklist)']


def test_what_is_never_blocked_is_never_listed(tmp_path, files):
    """The never-blocked predicate (decision/never_blocked.py): an allow-listed address keeps
    its trap hit and its network off every list; a trusted proxy too."""
    files.exclusions.write_bytes(b'203.0.113.9\n')
    text = (rotating('203.0.113.%d', 16, 1) + request('203.0.113.9', TRAP) + request('192.0.2.77', TRAP)
            + rotating('198.18.0.%d', 16, 1))
    result = detect(tmp_path, files, text, '--trap-path', TRAP, '--trusted-proxy', '198.18.0.5')
    assert blocked(result) == [('192.0.2.77', 1)]
    assert challenged(result) == []


@pytest.mark.parametrize('extra,fragment', [
    (['--rules', 'precise'], b'campaigns: the campaign profile works with the spec rules for now'),
    (['--campaign-ipv4-prefix', '7'], b'--campaign-ipv4-prefix 7: must be a whole number from 8 to 32'),
])
def test_what_the_profile_does_not_take_yet_is_refused(tmp_path, files, extra, fragment):
    log = tmp_path / 'access.log'
    log.write_text(scraper('192.0.2.10', 1000))
    got = run_core(files.options() + ['--server-ip', '198.51.100.1', '--now', NOW, '--campaigns'] + extra + [log])
    assert got.returncode == 2 and fragment in got.stderr and got.stdout == b'', got.stderr
    assert files.read('blocklist') is None


SIGNAL_PIECES = [b'"GET /job/', b'"GET /jobs/', b'GET /job/12', b'/job/x-7?', b'345', b'0',
                 b'"GET /static/a.css', b'"HEAD /i.PNG', b'.png', b'.js?', b'.woff2 ', b'] "GET /static/a.css', b'] "HEAD /i.png?v=1', b'] "GET /a.js"',
                 b'] ',
                 b'"GET /jobs/featured-x/', b'/jobs/featured-x/', b'/jobs/featured-y/', b'" 200 512 "https://s"',
                 b'" 404 - "-"', b'bot', b'Google', b'/files/', b' ', b'\t', b'"', b'10.0.0.5', b'2001:db8::1',
                 b'21/Nov/2026:10', b'21/Nov/2026:09', b'20/Nov/2026:23', b'\xff']


def per_line_campaign(line_filter, lines, stamp):
    """What the profile counts, line by line: the definition the chunked passes must agree with."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.rules import first_field
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import signals
    from collections import Counter
    counted = Counter()
    for line in lines:
        if stamp not in line:
            continue
        kept = line_filter.base.keep(line)
        if kept:
            counted[first_field(line)] += 1
        if signals._ASSET.match(line, line.find(b'] "')):
            counted[signals.ASSET + first_field(line)] += 1
        if kept and signals._REFERER.search(line):
            counted[signals.REFERRED + first_field(line)] += 1
            job = line_filter._job_id.search(line)
            if job:
                counted[signals.WALK + first_field(line) + b'/' + job.group(1)] += 1
        if line_filter._traps.search(line) and b'bot' not in line.lower() and b'Google' not in line:
            counted[signals.TRAP + first_field(line)] += 1
    return counted


def test_the_signals_chunk_by_chunk_equal_their_per_line_definition():
    """Assets, referers (and their job ids) and traps counted a stamp at a time from each chunk's lines (the
    windows' stamps, dense or not, and tracked ones), as each line alone would be: on random
    lines of the pieces the signals look for, blanks and tabs, stamps anywhere."""
    import random
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import signals, tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SPEC_JOB_PREFIXES
    stamps = [b'21/Nov/2026:10', b'21/Nov/2026:09', b'20/Nov/2026:23']
    rng = random.Random(45)
    for case in range(300):
        lines = [b''.join(rng.choice(SIGNAL_PIECES) for dummy in range(rng.randrange(12))) for dummy in range(rng.randrange(60))]
        if case % 2:    # most lines of the first stamp: the dense path
            lines = [line + b' [21/Nov/2026:10:00:00 +0000]' if i % 5 else line for i, line in enumerate(lines)]
        line_filter = signals.CampaignFilter(rules.LineFilter(SPEC_JOB_PREFIXES, 'Google'), ['/jobs/featured-x/', '/jobs/featured-y/'],
                                             'Google', SPEC_JOB_PREFIXES)
        counted = tally.Tally(stamps[:2], line_filter, tracked=stamps[2:])
        counted.chunk(b'\n'.join(lines) + b'\n' * (case % 3 == 0))
        for stamp in stamps:
            assert counted.counters[stamp] == per_line_campaign(line_filter, lines, stamp), (case, stamp)


def test_a_windows_counts_split_by_kind_as_each_key_alone_is():
    """The judgement's split of a window's counts into addresses and each signal's counts, by
    passes over all the keys, equals the per-key definition (a key starting with a tab is a
    signal's: its first two bytes the kind, the rest the address): on random keys, with and
    without the keys too short to cut by bytes (b'' and a tab alone), and a kind no signal has."""
    import random
    from collections import Counter
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.signals import split
    rng = random.Random(45)
    pieces = [b'\ta', b'\tr', b'\tt', b'\tw', b'\tz', b'10.0.0.5', b'2001:db8::1', b'/17', b'1', b' ', b'\xff']
    for case in range(200):
        counts = Counter(dict((b''.join(rng.choice(pieces) for dummy in range(rng.randrange(1, 4))), rng.randrange(1, 9))
                              for dummy in range(rng.randrange(40))))
        if case % 3 == 0:
            counts.update({b'': 2, b'\t': 3})
        addresses, signals = Counter(), {b'\ta': {}, b'\tr': {}, b'\tt': {}, b'\tw': {}}
        for key, count in counts.items():
            if key.startswith(b'\t'):
                signals.setdefault(key[:2], {})[key[2:]] = count
            else:
                addresses[key] = count
        assert split(counts) == (addresses, signals), case


def test_the_blocklists_content_answers_as_a_substring_search_however_many_keys_a_run_appends():
    """A campaign run appends thousands of trap hits and looks each new key up in the
    blocklist's content (the reference's substring rule): its faster content must answer as
    the plain bytes do, for keys inside appended keys, across the content read, short ones,
    with a newline, once its index of pieces is full, and when several appends come between two
    searches (their pieces are cut at the next search)."""
    import random
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.rules import AppendedContent
    rng = random.Random(45)

    def address():
        if rng.random() < 0.2:
            return ('2001:db8::%x' % rng.randrange(1 << 16)).encode()
        return ('%d.%d.%d.%d' % tuple(rng.choice([1, 10, 11, 110, 255, rng.randrange(256)]) for dummy in range(4))).encode()
    for case in range(60):
        read = b'\n'.join(address() for dummy in range(rng.randrange(5))) + rng.choice([b'', b'\n', b'1', b'1.2.3'])
        content, plain = AppendedContent(read), bytes(read)
        if case % 10 == 9:
            content.MOST = 5
        for dummy in range(80):
            key = address()
            probes = [key, key[1:], key[:-1], key[2:-2], key + b'1', b'1' + key, key[:5], b'\n' + key, read[-6:] + b'\n1']
            for probe in probes:
                assert (probe in content) == (probe in plain), (case, probe, plain)
            more = b'\n' + key + b'\n' + b''.join(b'\n' + address() + b'\n' for dummy in range(rng.randrange(3)))    # searched after several
            content += more
            plain += more
        assert bytes(content) == plain


def walking_browser(address, ids, minute=10):
    """A harvester faking a browser: a job page for each of ``ids``, each with a referer and
    its assets."""
    lines = []
    for i, number in enumerate(ids):
        page = '/job/%d' % number
        lines.append(request(address, page, minute + i % 30, i % 60, SITE + '/jobs/?q=cook'))
        lines.append(request(address, '/static/app.css', minute + i % 30, i % 60, SITE + page))
        lines.append(request(address, '/static/logo.png', minute + i % 30, i % 60, SITE + page))
    return ''.join(lines)


def test_a_browser_walking_job_ids_is_challenged_over_the_threshold_never_blocked(tmp_path, files):
    """Assets and referers do not hide a walk of ids: over the threshold a challenge (a NAT
    address's people may look at neighbouring jobs), never a block; people looking at
    scattered jobs (ids 7 apart) are spared as before."""
    result = detect(tmp_path, files, walking_browser('100.64.0.9', range(5000, 6000))
                    + browser('100.64.0.10', 1000))
    assert blocked(result) == [] and files.read('blocklist') is None
    assert challenged(result) == [('100.64.0.9', 1000, 'shared address, browser behaviour but walks job ids '
                                   '(1000 of 1000 next to another): 2000 assets, 1000 referers')]
    assert any('100.64.0.10 behaves as a browser and will not be blocked' in line for line in result['messages'])


@pytest.mark.parametrize('ids,walker', [
    (range(300, 320), True),                                  # 20 ids, each next to another: the threshold
    (range(300, 319), False),                                 # 19: one short
    (list(range(300, 319)) + [400], False),                   # 19 next to another, one alone
    (list(range(300, 320)) + list(range(1000, 1420, 20)), False),    # 20 of 41: under half
])
def test_a_walk_of_ids_counts_from_its_threshold(tmp_path, files, ids, walker):
    result = detect(tmp_path, files, walking_browser('192.0.2.60', ids), '--campaign-behaviour-threshold', '19')
    expected = [('192.0.2.60', len(ids), 'address, walks job ids (%d of %d next to another): %d assets, %d referers'
                 % (20, len(ids), 2 * len(ids), len(ids)))] if walker else []
    assert challenged(result) == expected
    assert blocked(result) == []


def test_walkers_count_towards_their_network_as_no_browser_does(tmp_path, files):
    """Sixteen addresses of one /24 each walking a few ids, faking a browser: the network's
    distinct addresses; below the walk threshold they are browsers, and nothing is decided."""
    text = ''.join(walking_browser('203.0.113.%d' % i, range(100 * i, 100 * i + 4)) for i in range(1, 17))
    result = detect(tmp_path, files, text, '--campaign-walk-ids', '4')
    assert challenged(result) == [('203.0.113.0/24', 64, 'network 203.0.113.0/24, 16 addresses')]
    assert challenged(detect(tmp_path, files, text, '--campaign-walk-ids', '5')) == []
