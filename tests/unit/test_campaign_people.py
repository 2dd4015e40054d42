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
    assert challenged(result) == [('192.0.2.32', 1, 'trap, 1 hits, browser behaviour: 8 assets, 4 referers')]


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
