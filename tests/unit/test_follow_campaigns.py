"""A follower with the campaign profile judges every key of its windows at a pace
(follower_state.Judgements), and between two judgements decides its ranked records only
(decision/between.py): the steps in between decide no record otherwise than a judgement would,
and leave a browser to it. Its decision steps' warnings are said once, not at every step."""
import fcntl
import os
import signal
import time
from collections import Counter

from hypothesis import given, settings as hsettings, strategies as st

from conftest import Files
from test_campaign_people import browsing
from test_campaigns import TRAP, request, scraper
from test_follow import Following, blocked, wait_for

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import messages
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.between import judge_ranked
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.follower_state import OnceAnHour
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.campaigns import CampaignRules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.rules import SpecRules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists.writer import lock_file
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


def test_a_followers_steps_say_once_an_hour_only_that_decisions_have_no_list():
    """The one warning every judgement would say again (its count grows) is said once an hour, per
    answer; any other, a failure of the enforcement that comes back included, each time."""
    said = []
    warn = OnceAnHour(said.append)
    unlisted = [messages.ANSWERS_UNLISTED % (count, kind, kind) for count, kind in
                ((5, 'challenge'), (10, 'challenge'), (2, 'throttle'), (21, 'challenge'), (3, 'throttle'))]
    failed = 'enforcement nginx: nginx -t failed (exit status 1): the blocklist is not enforced'
    for line in unlisted[:2] + [failed] + unlisted[2:] + [failed]:
        warn(line)
    assert said == [unlisted[0], failed, unlisted[2], failed]


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


def write(log, text):
    with open(str(log), 'a') as out:
        out.write(text)


class LockHeld:
    """The blocklist's lock, held by this process (as a cron run or an --unblock holds it)."""

    def __init__(self, files):
        self.path = lock_file(str(files.blocklist))

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def test_past_the_count_budget_a_follower_with_the_profile_blocks_a_scraper(tmp_path):
    """Its counts spilled to files (count_budget 50, 400 one-request addresses between the
    scraper's pages): its steps rank the files' counts too."""
    files, log, following = run_follower(tmp_path, '', '--count-budget', '50')
    with following:
        write(log, scraper('192.0.2.66', 40, minute=15, hour=11))
        time.sleep(1)
        write(log, ''.join(request('203.0.%d.%d' % (i // 200, i % 200 + 1), '/job/1', 20, hour=11) for i in range(400)))
        time.sleep(1)
        write(log, scraper('192.0.2.66', 20, minute=16, hour=11))
        wait_for(lambda: blocked(files) == [b'192.0.2.66'], 15, 'the scraper blocked')


def test_past_the_count_budget_a_follower_never_blocks_a_browser_whose_assets_spilled(tmp_path):
    """A NAT address's people load their pages' assets, 400 one-request addresses spill the counts
    to files (count_budget 50), then 10 pages more with their assets cached: 55 pages, 90 assets,
    55 referers, a browser. Past the budget every step is a judgement: one between, looking its
    signals up in memory only, saw '0 assets' and blocked it."""
    files, log, following = run_follower(tmp_path, '', '--count-budget', '50', '--campaign-shared-threshold', '1000')
    with following as follower:
        write(log, browsing('192.0.2.40', 45, 11, minute=10))
        time.sleep(1)
        write(log, ''.join(request('203.0.%d.%d' % (i // 200, i % 200 + 1), '/job/1', 20, hour=11) for i in range(400)))
        time.sleep(3)
        write(log, request('198.51.100.1', '/job/1', 30, hour=11))
        time.sleep(0.6)
        write(log, ''.join(request('192.0.2.40', '/job/%d' % (500 + i), 25 + i, 0, 'https://jobs.example/jobs/?q=cook', hour=11)
                           for i in range(10)))
        time.sleep(3)
        assert follower.stop(signal.SIGTERM) == 0
    assert blocked(files) == []


def test_an_allow_list_changed_on_a_quiet_log_is_judged(tmp_path):
    """A trap hit from an allow-listed address, then the entry taken out, and no line more: the
    change is judged (as a run's would block it), not left until lines come."""
    files, log, following = run_follower(tmp_path, '')
    files.exclusions.write_bytes(b'192.0.2.77\n')
    with following:
        write(log, request('192.0.2.77', TRAP + '7', 40, 1, hour=11))
        time.sleep(3)
        assert blocked(files) == []
        files.exclusions.write_bytes(b'')
        wait_for(lambda: blocked(files) == [b'192.0.2.77'], 10, 'the allow-list change judged')


def test_a_wait_for_the_blocklists_lock_does_not_put_the_next_judgement_off(tmp_path):
    """Another process holds the blocklist's lock for 4 s while the follower would judge: its
    judgements are paced by their own CPU time, so a trap hit after it is judged within seconds
    (a pace by the step's wall time put it off by 20 times the wait)."""
    files, log, following = run_follower(tmp_path, '')
    with following:
        time.sleep(2.5)     # its first judgement 2 s ago at least: the next step is one
        with LockHeld(files):
            write(log, scraper('192.0.2.10', 1, minute=12, hour=11))
            time.sleep(4)
        time.sleep(1)
        write(log, request('192.0.2.77', TRAP + '7', 40, 1, hour=11))
        wait_for(lambda: blocked(files) == [b'192.0.2.77'], 10, 'the trap hit judged')


def test_a_followers_sliding_hour_is_weighed_by_its_own_clock(tmp_path):
    """--sliding-hour in a follower whose clock starts at 11:55 (--now): the previous hour's 48
    requests (under the threshold of 50 there) weigh 5/60 or a little less (4 or 3), beside 45 of
    this hour: under the threshold; beside 47, at it: blocked. By the wall clock at any minute
    before :53 they weighed more, and 45 were blocked too."""
    for current, expected in ((45, []), (47, [b'192.0.2.9'])):
        (tmp_path / str(current)).mkdir()
        files, log, following = run_follower(tmp_path / str(current), scraper('192.0.2.9', 48, minute=20, hour=10)
                                             + scraper('192.0.2.9', current, minute=20, hour=11), '--sliding-hour')
        following.now = NOW + 5 * 60
        with following as follower:
            time.sleep(1)
            assert follower.stop(signal.SIGTERM) == 0
        assert blocked(files) == expected
