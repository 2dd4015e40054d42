"""The answer lists (issue 46): throttle_list and challenge_list written with the blocklist's
guarantees: the lock, append-only, the exemptions, the width guards, expiry, --unblock,
--status; and the answers' directory nginx reads (enforce/answer_files.py)."""
import os
import time

import pytest

from conftest import run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import answer_files
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import answers
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

SERVER = '10.9.9.9'


@pytest.fixture
def lists(files, tmp_path):
    files.base.mkdir(parents=True, exist_ok=True)
    files.throttle = tmp_path / 'files' / 'throttle.txt'
    files.challenge = tmp_path / 'files' / 'challenge.txt'
    files.answer_dir = tmp_path / 'answers'
    files.exclusions.write_bytes(b'198.51.100.7\n2001:db8:aaaa::/48\n')
    files.blocklist.write_bytes(b'192.0.2.1\n')
    return files


def options(files):
    return files.options() + ['--throttle-list', files.throttle, '--challenge-list', files.challenge,
                              '--answer-dir', files.answer_dir, '--server-ip', SERVER, '--trusted-proxy', '172.16.0.0/12']


def settings_of(files, **more):
    return Settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                    activity_log=str(files.activity_log), throttle_list=str(files.throttle),
                    challenge_list=str(files.challenge), answer_dir=str(files.answer_dir), server_ips=[SERVER], **more)


def test_hand_decisions_are_appended_with_their_activity_lines(lists):
    got = run_core(options(lists) + ['--challenge', '203.0.113.7', '--challenge', '2001:db8:1:2::/64'])
    assert got.returncode == 0, got.stderr
    assert got.stdout == (b'Challenging IP address: 203.0.113.7 (by hand)\n'
                          b'Challenging IP address: 2001:db8:1:2::/64 (by hand)\n')
    assert lists.challenge.read_bytes() == b'203.0.113.7\n2001:db8:1:2::/64\n'
    activity = lists.activity_log.read_bytes().splitlines()
    assert [line.split(b' | ')[1] for line in activity] == [
        b'IP addess 203.0.113.7 added to the challenge list (by hand)',
        b'IP addess 2001:db8:1:2::/64 added to the challenge list (by hand)']
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n'        # never the blocklist
    assert not lists.throttle.exists()
    again = run_core(options(lists) + ['--challenge', '203.0.113.7'])
    assert again.returncode == 0, again.stderr
    assert lists.challenge.read_bytes() == b'203.0.113.7\n2001:db8:1:2::/64\n'     # listed once; its time starts again
    assert lists.activity_log.read_bytes().count(b'203.0.113.7 added to the challenge list') == 2


def test_an_operators_list_is_appended_to_never_rewritten(lists):
    lists.throttle.write_bytes(b'# by hand\n203.0.113.0/24')        # no newline at its end
    got = run_core(options(lists) + ['--throttle', '198.51.100.9'])
    assert got.returncode == 0, got.stderr
    assert lists.throttle.read_bytes() == b'# by hand\n203.0.113.0/24\n198.51.100.9\n'


NEVER = 'it is or holds an address never blocked'


@pytest.mark.parametrize('entry,why', [
    ('127.0.0.1', NEVER), ('::1', NEVER), (SERVER, NEVER), ('::ffff:10.9.9.9', NEVER),
    ('198.51.100.7', NEVER), ('198.51.100.0/24', NEVER),      # a network holding an allow-listed address
    ('2001:db8:aaaa:1::/64', NEVER), ('2001:DB8:AAAA:0::5', NEVER), ('172.20.1.1', NEVER),
    ('10.0.0.0/7', 'wider than a /8 (enforcement_min_prefix_v4)'), ('2001:db8::/31', 'wider than a /32'),
    ('not-an-address', 'not an address or CIDR network'), ('203.0.113.300', 'not an address'),
    # A network written with host bits: a typo (a /22 for a /24) would challenge four times the
    # addresses meant, so it is refused, naming the network it would have been.
    ('203.0.113.0/22', 'host bits set (its network is 203.0.112.0/22)'),
    ('2001:db8:bbbb::1/64', 'host bits set (its network is 2001:db8:bbbb::/64)'),
    ('::ffff:203.0.113.1/120', 'host bits set (its network is 203.0.113.0/24)'),
])
def test_what_is_never_blocked_is_never_answered_either(lists, entry, why):
    for kind in ('throttle', 'challenge'):
        got = run_core(options(lists) + ['--' + kind, entry])
        assert got.returncode == 0, got.stderr
        assert got.stdout == b''
        assert got.stderr.startswith(b'bot-detector: warning: %s list: %s refused: ' % (kind.encode(), entry.encode()))
        assert why.encode() in got.stderr
        assert not getattr(lists, kind).exists()
    assert not lists.activity_log.exists()


def test_a_list_must_be_set_and_must_not_be_the_blocklist(lists):
    got = run_core(lists.options() + ['--throttle', '203.0.113.7'])
    assert got.returncode == 2 and got.stderr == b'bot-detector: error: throttle_list: not set; the throttle answer needs its list\n'
    got = run_core(lists.options() + ['--challenge-list', lists.blocklist, '--challenge', '203.0.113.7'])
    assert got.returncode == 2 and b'challenge_list: must not be the blocklist' in got.stderr
    got = run_core(options(lists) + ['--throttle-rate', '10 per second', '--throttle', '203.0.113.7'])
    assert got.returncode == 2 and b"throttle_rate: must be a rate as nginx writes it" in got.stderr
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n' and not lists.activity_log.exists()


def test_unblock_takes_an_address_off_every_list_keeping_the_other_lines(lists):
    for kind, address in (('throttle', '203.0.113.7'), ('throttle', '203.0.113.8'), ('challenge', '203.0.113.7')):
        assert run_core(options(lists) + ['--' + kind, address]).returncode == 0
    got = run_core(options(lists) + ['--unblock', '203.0.113.7'])
    assert got.returncode == 0, got.stderr
    assert got.stdout == b'Unthrottling IP address: 203.0.113.7\nUnchallenging IP address: 203.0.113.7\n'
    assert lists.throttle.read_bytes() == b'203.0.113.8\n'
    assert lists.challenge.read_bytes() == b''
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n'
    assert b'203.0.113.7 removed from the throttle list (unblock)' in lists.activity_log.read_bytes()
    assert sorted(os.listdir(lists.answer_dir / 'throttle')) == ['4-cb007108']
    assert os.listdir(lists.answer_dir / 'challenge') == []
    # the blocklist's own unblock is as before
    got = run_core(options(lists) + ['--unblock', '192.0.2.1'])
    assert got.stdout == b'Unblocking IP address: 192.0.2.1\n' and lists.blocklist.read_bytes() == b''


def test_status_shows_the_answer_entries_and_their_expiry(lists):
    assert run_core(options(lists) + ['--challenge', '203.0.113.7', '--answer-time', '2h']).returncode == 0
    got = run_core(options(lists) + ['--status', '--json'])
    assert got.returncode == 0, got.stderr
    import json
    doc = json.loads(got.stdout)
    entry, = doc['answers']['challenge']['entries']
    assert entry['address'] == '203.0.113.7' and entry['reason'] == 'by hand'
    assert abs(entry['expires'] - (time.time() + 86400)) < 120        # answer_time of the status run: 1d
    text = run_core(options(lists) + ['--status']).stdout
    assert b'Challenge list %s: 1 entry' % str(lists.challenge).encode() in text
    assert b'203.0.113.7  added ' in text


def test_status_says_an_answer_entry_written_by_hand_as_the_blocklists_is_said(lists):
    """An address an operator wrote into the challenge list with an editor: no addition line,
    no reason (it said 'added by hand ()')."""
    lists.challenge.write_bytes(b'203.0.113.9\n')
    text = run_core(options(lists) + ['--status']).stdout.decode()
    assert '203.0.113.9  added by hand or by other software (no addition in the activity log, or none since its last removal); ' \
        'never expires\n' in text, text


def test_entries_expire_after_answer_time_with_their_own_line(lists):
    settings = settings_of(lists, answer_time=3600)
    answers.answer(settings, 'throttle', [('203.0.113.7', 'campaign 7'), ('203.0.113.8', None)])
    later = time.time() + 3600 + 60
    report = answer_files.sync(settings, now=later)         # past the time, nginx no longer answers it...
    assert report['files'] == {'throttle': 0, 'challenge': 0}
    done = answers.answer(settings, 'throttle', [('203.0.113.8', None)], now=later)     # ...and the next change takes it off
    assert done['expired'] == ['203.0.113.7', '203.0.113.8'] and done['added'] == ['203.0.113.8']
    assert lists.throttle.read_bytes() == b'203.0.113.8\n'
    assert lists.activity_log.read_bytes().count(b'removed from the throttle list (expired after 1h)') == 2


def test_the_answer_directory_holds_one_file_per_key_its_expiry_as_mtime(lists):
    settings = settings_of(lists, answer_time=7200)
    answers.answer(settings, 'challenge', [('203.0.113.7', None), ('203.0.112.0/22', None), ('2001:db8:5::/64', None),
                                           ('2001:db8:6::/63', None)])
    lists.challenge.write_bytes(lists.challenge.read_bytes() + b'192.0.2.99\n')        # by hand: never expires
    report = answer_files.sync(settings)
    names = sorted(os.listdir(lists.answer_dir / 'challenge'))
    assert names == sorted(['4-cb007107', '4-cb0070', '4-cb0071', '4-cb0072', '4-cb0073', '4-c00002 63'.replace(' ', ''),
                            '6-20010db800050000', '6-20010db800060000', '6-20010db800060001'])
    assert report['files']['challenge'] == len(names)
    mtime = os.stat(lists.answer_dir / 'challenge' / '4-cb007107').st_mtime
    assert abs(mtime - (time.time() + 7200)) < 120
    assert os.stat(lists.answer_dir / 'challenge' / '4-c0000263').st_mtime == answer_files.NEVER
    lists.challenge.write_bytes(b'')        # emptied by hand: the files go
    answer_files.sync(settings)
    assert os.listdir(lists.answer_dir / 'challenge') == []


def test_the_per_address_rule_can_answer_with_a_challenge_instead_of_a_block(lists, tmp_path):
    import loggen
    now, epoch = '2026-11-21 04:13:43', 1795234423
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(epoch, previous={'203.0.113.7': 1450, '203.0.113.8': 900}))
    got = run_core(options(lists) + ['--now', now, '--answer-address', 'challenge', log])
    assert got.returncode == 0, got.stderr
    assert b'Challenging IP address: 203.0.113.7 (RPH=1450)' in got.stdout
    assert b'Blocking' not in got.stdout
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n'        # never blocked for it
    assert lists.challenge.read_bytes() == b'203.0.113.7\n'
    assert os.listdir(lists.answer_dir / 'challenge') == ['4-cb007107']
    # by default the rule blocks, as the reference
    got = run_core(options(lists) + ['--now', now, log])
    assert b'Blocking IP address: 203.0.113.7 (1450 requests)' in got.stdout
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n203.0.113.7\n'


def test_an_answer_without_its_list_is_refused(lists, tmp_path):
    got = run_core(lists.options() + ['--answer-address', 'throttle', tmp_path / 'none.log'])
    assert got.returncode == 2
    assert got.stderr == b'bot-detector: error: answer_address: throttle needs throttle_list\n'


def test_a_detection_run_takes_expired_answers_off_their_lists(lists, tmp_path):
    import loggen
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import date_default_format
    lists.throttle.write_bytes(b'203.0.113.70\n203.0.113.71\n')
    old = date_default_format(time.time() - 2 * 86400)      # added two days ago: past the default answer_time, 1d
    lists.activity_log.write_bytes(('%s | IP addess 203.0.113.70 added to the throttle list (by hand)\n'
                                    '%s | IP addess 203.0.113.71 added to the throttle list (by hand)\n'
                                    % (old, date_default_format())).encode())
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(1795234423, previous={'203.0.113.9': 10}))
    got = run_core(options(lists) + ['--now', '2026-11-21 04:13:43', '--json', log])
    assert got.returncode == 0, got.stderr
    import json
    doc = json.loads(got.stdout)
    assert doc['answers']['throttle']['expired'] == ['203.0.113.70'] and doc['changed'] is True
    assert lists.throttle.read_bytes() == b'203.0.113.71\n'
    assert os.listdir(lists.answer_dir / 'throttle') == ['4-cb007147']


def answered_log(tmp_path, epoch, lines):
    """A log of (address, path, status, count) in the current window."""
    import loggen
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(loggen.line(address, epoch, path=path, status=status) for address, path, status, count in lines
                             for dummy in range(count)))
    return log


def test_a_listed_client_at_a_scrapers_pace_is_escalated_to_a_block_a_nat_address_never(lists, tmp_path):
    """Its throttled or challenged job-page requests in a window, less the challenges it passed."""
    epoch, now = 1795234423, '2026-11-21 04:13:43'
    assert run_core(options(lists) + ['--challenge', '203.0.113.0/24']).returncode == 0
    assert run_core(options(lists) + ['--throttle', '198.51.100.20']).returncode == 0
    log = answered_log(tmp_path, epoch, [
        ('203.0.113.5', '/job/1', 428, 600),          # a scraper without JavaScript, challenged again and again
        ('198.51.100.20', '/job/2', 429, 550),        # a scraper throttled
        ('203.0.113.6', '/job/3', 428, 40),           # behind a NAT address: a person without JavaScript
        ('203.0.113.6', '/job/3', 200, 400),          # and its people who pass
        ('203.0.113.6', '/.bot-detector/pass?to=%2Fjob%2F3', 303, 30),
        ('203.0.113.6', '/.bot-detector/pass?to=%2Fjob%2F3', 403, 2),
        ('203.0.113.7', '/job/5', 428, 600),          # a NAT address of 600 people, each challenged once, and passing
        ('203.0.113.7', '/.bot-detector/pass?to=%2Fjob%2F5', 303, 600),
        ('203.0.113.7', '/job/5', 200, 600),
        ('203.0.113.8', '/job/6', 429, 520),          # throttled, replaying a pass cookie: no throttled request taken off
        ('203.0.113.8', '/.bot-detector/pass?to=%2Fjob%2F6', 303, 520),
        ('192.0.2.200', '/job/4', 428, 900),          # not listed: not the answers' to escalate
    ])
    metrics = tmp_path / 'metrics.prom'
    # The rule's threshold over the NAT address's 1200 job-page requests: only the escalation could block it.
    got = run_core(options(lists) + ['--now', now, '--metrics-file', metrics, '--answer-escalation', '500', '--threshold', '2000', log])
    assert got.returncode == 0, got.stderr
    assert b'Blocking IP address: 203.0.113.5 (600 requests, escalated)' in got.stdout
    assert b'Blocking IP address: 198.51.100.20 (550 requests, escalated)' in got.stdout
    assert b'Blocking IP address: 203.0.113.8 (520 requests, escalated)' in got.stdout
    assert b'203.0.113.6' not in lists.blocklist.read_bytes() and b'192.0.2.200' not in lists.blocklist.read_bytes()
    assert b'203.0.113.7' not in got.stdout       # its challenges, less those passed: none
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n203.0.113.5\n198.51.100.20\n203.0.113.8\n'
    activity = lists.activity_log.read_bytes()
    assert b'IP addess 203.0.113.5 added to the block list, RPH=600 (escalated)' in activity
    text = metrics.read_text()
    assert 'bot_detector_additions_total{reason="escalated"} 3' in text
    log_label = str(log)
    for answer, count in (('challenged', 600 + 40 + 600 + 900), ('throttled', 550 + 520), ('passed', 30 + 600 + 520), ('failed', 2)):
        assert 'bot_detector_last_run_answers{answer="%s",log="%s",window="current"} %d' % (answer, log_label, count) in text
    again = run_core(options(lists) + ['--now', now, '--answer-escalation', '500', '--threshold', '2000', log])     # once: already blocked
    assert again.returncode == 0 and b'escalated' not in again.stdout
    assert lists.blocklist.read_bytes() == b'192.0.2.1\n203.0.113.5\n198.51.100.20\n203.0.113.8\n'


def test_a_verified_crawlers_address_is_never_answered(lists):
    settings = settings_of(lists)
    warnings = []
    done = answers.answer(settings, 'challenge', [('66.249.66.0/24', 'campaign'), ('66.249.67.9', 'campaign'),
                                                  ('2001:4860:4801:10::/64', 'campaign')],
                          on_warning=warnings.append, spared=['66.249.66.1', '2001:4860:4801:10::5'])
    assert done['added'] == ['66.249.67.9'] and done['refused'] == ['66.249.66.0/24', '2001:4860:4801:10::/64']
    assert warnings == ['challenge list: 66.249.66.0/24 refused: it holds a crawler verified by reverse DNS',
                        'challenge list: 2001:4860:4801:10::/64 refused: it holds a crawler verified by reverse DNS']
    assert lists.challenge.read_bytes() == b'66.249.67.9\n'


def test_a_sync_that_read_the_lists_before_an_unblock_never_puts_the_client_back_after_it(lists, monkeypatch):
    """Two syncs of the answers' directory at once (a follower's and an --unblock's): one that
    read the lists before the unblock and wrote after it would put the unblocked client back
    until the next sync. The syncs take turns: the second reads the lists the first left."""
    import threading
    got = run_core(options(lists) + ['--challenge', '203.0.113.7'])
    assert got.returncode == 0, got.stderr
    settings = settings_of(lists)
    directory = lists.answer_dir / 'challenge'
    assert len(os.listdir(str(directory))) == 1
    read, go, wanted = threading.Event(), threading.Event(), answer_files.wanted_files

    def slow_wanted(*args):
        found = wanted(*args)
        if args[1] == 'challenge':
            read.set()
            go.wait(10)
        return found
    monkeypatch.setattr(answer_files, 'wanted_files', slow_wanted)
    first = threading.Thread(target=answer_files.sync, args=(settings,))
    first.start()
    done = []
    unblock = threading.Thread(target=lambda: done.append(run_core(options(lists) + ['--unblock', '203.0.113.7'])))
    try:
        assert read.wait(10)        # the first sync has read the list, 203.0.113.7 on it
        unblock.start()
        unblock.join(1.5)           # the unblock's own sync waits for the first (it would have ended by now)
    finally:
        go.set()
        first.join(10)
        unblock.join(30)
    assert done and done[0].returncode == 0, done and done[0].stderr
    assert b'203.0.113.7' not in lists.challenge.read_bytes()
    assert os.listdir(str(directory)) == []


@pytest.mark.parametrize('broken', ['challenge list', 'answer dir'])
def test_a_run_that_cannot_list_its_challenges_fails_before_any_append_in_check_mode_too(lists, tmp_path, broken):
    """A campaign run whose challenge list (or answers' directory) cannot be written: the dry run
    says what the real run fails on, and the real run fails before its blocks are appended, with
    nothing written; a trap hit's block and a network's challenge were due."""
    from test_campaigns import TRAP, request, rotating
    log = tmp_path / 'access.log'
    log.write_text(request('192.0.2.30', TRAP + '7') + rotating('203.0.113.%d', 16, 1))
    (tmp_path / 'a-file').write_text('')
    missing = tmp_path / 'missing' / 'here' if broken == 'challenge list' else tmp_path / 'a-file' / 'answers'
    args = options(lists) + ['--campaigns', '--trap-path', TRAP, '--now', '2026-11-21 10:50:00']
    args += ['--challenge-list', missing / 'challenge.txt'] if broken == 'challenge list' else ['--answer-dir', missing]
    before = [path.read_bytes() if path.exists() else None for path in (lists.blocklist, lists.activity_log, lists.challenge)]
    dry = run_core(args + ['--check', log])
    real = run_core(args + [log])
    what = '%s: No such file or directory' % (missing / 'challenge.txt') if broken == 'challenge list' else '%s: Not a directory' % missing
    for got in (dry, real):
        assert got.returncode == 3, got
        assert got.stderr.decode().strip().endswith(what), got.stderr
        assert b'Blocking' not in got.stdout and b'Challenging' not in got.stdout, got.stdout
    assert [path.read_bytes() if path.exists() else None for path in (lists.blocklist, lists.activity_log, lists.challenge)] == before
    assert not os.path.lexists(str(missing))


def test_a_run_with_nothing_for_a_list_that_cannot_be_written_goes_on(lists, tmp_path):
    """The lists' check is of a run that has a decision for them: one with none (or a follower
    between such decisions) blocks on as before, a list out of reach or not."""
    from test_campaigns import request, scraper
    log = tmp_path / 'access.log'
    log.write_text(scraper('192.0.2.30', 5) + request('192.0.2.31', '/job/1'))
    got = run_core(options(lists) + ['--campaigns', '--now', '2026-11-21 10:50:00', '--challenge-list',
                                     tmp_path / 'missing' / 'challenge.txt', log])
    assert got.returncode == 0, got.stderr
