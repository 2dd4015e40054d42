"""Which decision gets which answer (issue 46 item 2, issue 45 item 8): a setting per kind of
decision, answer_address, answer_trap, answer_behaviour, answer_shared, answer_network and
answer_as, each changing its own kind's list and no other's; the defaults are the campaign
profile's answers as before; the safety rules hold whatever the settings (an AS never blocked,
a shared address never blocked, a network that carries job seekers at most challenged). One
small log with a decision of every kind, run through the command as a real process; the
expected lists are written out by hand from the profile's rules."""
import json

import pytest

from conftest import mask_dates, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
from test_asn_database import write_tsv
from test_campaigns import NOW, TRAP, browser, request, rotating, scraper, walking_browser

SERVER = '10.9.9.9'         # in the seekers' ISP of test_asn_database's ASES, never decided


def every_kind():
    """A log with one decision of each kind, and the key each one lists."""
    text = scraper('192.0.2.10', 1000)                                   # address: the reference's rule
    text += request('192.0.2.30', TRAP + '7')                            # trap, no browser behaviour
    text += browser('192.0.2.32', 4) + request('192.0.2.32', TRAP + '7')   # trap from a browser
    text += scraper('192.0.2.20', 100)                                   # behaviour alone
    text += browser('100.64.0.7', 1200)                                  # shared address (threshold 1200 below)
    text += walking_browser('100.64.0.9', range(5000, 6000))             # shared address over threshold, walking ids
    text += walking_browser('100.64.1.60', range(5000, 5120))            # behaviour: a browser walking ids
    text += rotating('203.0.113.%d', 16, 1)                              # network, no job seeker in it
    text += rotating('198.51.100.%d', 16, 1) + browser('198.51.100.200', 3)    # network with a job seeker
    text += ''.join(scraper('10.128.%d.9' % i, 1) for i in range(20))   # AS65536's range (one /24 each)
    return text


KEYS = {
    'address': ['192.0.2.10'],
    'trap': ['192.0.2.30'],
    'trap_browser': ['192.0.2.32'],
    'behaviour': ['192.0.2.20'],
    'shared': ['100.64.0.7', '100.64.0.9'],
    'walker': ['100.64.1.60'],
    'network': ['203.0.113.0/24'],
    'network_seekers': ['198.51.100.0/24'],
    'as': ['10.128.0.0/12'],
}
# The defaults: the reference's rule and a trap hit without browser behaviour blocked, the rest challenged.
DEFAULTS = {'address': 'block', 'trap': 'block', 'trap_browser': 'challenge', 'behaviour': 'challenge',
            'walker': 'challenge', 'shared': 'challenge', 'network': 'challenge', 'network_seekers': 'challenge', 'as': 'challenge'}
LIST = {'block': 'blocklist', 'throttle': 'throttle', 'challenge': 'challenge'}


def run(tmp_path, files, *extra, lists=True):
    files.base.mkdir(parents=True, exist_ok=True)
    files.throttle = files.base / 'throttle.txt'
    files.challenge = files.base / 'challenge.txt'
    log = tmp_path / 'access.log'
    log.write_text(every_kind())
    answers = ['--throttle-list', files.throttle, '--challenge-list', files.challenge,
               '--answer-dir', tmp_path / 'answers'] if lists else []
    return run_core(files.options() + answers + [
        '--server-ip', SERVER, '--now', NOW, '--campaigns', '--json', '--trap-path', TRAP,
        '--campaign-shared-threshold', '1200', '--asn-database', write_tsv(tmp_path / 'ip2asn.tsv')]
        + list(extra) + [log])


def listed(files):
    """{list: sorted keys} of the three lists as the run left them."""
    return dict((name, sorted((files.read(name) or b'').decode().split())) for name in LIST.values())


def expected(answers):
    found = dict((name, []) for name in LIST.values())
    for kind, answer in answers.items():
        found[LIST[answer]].extend(KEYS[kind])
    return dict((name, sorted(keys)) for name, keys in found.items())


def test_the_defaults_answer_each_kind_as_the_campaign_profile_did(tmp_path, files):
    got = run(tmp_path, files)
    assert got.returncode == 0, got.stderr
    assert listed(files) == expected(DEFAULTS)
    result = json.loads(got.stdout)
    assert result['throttled'] == []
    assert sorted(entry['address'] for entry in result['challenged']) == expected(DEFAULTS)['challenge']


@pytest.mark.parametrize('setting,answer,changed', [
    ('address', 'challenge', {'address': 'challenge'}),
    ('address', 'throttle', {'address': 'throttle'}),
    # A trap hit from an address with browser behaviour (a NAT address, a mail scanner) is at most a challenge.
    ('trap', 'throttle', {'trap': 'throttle', 'trap_browser': 'throttle'}),
    ('trap', 'challenge', {'trap': 'challenge'}),
    # A walker behaves as a browser: at most a challenge.
    ('behaviour', 'block', {'behaviour': 'block'}),
    ('behaviour', 'throttle', {'behaviour': 'throttle', 'walker': 'throttle'}),
    ('shared', 'throttle', {'shared': 'throttle'}),
    # A network is blocked only where no address in it behaved as a browser: the other is challenged.
    ('network', 'block', {'network': 'block'}),
    ('network', 'throttle', {'network': 'throttle', 'network_seekers': 'throttle'}),
    ('as', 'throttle', {'as': 'throttle'}),
])
def test_each_kinds_setting_changes_its_own_decisions_list_and_no_others(tmp_path, files, setting, answer, changed):
    got = run(tmp_path, files, '--answer-' + setting, answer)
    assert got.returncode == 0, got.stderr
    assert listed(files) == expected(dict(DEFAULTS, **changed))


def test_a_softer_answer_is_listed_with_its_reason(tmp_path, files):
    got = run(tmp_path, files, '--answer-network', 'throttle', '--answer-trap', 'challenge')
    assert got.returncode == 0, got.stderr
    result = json.loads(got.stdout)
    assert ('203.0.113.0/24', 16, 'network 203.0.113.0/24, 16 addresses') in [
        (entry['address'], entry['count'], entry['reason']) for entry in result['throttled']]
    activity = mask_dates(files.read('activity_log'))
    assert b'IP addess 203.0.113.0/24 added to the throttle list (RPH=16, network 203.0.113.0/24, 16 addresses)' in activity
    assert (b'IP addess 192.0.2.30 added to the challenge list (RPH=1, trap, 1 hits, no browser behaviour: '
            b'0 assets, 0 referers)') in activity
    assert 'Throttling IP address: 203.0.113.0/24 (RPH=16, network 203.0.113.0/24, 16 addresses)' in result['messages']


@pytest.mark.parametrize('setting,answer', [
    ('trap', 'challenge'), ('trap', 'throttle'), ('behaviour', 'throttle'), ('shared', 'throttle'),
    ('network', 'throttle'), ('as', 'throttle'), ('address', 'challenge')])
def test_an_answer_set_without_its_list_is_refused(tmp_path, files, setting, answer):
    got = run(tmp_path, files, '--answer-' + setting, answer, lists=False)
    assert got.returncode == 2
    assert got.stderr == b'bot-detector: error: answer_%s: %s needs %s_list\n' % (
        setting.encode(), answer.encode(), answer.encode())
    assert files.read('blocklist') is None and files.read('activity_log') is None


def test_the_default_challenges_without_a_challenge_list_are_said_as_before(tmp_path, files):
    got = run(tmp_path, files, lists=False)
    assert got.returncode == 0, got.stderr
    assert sorted(files.read('blocklist').decode().split()) == ['192.0.2.10', '192.0.2.30']


@pytest.mark.parametrize('setting', ['as', 'shared'])
def test_an_as_or_a_shared_address_is_never_blocked(tmp_path, files, setting):
    """An AS carries job seekers, a shared address hundreds of people: block is not an answer
    either setting takes (one line, exit status 2, nothing written)."""
    got = run(tmp_path, files, '--answer-' + setting, 'block')
    assert got.returncode == 2
    assert got.stderr == (b"bot-detector: error: argument --answer-%s: invalid choice: 'block' "
                          b"(choose from 'throttle', 'challenge')\n" % setting.encode())
    assert files.read('blocklist') is None and files.read('activity_log') is None
    # The same from the host config file or the module: the row's own check.
    with pytest.raises(BotDetectorError) as raised:
        Settings(**{'answer_' + setting: 'block'})
    assert raised.value.message == "answer_%s: must be one of throttle, challenge, got 'block'" % setting


def test_a_reasons_own_parentheses_are_kept_as_brackets_and_its_line_read_back(tmp_path, files):
    """The activity line holds the reason in parentheses, read back by its pattern (expiry,
    unblock): a reason's own parentheses (an id walk's, a hosting AS's) become brackets, not
    the underscores of anything else unsafe."""
    import re
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.messages import (
        ACTIVITY_ANSWERED_PATTERN)
    got = run(tmp_path, files)
    assert got.returncode == 0, got.stderr
    lines = [line for line in files.read('activity_log').splitlines() if b' 100.64.1.60 added to the challenge list' in line]
    assert len(lines) == 1 and b'walks job ids [' in lines[0] and b'_' not in lines[0], lines
    assert re.search(ACTIVITY_ANSWERED_PATTERN, lines[0]).group(1) == b'100.64.1.60'
