"""A follower with the campaign profile judges every key of its windows at a pace
(follower_state.Judgements), and between two judgements decides its ranked records only
(decision/between.py): the steps in between decide no record otherwise than a judgement would,
and leave a browser to it. Its decision steps' warnings are said once, not at every step."""
import signal
import time
from collections import Counter

from hypothesis import given, settings as hsettings, strategies as st

from conftest import Files
from test_campaign_people import browsing
from test_campaigns import TRAP, request, scraper
from test_follow import Following, blocked, wait_for

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.between import judge_ranked
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.campaigns import CampaignRules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.rules import SpecRules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.signals import ASSET, REFERRED, split
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

NOW = 1795258800 + 50 * 60          # 2026-11-21 11:50 UTC: the windows 10 and 11
SERVER = '10.0.0.5'
ADDRESSES = ['192.0.2.%d' % i for i in range(1, 9)] + ['198.51.100.%d' % i for i in range(1, 5)] + [SERVER]

# An address's counts in one window: job pages, assets, job pages with a referer.
WINDOW = st.fixed_dictionaries({'pages': st.integers(0, 40), 'assets': st.integers(0, 50), 'referred': st.integers(0, 40)})


def counter_of(counts):
    counter = Counter()
    for address, found in counts.items():
        key = address.encode('ascii')
        for kind, count in ((b'', found['pages']), (ASSET, found['assets']), (REFERRED, min(found['referred'], found['pages']))):
            if count:
                counter[kind + key] = count
    return counter


@hsettings(max_examples=300, deadline=None)
@given(previous=st.dictionaries(st.sampled_from(ADDRESSES), WINDOW, max_size=8),
       current=st.dictionaries(st.sampled_from(ADDRESSES), WINDOW, max_size=12),
       fleet=st.lists(st.tuples(st.integers(15, 80), st.sampled_from(ADDRESSES)), max_size=4),
       same_window=st.booleans())
def test_a_step_between_judgements_decides_each_record_as_the_judgement_does_or_leaves_a_browser_to_it(
        previous, current, fleet, same_window):
    """Random windows of addresses, their pages, assets and referers (the same counter twice: a
    DST night's repeated hour), and the fleet's records: the ranking of a follower's step is the
    one the judgement ranks; each record and fleet record the step decides has the judgement's
    decision (kind, answer, reason), except a browser, which it spares (answer None) where the
    judgement spares or challenges it; it decides no other key."""
    settings = Settings(campaigns=True, threshold=20, campaign_shared_threshold=30, campaign_behaviour_threshold=25)
    rules = CampaignRules(settings)
    campaigns = rules.campaigns
    windows = [counter_of(current)] * 2 if same_window else [counter_of(previous), counter_of(current)]
    servers = [SERVER.encode('ascii')]
    for counter in windows:
        records = rules.examined(counter, servers, 3, at_least=settings.threshold)
        assert records == SpecRules.examined(rules, split(counter)[0], servers, 3, at_least=settings.threshold)
        fleet_records = [(count, address.encode('ascii')) for count, address in fleet if (count, address.encode('ascii')) not in records]
        campaigns.step_done()
        view = campaigns.behaviour_view(windows)
        judged, others = campaigns.judge(counter, records, servers, fleet_records, view)
        campaigns.step_done()
        between, none = judge_ranked(campaigns, counter, records, fleet_records, windows)
        assert none == []
        assert set(between) <= set(judged)
        assert set(key for count, key in records if count >= settings.threshold) <= set(between)
        for key, decision in between.items():
            full = judged[key]
            if decision.answer is None:     # the judgement's shown behaviour, after its walk of job ids if any
                assert full.kind == 'shared' and full.answer in (None, 'challenge')
                assert full.reason.endswith(decision.reason.split(': ', 1)[1])
            else:
                assert (decision.kind, decision.answer, decision.reason, decision.count) == (full.kind, full.answer, full.reason, full.count)
        for key, full in judged.items():        # what the step leaves out: a fleet record the judgement spares as a browser's, none other
            assert key in between or (full.kind == 'shared' and any(key == address for count, address in fleet_records))


def run_follower(tmp_path, text, *extra):
    files = Files(tmp_path / 'files')
    log = tmp_path / 'access.log'
    log.write_text(text)
    return files, log, Following(tmp_path, files, log, now=NOW, extra=['--campaigns', '--trap-path', TRAP] + list(extra))


def test_a_follower_blocks_a_scraper_spares_people_challenges_them_at_a_judgement_and_judges_the_last_lines_unprompted(tmp_path):
    """A follower with the profile (threshold 50 in these tests), a challenge list: a NAT address
    of people over the shared threshold is challenged, never blocked, while a scraper written in
    the same second is blocked; a trap hit written last, with no line after it, is blocked by a
    judgement that no line prompts."""
    challenge = tmp_path / 'challenge.txt'
    files, log, following = run_follower(tmp_path, '', '--campaign-shared-threshold', '60', '--challenge-list', challenge,
                                         '--answer-dir', tmp_path / 'answers')
    with following as follower:
        with open(str(log), 'a') as out:
            out.write(browsing('192.0.2.40', 70, 11, minute=10) + scraper('192.0.2.66', 60, minute=15, hour=11))
        wait_for(lambda: blocked(files) == [b'192.0.2.66'], 15, 'the scraper blocked')
        wait_for(lambda: challenge.exists() and b'192.0.2.40' in challenge.read_bytes(), 15, 'the people challenged')
        with open(str(log), 'a') as out:
            out.write(request('192.0.2.77', TRAP + '7', 40, 1, hour=11))
        wait_for(lambda: b'192.0.2.77' in blocked(files), 15, 'the trap hit judged')
        assert blocked(files) == [b'192.0.2.66', b'192.0.2.77']
        assert follower.stop(signal.SIGTERM) == 0


def test_a_followers_steps_say_a_warning_once_not_at_each_step(tmp_path):
    """Challenges without a challenge list: said at the first judgement that has one, not again
    at the steps and judgements after it (twice a second while lines come), though the count grows."""
    files, log, following = run_follower(tmp_path, '', '--campaign-behaviour-threshold', '10')
    with following as follower:
        for minute in range(4):
            with open(str(log), 'a') as out:
                out.write(''.join(scraper('203.0.113.%d' % i, 12, minute=10 + minute, hour=11) for i in range(1 + 5 * minute, 6 + 5 * minute)))
            time.sleep(1.2)
        time.sleep(2.5)        # a judgement after the last lines; the follower's last, at SIGTERM, too
        assert follower.stop(signal.SIGTERM) == 0
        said = [line for line in follower.proc.stderr.read().decode().splitlines() if 'are not listed anywhere' in line]
    assert len(said) == 1, said
    assert blocked(files) == []
