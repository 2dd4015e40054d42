"""Escalation in follow mode (issue 46): a follower blocks a listed client that keeps fetching
job pages at a scraper's pace while throttled or challenged, as a cron run does (its own
'(escalated)' activity line), within its usual decision latency, once per key, a restart
included; never a shared address because one of its people has no JavaScript."""
import signal

from conftest import run_core
from test_follow import START, Following, blocked, in_timezone, setup, wait_for
import loggen

ESCALATION = 50


def answered(address, count, status, path='/job/1', epoch=START - 60):
    return in_timezone('UTC', lambda: b''.join(loggen.line(address, epoch + i % 50, path=path, status=status)
                                               for i in range(count)))


def escalated_lines(files, address):
    return [line for line in (files.read('activity_log') or b'').split(b'\n')
            if b'IP addess %s added to the block list' % address.encode() in line and line.endswith(b'(escalated)')]


class AnswersFollowing(Following):
    def options(self):
        # the rule's threshold out of reach: only the escalation blocks
        return super().options() + ['--threshold', '100000', '--answer-escalation', str(ESCALATION),
                                    '--throttle-list', self.files.base / 'throttle.txt',
                                    '--challenge-list', self.files.base / 'challenge.txt',
                                    '--answer-dir', self.base / 'answers']


def listed(tmp_path, files):
    options = files.options() + ['--throttle-list', files.base / 'throttle.txt', '--challenge-list',
                                 files.base / 'challenge.txt', '--answer-dir', tmp_path / 'answers']
    assert run_core(options + ['--challenge', '203.0.113.0/24']).returncode == 0
    assert run_core(options + ['--throttle', '198.51.100.20']).returncode == 0


def test_a_follower_escalates_a_listed_client_at_a_scrapers_pace_once_a_restart_included(tmp_path):
    files, log = setup(tmp_path)
    listed(tmp_path, files)
    log.parent.mkdir()
    # before the start: read by the follower's first pass, as a run reads them
    log.write_bytes(answered('203.0.113.5', 30, 428) + answered('203.0.113.9', 20, 428))
    with AnswersFollowing(tmp_path, files, log) as follower:
        assert blocked(files) == []
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(answered('203.0.113.5', 25, 428)          # 55: a scraper without JavaScript
                         + answered('198.51.100.20', ESCALATION, 429)        # throttled, at a scraper's pace
                         + answered('203.0.113.6', 8, 428)          # a NAT address: a person without JavaScript
                         + answered('203.0.113.6', 400, 200)        # and its people, who passed
                         + answered('192.0.2.200', 90, 428)         # not listed: not the answers' to escalate
                         + answered('203.0.113.7', 90, 428, path='/assets/app.js')      # not a job page
                         + answered('203.0.113.9', 20, 428))        # 40: not yet
        follower.caught_up()
        wait_for(lambda: blocked(files) == [b'198.51.100.20', b'203.0.113.5'], 30, 'escalation')
        assert escalated_lines(files, '203.0.113.5') and escalated_lines(files, '198.51.100.20')
        follower.mark()
        with open(str(log), 'ab') as handle:      # on at that pace: no second line
            handle.write(answered('203.0.113.5', 60, 428))
        follower.caught_up()
        follower.saved()
        follower.stop(signal.SIGKILL)
    with open(str(log), 'ab') as handle:        # while it is down: 203.0.113.9 at 45, still not
        handle.write(answered('203.0.113.9', 5, 428) + answered('203.0.113.5', 10, 428))
    with AnswersFollowing(tmp_path, files, log, now=START + 30) as follower:
        follower.caught_up()
        assert blocked(files) == [b'198.51.100.20', b'203.0.113.5']
        follower.mark()
        with open(str(log), 'ab') as handle:        # its count from before the restart kept: 50
            handle.write(answered('203.0.113.9', 5, 428))
        follower.caught_up()
        wait_for(lambda: b'203.0.113.9' in blocked(files), 30, 'escalation after the restart')
        assert follower.stop() == 0
    assert blocked(files) == [b'198.51.100.20', b'203.0.113.5', b'203.0.113.9']
    for address in ('203.0.113.5', '198.51.100.20', '203.0.113.9'):
        assert len(escalated_lines(files, address)) == 1, address
    assert files.read('activity_log').count(b'added to the block list') == 3


def test_answer_list_entries_expire_while_following_without_a_ban_time(tmp_path):
    """answer_time is the answer lists' own: a follower without ban_time expires them too
    (at its start, then as often as bans expire)."""
    import time
    files, log = setup(tmp_path)
    log.parent.mkdir()
    log.write_bytes(b'')
    (files.base / 'challenge.txt').write_bytes(b'203.0.113.20\n203.0.113.21\n')
    old, new = [in_timezone('UTC', lambda epoch=epoch: time.strftime('%a %b %e %H:%M:%S UTC %Y', time.gmtime(epoch)))
                for epoch in (time.time() - 3 * 3600, time.time() - 60)]
    files.activity_log.write_bytes(('%s | IP addess 203.0.113.20 added to the challenge list (by hand)\n'
                                    '%s | IP addess 203.0.113.21 added to the challenge list (by hand)\n' % (old, new)).encode())
    with AnswersFollowing(tmp_path, files, log, extra=['--answer-time', '1h']):
        wait_for(lambda: (files.base / 'challenge.txt').read_bytes() == b'203.0.113.21\n', 30, 'expiry')
    assert b'203.0.113.20 removed from the challenge list (expired' in files.read('activity_log')
    assert sorted((tmp_path / 'answers' / 'challenge').iterdir()) and len(list((tmp_path / 'answers' / 'challenge').iterdir())) == 1


def test_a_followers_state_keeps_the_challenges_not_passed_yet_across_a_restart():
    """A client challenged 60 times before a restart passes 60 after it: its count goes back to 0,
    as in one process; its 60 passes take nothing off a throttled one's count (a pass cookie replayed)."""
    import json
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.answered import Followed
    stamp = b'21/Nov/2026:10'
    before = Followed([stamp], ['GET /job/'], ESCALATION)
    text = answered('203.0.113.5', 60, 428) + answered('198.51.100.20', 60, 429)
    before.chunk(text, len(text))
    saved = json.loads(json.dumps(before.saved()))
    after = Followed([stamp], ['GET /job/'], ESCALATION)
    after.resume(saved)
    passes = (answered('203.0.113.5', 60, 303, path='/.bot-detector/pass?to=%2Fjob%2F1')
              + answered('198.51.100.20', 60, 303, path='/.bot-detector/pass?to=%2Fjob%2F1'))
    after.chunk(passes, len(passes))
    assert after.keys[stamp][b'203.0.113.5'] == 0 and after.keys[stamp][b'198.51.100.20'] == 60
