"""The campaign profile never blocks people for what a window alone hides (issue 45 §8): browser
behaviour judged over the decision step's windows together (a NAT address's people in the last
hour, its trap hit in this one; a network's job seekers a minute before the hour), a reader of
the site's other pages as a job seeker for their network, the lines of every log format as their
combined twins count, and the fleet's sum of an address that behaves as a browser here answered
as the host's own count would be. Through the command as a real process; the expected decisions
are written out by hand from the profile's rules."""
import pytest

import logformats
from conftest import Files, in_timezone
from test_campaigns import SITE, TRAP, blocked, challenged, detect, request, rotating, scraper

PREVIOUS, CURRENT = 10, 11          # the hours of a run at 11:0x


def browsing(address, pages, hour, minute=10):
    """``pages`` job pages, each with a referer from the site and two assets."""
    lines = []
    for i in range(pages):
        page = '/job/%d' % (i * 7)
        lines.append(request(address, page, minute + i % 30, i % 60, SITE + '/jobs/?q=cook', hour=hour))
        lines.append(request(address, '/static/app.css', minute + i % 30, i % 60, SITE + page, hour=hour))
        lines.append(request(address, '/static/logo.png', minute + i % 30, i % 60, SITE + page, hour=hour))
    return ''.join(lines)


def spared(result):
    return sorted(line.split()[2] for line in result['messages'] if 'behaves as a browser and will not be blocked' in line)


@pytest.mark.parametrize('trap_hour, browsing_hour, now', [
    (CURRENT, PREVIOUS, '2026-11-21 11:00:30'),     # people in the last hour, the trap hit at the top of this one
    (PREVIOUS, CURRENT, '2026-11-21 11:05:00'),     # the trap hit at 10:59, the people from 11:00
])
def test_a_trap_hit_next_to_browsing_in_the_other_window_is_a_challenge(tmp_path, files, trap_hour, browsing_hour, now):
    text = browsing('192.0.2.32', 4, browsing_hour, minute=0 if browsing_hour == CURRENT else 30)
    text += request('192.0.2.32', TRAP + '7', 59 if trap_hour == PREVIOUS else 0, 5, hour=trap_hour)
    text += request('192.0.2.30', TRAP + '7', 0, 5, hour=CURRENT)        # no browser anywhere: blocked
    result = detect(tmp_path, files, text, '--trap-path', TRAP, '--now', now)
    assert blocked(result) == [('192.0.2.30', 1)]
    # 1: the trap's own request, a job page's (it is under /jobs/); the behaviour, both hours'.
    assert challenged(result) == [('192.0.2.32', 1, 'trap, 1 hits, browser behaviour: 8 assets, 4 referers over both hours')]


def test_a_shared_address_over_the_threshold_keeps_its_browser_behaviour_across_the_hour(tmp_path, files):
    """A NAT address's people over the threshold in the previous hour, a few of them in this one
    and a burst of pages without assets: the window over the threshold is judged with both hours'
    behaviour, as one address of people."""
    text = browsing('192.0.2.40', 30, PREVIOUS, minute=20) + scraper('192.0.2.40', 25, minute=1, hour=CURRENT)
    result = detect(tmp_path, files, text, '--threshold', '20', '--now', '2026-11-21 11:05:00')
    assert blocked(result) == [] and challenged(result) == []
    assert spared(result) == ['192.0.2.40', '192.0.2.40']      # in each window


@pytest.mark.parametrize('seekers', ['previous hour', 'other pages only'])
def test_a_network_where_people_browse_is_never_blocked_whatever_answer_network_says(tmp_path, files, seekers):
    """20 addresses of 203.0.113.0/24 without browser behaviour, 15 pages each, in this hour: the
    network's verdict, a block with --answer-network block; a challenge when people browse there,
    in the previous hour or on pages other than job pages (a search, its assets)."""
    text = rotating('203.0.113.%d', 20, 15).replace('21/Nov/2026:10:', '21/Nov/2026:11:')
    (tmp_path / 'alone').mkdir()
    alone = detect(tmp_path / 'alone', Files(tmp_path / 'alone' / 'files'), text, '--answer-network', 'block', '--now',
                   '2026-11-21 11:40:00')
    assert ('203.0.113.0/24', 300) in blocked(alone)
    if seekers == 'previous hour':
        people = ''.join(browsing('203.0.113.%d' % (200 + i), 3, PREVIOUS, minute=55) for i in range(3))
    else:
        people = (request('203.0.113.200', '/search?q=nurse', 20, 1, 'https://www.example.net/', hour=CURRENT)
                  + request('203.0.113.200', '/static/app.css', 20, 2, SITE + '/search?q=nurse', hour=CURRENT)
                  + request('203.0.113.200', '/static/app.js', 20, 2, SITE + '/search?q=nurse', hour=CURRENT))
    (tmp_path / 'people').mkdir()
    result = detect(tmp_path / 'people', files, people + text, '--answer-network', 'block', '--now', '2026-11-21 11:40:00',
                    '--challenge-list', tmp_path / 'challenge.txt', '--answer-dir', tmp_path / 'answers')
    assert blocked(result) == []
    assert [entry[:2] for entry in challenged(result)] == [('203.0.113.0/24', 300)]


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_every_log_format_counts_a_browsers_assets_and_a_trap_hit_as_its_combined_twin(tmp_path, files, fmt):
    """Assets and trap paths hold no job page's path: a format's reader that decoded only lines
    holding one made a NAT address of people a scraper and missed the trap."""
    combined = (browsing('198.18.0.1', 30, 10, minute=10) + scraper('198.18.0.2', 25)
                + request('192.0.2.77', '/private-listing/1', 20, 5)).encode()
    rendered, twins = in_timezone('UTC', lambda: logformats.render_log(fmt, combined, style=0, vary=False))
    options = ('--threshold', '20', '--trap-path', '/private-listing/')
    (tmp_path / 'twin').mkdir()
    expected = detect(tmp_path / 'twin', Files(tmp_path / 'twin' / 'files'), twins.decode(), *options)
    got = detect(tmp_path, files, rendered.decode('utf-8', 'replace'), '--log-format', fmt, *options)
    assert (blocked(got), challenged(got), spared(got)) == (blocked(expected), challenged(expected), spared(expected))
    assert ('192.0.2.77', 0) in blocked(got) and ('198.18.0.2', 25) in blocked(got)
    if fmt != 'haproxy':        # HAProxy logs no referer: no address behaves as a browser there
        assert spared(got) == ['198.18.0.1']


def test_an_ipv4_mapped_client_counts_towards_its_ipv4_network(tmp_path, files):
    """A dual-stack server logs its IPv4 clients as ::ffff:a.b.c.d: 30 of them in 203.0.113.0/24,
    5 pages each, are that network's, as the same clients logged as IPv4 are (and as the
    allow-list and the enforcement take a mapped address)."""
    plain = rotating('203.0.113.%d', 30, 5)
    mapped = plain.replace('203.0.113.', '::ffff:203.0.113.')
    (tmp_path / 'plain').mkdir()
    expected = detect(tmp_path / 'plain', Files(tmp_path / 'plain' / 'files'), plain, '--check')
    got = detect(tmp_path, files, mapped, '--check')
    assert [entry[:2] for entry in challenged(expected)] == [('203.0.113.0/24', 150)]
    assert challenged(got) == challenged(expected)


def test_the_other_hour_never_takes_a_browsers_behaviour_away(tmp_path, files):
    """200 pages without assets at 10:30, then 30 pages as a browser and a trap hit after 11:00:
    over both hours no browser, in its own hour one; the other hour only adds people, so the
    trap hit from it is at most a challenge, as the previous hour's pages (a behaviour verdict) are."""
    text = (scraper('192.0.2.50', 200, minute=30, hour=PREVIOUS) + browsing('192.0.2.50', 30, CURRENT, minute=1)
            + request('192.0.2.50', TRAP + '7', 20, 5, hour=CURRENT))
    result = detect(tmp_path, files, text, '--trap-path', TRAP, '--now', '2026-11-21 11:40:00')
    assert blocked(result) == []
    assert [entry[0] for entry in challenged(result)] == ['192.0.2.50']      # a key once a run


def test_the_sliding_hour_judges_behaviour_by_the_hours_own_lines(tmp_path, files):
    """The sliding estimate holds part of the previous hour: behaviour is judged by the two hours'
    own lines added up once (1200 pages, 600 assets, 1000 referers: a browser), not by them plus
    that part again (about 1380 pages: no longer one)."""
    text = scraper('192.0.2.150', 200, minute=30, hour=PREVIOUS)
    for i in range(1000):
        page = '/job/%d' % (i * 7)
        text += request('192.0.2.150', page, 1 + i % 30, i % 60, SITE + '/jobs/?q=cook', hour=CURRENT)
        if i % 5 < 3:
            text += request('192.0.2.150', '/static/app.css', 1 + i % 30, i % 60, SITE + page, hour=CURRENT)
    result = detect(tmp_path, files, text, '--sliding-hour', '--now', '2026-11-21 11:05:00')
    assert blocked(result) == [] and spared(result) == ['192.0.2.150']


def test_a_host_that_saw_an_address_browse_in_the_other_hour_spares_the_fleets_sum_of_it(tmp_path, files):
    """No line of it in this hour here, people from it in the last one; the fleet's sum in this
    hour crosses the threshold: answered as this host's own count would be (the fleet's records
    handed to the decision step as a fleet run hands them)."""
    import calendar
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.choice import rules_for
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.run import decide_and_append
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.tally import WindowCounts
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.result import Result
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    settings = Settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions), activity_log=str(files.activity_log),
                        server_ips=['10.0.0.5'], campaigns=True)
    rules = rules_for(settings)
    windows = hour_windows(calendar.timegm((2026, 11, 21, 11, 40, 0)))
    previous = rules.line_filter
    from collections import Counter
    counters = [Counter(), Counter()]
    lines = browsing('192.0.2.90', 40, PREVIOUS).encode().split(b'\n')[:-1]
    previous.count_into(lines, counters[0])
    counts = WindowCounts(windows, counters)
    counts.fleet_records = {windows[1].stamp: [(1500, b'192.0.2.90'), (1200, b'192.0.2.91')]}
    result = Result(check_mode=True)
    decide_and_append(result, settings, rules, counts, [b'10.0.0.5'], expire_bans=False)
    assert result.appended == [b'192.0.2.91']       # no line of it here: the fleet's block
    assert any(line.startswith('IP address 192.0.2.90 behaves as a browser and will not be blocked (1500 requests')
               for line in result.messages), result.messages


def test_a_judgement_outside_a_decision_step_is_of_the_counts_as_they_are():
    """A caller that ranks and judges a window again and again as it grows (the campaign bench's
    replay, once a minute), without a decision step around them: each time on the counts as they
    are then (a split kept from the first call hid every later line: the bench listed nothing)."""
    from collections import Counter
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.campaigns import CampaignRules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    rules = CampaignRules(Settings(campaigns=True))
    counter = Counter({b'192.0.2.70': 10})
    for grown, decided in ((0, {}), (1490, {b'192.0.2.70': 'block'})):
        counter[b'192.0.2.70'] += grown
        records = rules.examined(counter, [b'10.0.0.5'], 20)
        assert records == [(10 + grown, b'192.0.2.70')]
        ranked, others = rules.campaigns.judge(counter, records, [b'10.0.0.5'])
        assert dict((key, decision.answer) for key, decision in ranked.items()) == decided


def test_a_decision_after_a_ranking_outside_a_step_decides_the_lines_counted_since(tmp_path, files):
    """A follower's metrics rank its live counts between two decision steps; the counts grow; the
    next step decides on them as they are now (it kept nothing of that ranking)."""
    import calendar
    from collections import Counter
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.choice import rules_for
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.run import decide_and_append
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.tally import WindowCounts
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.result import Result
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    settings = Settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions), activity_log=str(files.activity_log),
                        server_ips=['10.0.0.5'], campaigns=True)
    rules = rules_for(settings)
    windows = hour_windows(calendar.timegm((2026, 11, 21, 11, 40, 0)))
    previous, current = Counter(), Counter({b'192.0.2.70': 10})
    for counter in (previous, current):
        rules.examined(counter, [b'10.0.0.5'], 1)        # the metrics' ranking (follower_state.write_metrics)
    current[b'192.0.2.70'] += 1490
    result = Result(check_mode=True)
    decide_and_append(result, settings, rules, WindowCounts(windows, [previous, current]), [b'10.0.0.5'], expire_bans=False,
                      records_under=False)
    assert result.appended == [b'192.0.2.70']
