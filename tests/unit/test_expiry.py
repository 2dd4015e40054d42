"""Ban expiry (--ban-time): an entry whose latest addition in the activity log (or its rotated
files) is older than its ban leaves the blocklist at the start of a run; an entry without an
addition line, or whose record cannot be read, stays; repeat offenders get twice the ban
they had, up to --ban-time-max. The activity lines' dates are written here by GNU date."""
import json
import os
import re
import stat
import subprocess
import time

import pytest

import loggen
from conftest import in_timezone, mask_duration, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector import history

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
HOUR = 3600
EXPIRED = re.compile(br'^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [A-Z]+ \d{4} '
                     br'\| IP addess (\S+) removed from the block list \(expired, ban (\w+)\)$')


def gnu_date(epoch, tz='UTC'):
    """What `date` prints for ``epoch``: the activity log's date."""
    return subprocess.run(['date', '-d', '@%d' % epoch], stdout=subprocess.PIPE, check=True,
                          env=dict(os.environ, TZ=tz, LC_ALL='C')).stdout.strip()


def added(address, hours_ago, count=1200, note=None):
    when = gnu_date(time.time() - hours_ago * HOUR)
    return b'%s | IP addess %s added to the block list, RPH=%d%s\n' % (
        when, address.encode(), count, b' (%s)' % note.encode() if note else b'')


def removed(address, hours_ago, reason):
    return b'%s | IP addess %s removed from the block list (%s)\n' % (
        gnu_date(time.time() - hours_ago * HOUR), address.encode(), reason.encode())


@pytest.fixture
def quiet_log(tmp_path):
    """A log with nobody near the threshold."""
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'198.51.100.200': 5})))
    return log


def detect(files, log, *extra):
    return run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW] + list(extra) + [str(log)])


def test_expired_entries_leave_entries_without_a_usable_record_stay(files, quiet_log):
    files.blocklist.write_bytes(b'# managed by hand\n'
                                b'203.0.113.1\n'          # own run, 3 h ago: expires
                                b'203.0.113.2\n'          # own run, 1 h ago: stays
                                b'203.0.113.3\r\n'        # no record (by hand): stays
                                b'203.0.113.4\n'          # its date cannot be read: stays
                                b'203.0.113.5\n'          # blocked, unblocked, put back by hand: stays
                                b'203.0.113.6\n'          # the fleet's, 3 h ago: expires
                                b'203.0.113.7')           # no final newline; 3 h ago: expires
    os.chmod(str(files.blocklist), 0o600)
    files.activity_log.write_bytes(
        added('203.0.113.5', 6) + removed('203.0.113.5', 5, 'unblock') + added('203.0.113.1', 3)
        + added('203.0.113.2', 1) + b'yesterday, roughly | IP addess 203.0.113.4 added to the block list, RPH=1000\n'
        + added('203.0.113.6', 3, note='fleet') + added('203.0.113.7', 3, note='sync'))
    got = detect(files, quiet_log, '--ban-time', '2h')
    assert got.returncode == 0, got.stderr
    assert mask_duration(got.stdout).split(b'\n') == [
        b'Unblocking IP address: 203.0.113.1 (ban of 2h expired)',
        b'Unblocking IP address: 203.0.113.6 (ban of 2h expired)',
        b'Unblocking IP address: 203.0.113.7 (ban of 2h expired)',
        b'Checking the previous hour...', b'Checking the current hour...', b'Execution time: N seconds', b'']
    assert files.read('blocklist') == (b'# managed by hand\n203.0.113.2\n203.0.113.3\r\n203.0.113.4\n203.0.113.5\n')
    assert stat.S_IMODE(os.stat(str(files.blocklist)).st_mode) == 0o600
    lines = files.read('activity_log').split(b'\n')[-4:]
    assert [EXPIRED.match(line).groups() for line in lines[:-1]] == [
        (b'203.0.113.1', b'2h'), (b'203.0.113.6', b'2h'), (b'203.0.113.7', b'2h')]
    # Without a ban time (the default, as the spec) nothing ever expires.
    files.blocklist.write_bytes(b'203.0.113.2\n')
    files.activity_log.write_bytes(added('203.0.113.2', 24 * 400))
    assert b'Unblocking' not in detect(files, quiet_log).stdout
    assert files.read('blocklist') == b'203.0.113.2\n'


def test_records_are_found_across_rotated_activity_logs(files, quiet_log):
    """LOG.1 plain and LOG.2.gz, LOG.3.gz compressed by gzip (logrotate's compress and
    delaycompress), a damaged LOG.4.gz: what is only there stays, with a warning."""
    log = str(files.activity_log)
    files.blocklist.write_bytes(b'203.0.113.1\n203.0.113.2\n203.0.113.3\n203.0.113.4\n203.0.113.5\n')
    with open(log + '.1', 'wb') as handle:
        handle.write(added('203.0.113.1', 30) + added('203.0.113.2', 0.5))     # 2 was re-added since .2.gz
    for number, content in ((2, added('203.0.113.2', 50) + added('203.0.113.3', 60)),
                            (3, added('203.0.113.4', 0.5)),
                            (4, added('203.0.113.5', 100))):
        with open(log + '.%d' % number, 'wb') as handle:
            handle.write(content)
        subprocess.run(['gzip', '-f', log + '.%d' % number], check=True)
    with open(log + '.4.gz', 'r+b') as damaged:
        damaged.truncate(os.path.getsize(log + '.4.gz') - 12)
    files.activity_log.write_bytes(b'')
    got = detect(files, quiet_log, '--ban-time', '1d')
    assert got.returncode == 0, got.stderr
    assert got.stdout.split(b'\n')[:2] == [b'Unblocking IP address: 203.0.113.1 (ban of 1d expired)',
                                           b'Unblocking IP address: 203.0.113.3 (ban of 1d expired)']
    assert files.read('blocklist') == b'203.0.113.2\n203.0.113.4\n203.0.113.5\n'
    assert got.stderr.count(b'\n') == 1
    assert got.stderr.startswith(b'bot-detector: warning: cannot read the rotated activity log %s.4.gz: ' % log.encode())
    assert got.stderr.endswith(b'entries whose addition is recorded only there are kept\n')


def test_repeat_offenders_get_twice_their_last_ban_up_to_the_maximum(files, quiet_log):
    files.blocklist.write_bytes(b'203.0.113.1\n203.0.113.2\n203.0.113.3\n203.0.113.4\n')
    files.activity_log.write_bytes(
        added('203.0.113.1', 10) + removed('203.0.113.1', 8, 'expired, ban 2h') + added('203.0.113.1', 3)   # 4h: stays
        + added('203.0.113.2', 10) + removed('203.0.113.2', 8, 'expired, ban 2h') + added('203.0.113.2', 5)  # 4h: goes
        + removed('203.0.113.3', 40, 'expired, ban 16h') + added('203.0.113.3', 23)    # 32h capped at 1d: stays
        + removed('203.0.113.4', 40, 'expired, ban 16h') + added('203.0.113.4', 25))   # 1d: goes
    status = json.loads(run_core(files.options() + ['--status', '--json', '--ban-time', '2h', '--ban-time-max', '1d']).stdout)
    assert [(e['address'], e['ban'], e['state']) for e in status['entries']] == [
        ('203.0.113.1', '4h', 'at'), ('203.0.113.2', '4h', 'due'), ('203.0.113.3', '1d', 'at'), ('203.0.113.4', '1d', 'due')]
    got = detect(files, quiet_log, '--ban-time', '2h', '--ban-time-max', '1d')
    assert got.stdout.split(b'\n')[:2] == [b'Unblocking IP address: 203.0.113.2 (ban of 4h expired)',
                                           b'Unblocking IP address: 203.0.113.4 (ban of 1d expired)']
    assert files.read('blocklist') == b'203.0.113.1\n203.0.113.3\n'
    # Without a maximum there is no doubling: 203.0.113.1's ban is 2h, over.
    got = detect(files, quiet_log, '--ban-time', '2h')
    assert got.stdout.split(b'\n')[0] == b'Unblocking IP address: 203.0.113.1 (ban of 2h expired)'


def test_an_expired_scraper_still_at_it_is_blocked_again_with_twice_the_ban(tmp_path, files):
    files.blocklist.write_bytes(b'203.0.113.7\n')
    files.activity_log.write_bytes(added('203.0.113.7', 3))
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450})))
    options = ['--ban-time', '2h', '--ban-time-max', '1d']
    check = detect(files, log, '--check', *options)
    assert mask_duration(check.stdout).split(b'\n')[:3] == [
        b'Would unblock IP address: 203.0.113.7 (ban of 2h expired)', b'Checking the previous hour...',
        b'Would block IP address: 203.0.113.7 (1450 requests)']
    assert files.read('blocklist') == b'203.0.113.7\n' and files.read('activity_log') == added('203.0.113.7', 3)
    got = detect(files, log, *options)
    assert mask_duration(got.stdout).split(b'\n')[:4] == [
        b'Unblocking IP address: 203.0.113.7 (ban of 2h expired)', b'Checking the previous hour...',
        b'Blocking IP address: 203.0.113.7 (1450 requests)', b'Checking the current hour...']
    assert files.read('blocklist') == b'203.0.113.7\n'
    status = json.loads(run_core(files.options() + ['--status', '--json'] + options).stdout)
    (entry,) = status['entries']
    assert (entry['source'], entry['count'], entry['ban'], entry['state']) == ('own', 1450, '4h', 'at')
    assert abs(entry['expires'] - (time.time() + 4 * HOUR)) < 60


@pytest.mark.parametrize('tz,epochs', [
    # The repeated 02:xx hour of the fall-back night: the zone's abbreviation tells them apart.
    ('Europe/Berlin', [1792888200, 1792891800, 1774746000, 1795234423]),
    ('America/New_York', [1793511000, 1793514600, 1772953200]),
    ('Australia/Lord_Howe', [1775313000, 1775314800, 1791000000]),
    ('Asia/Kolkata', [1795234423]),
    ('UTC', [0, 1795234423]),
])
def test_activity_dates_read_back_as_gnu_date_wrote_them(tz, epochs):
    for epoch in epochs:
        text = gnu_date(epoch, tz)
        assert in_timezone(tz, lambda: history.parse_date(text)) == epoch, text


@pytest.mark.parametrize('args,fragment', [
    (['--ban-time', '0'], b'--ban-time 0: must be a duration in seconds of at least 1, got 0'),
    (['--ban-time', '5x'], b"--ban-time 5x: must be a duration (seconds, or a number with a unit s, m, h, d or w"),
    (['--ban-time', '1h30'], b'--ban-time 1h30: must be a duration'),
    (['--ban-time-max', '1d'], b'ban_time_max: needs ban_time'),
    (['--ban-time', '1d', '--ban-time-max', '12h'], b'ban_time_max: must be at least ban_time (1d), got 12h'),
])
def test_bad_ban_times_exit_2(files, quiet_log, args, fragment):
    files.blocklist.write_bytes(b'203.0.113.1\n')
    got = detect(files, quiet_log, *args)
    assert got.returncode == 2 and got.stdout == b'' and got.stderr.count(b'\n') == 1
    assert fragment in got.stderr, got.stderr
    assert files.read('blocklist') == b'203.0.113.1\n' and not files.activity_log.exists()


def test_durations_from_the_config_file(tmp_path, files, quiet_log):
    config = tmp_path / 'c.conf'
    config.write_text('[bot_detector]\nban_time = 90m\nban_time_max = 1w\n')
    files.blocklist.write_bytes(b'203.0.113.1\n203.0.113.2\n')
    files.activity_log.write_bytes(added('203.0.113.1', 2) + added('203.0.113.2', 1))
    got = detect(files, quiet_log, '--config', config)
    assert got.stdout.split(b'\n')[0] == b'Unblocking IP address: 203.0.113.1 (ban of 90m expired)'
    assert files.read('blocklist') == b'203.0.113.2\n'
