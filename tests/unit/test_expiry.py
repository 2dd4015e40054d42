"""Ban expiry (--ban-time): an entry whose latest addition in the activity log (or its rotated
files) is older than its ban leaves the blocklist at the start of a run; an entry without an
addition line, or whose record cannot be read, stays; repeat offenders get twice the ban
they had, up to --ban-time-max. The activity lines' dates are written here by GNU date."""
import json
import os
import re
import stat
import subprocess
import sys
import time

import pytest

import fakeclock
import loggen
from conftest import CORE, in_timezone, mask_duration, run_core
from test_activity_date import GERMAN, require_german_locale
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
HOUR = 3600
EXPIRED = re.compile(br'^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [A-Z]+ \d{4} '
                     br'\| IP addess (\S+) removed from the block list \(expired, ban (\w+)\)$')


def gnu_date(epoch, tz='UTC', lc_all='C'):
    """What `date` prints for ``epoch``: the activity log's date."""
    return subprocess.run(['date', '-d', '@%d' % epoch], stdout=subprocess.PIPE, check=True,
                          env=dict(os.environ, TZ=tz, LC_ALL=lc_all)).stdout.strip()


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
    record = added('203.0.113.7', 3)
    files.activity_log.write_bytes(record)
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450})))
    options = ['--ban-time', '2h', '--ban-time-max', '1d']
    check = detect(files, log, '--check', *options)
    assert mask_duration(check.stdout).split(b'\n')[:3] == [
        b'Would unblock IP address: 203.0.113.7 (ban of 2h expired)', b'Checking the previous hour...',
        b'Would block IP address: 203.0.113.7 (1450 requests)']
    assert files.read('blocklist') == b'203.0.113.7\n' and files.read('activity_log') == record
    got = detect(files, log, *options)
    assert mask_duration(got.stdout).split(b'\n')[:4] == [
        b'Unblocking IP address: 203.0.113.7 (ban of 2h expired)', b'Checking the previous hour...',
        b'Blocking IP address: 203.0.113.7 (1450 requests)', b'Checking the current hour...']
    assert files.read('blocklist') == b'203.0.113.7\n'
    status = json.loads(run_core(files.options() + ['--status', '--json'] + options).stdout)
    (entry,) = status['entries']
    assert (entry['source'], entry['count'], entry['ban'], entry['state']) == ('own', 1450, '4h', 'at')
    assert abs(entry['expires'] - (time.time() + 4 * HOUR)) < 60


EPOCHS = {
    # The repeated 02:xx hour of the fall-back night: the zone's abbreviation tells them apart.
    'Europe/Berlin': [1792888200, 1792891800, 1774746000, 1795234423],
    'America/New_York': [1793511000, 1793514600, 1772953200],
    'Australia/Lord_Howe': [1775313000, 1775314800, 1791000000],     # a half-hour DST shift, '+1030'/'+11'
    'Asia/Kolkata': [1795234423],
    'UTC': [0, 1795234423],
}


def read_back(text, tz, lc_all):
    """history's DateReader on ``text``, in a process of zone ``tz`` and locale ``lc_all``."""
    code = ('import sys; from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import '
            'DateReader; print(DateReader().epoch(sys.argv[1].encode("utf-8", "surrogateescape")))')
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('LC_') and k != 'LANG')
    env.update(TZ=tz, LC_ALL=lc_all, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, '-c', code, text], stdout=subprocess.PIPE, env=env, check=True).stdout.strip()


@pytest.mark.parametrize('lc_all', ['C.UTF-8', GERMAN])
@pytest.mark.parametrize('tz', sorted(EPOCHS))
def test_activity_dates_read_back_as_gnu_date_wrote_them_in_the_runs_locale(tz, lc_all):
    """Every date `date` prints in the run's locale and zone reads back as its instant, DST
    nights included; so do dates printed in the C locale (written before a locale was set)."""
    require_german_locale()
    for epoch in EPOCHS[tz]:
        for written_in in sorted(set([lc_all, 'C.UTF-8'])):
            text = gnu_date(epoch, tz, written_in)
            assert read_back(text.decode('utf-8'), tz, lc_all) == b'%d' % epoch, (text, lc_all)


@pytest.mark.parametrize('lc_all', ['C.UTF-8', GERMAN])
@pytest.mark.parametrize('tz', ['UTC', 'Europe/Berlin'])
def test_every_day_of_a_month_and_the_dst_nights_read_back(tz, lc_all):
    """The dates `date` prints on each faked day (tests/fakeclock.py: a one-digit day, a year's
    end, a skipped and a repeated hour) read back as their instants, in one reader's process."""
    require_german_locale()
    texts = [gnu_date(epoch, tz, lc_all).decode('utf-8') for epoch in fakeclock.NOW_EPOCHS]
    code = ('import sys; from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import '
            'DateReader; reader = DateReader(); print(" ".join(str(reader.epoch(t.encode("utf-8", "surrogateescape"))) '
            'for t in sys.argv[1:]))')
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('LC_') and k != 'LANG')
    env.update(TZ=tz, LC_ALL=lc_all, PYTHONPATH=os.pathsep.join(sys.path))
    got = subprocess.run([sys.executable, '-c', code] + texts, stdout=subprocess.PIPE, env=env, check=True).stdout.split()
    assert list(zip(texts, got)) == list(zip(texts, [b'%d' % epoch for epoch in fakeclock.NOW_EPOCHS]))


def test_a_date_in_another_locale_or_zone_or_no_date_is_not_read():
    """Read only as the run's own locale or C renders it, in this host's zone or UTC: a German
    date read by a C run, a zone the host does not have, a date with a wrong weekday or
    day, and text that is no date read as None (the entry is kept)."""
    require_german_locale()
    german = gnu_date(1795234423, 'Europe/Berlin', GERMAN).decode('utf-8')
    assert german == 'Sa 21. Nov 05:13:43 CET 2026'
    assert read_back(german, 'Europe/Berlin', 'C.UTF-8') == b'None'
    for text in ['Sat Nov 21 05:13:43 PST 2026', 'Fri Nov 21 05:13:43 CET 2026', 'Sat Nov 31 05:13:43 CET 2026',
                 'Sat Nov 21 25:13:43 CET 2026', 'yesterday, roughly', '']:
        assert read_back(text, 'Europe/Berlin', GERMAN) == b'None', text


# de_DE.UTF-8's date format (glibc's date_fmt '%a %-d. %b %H:%M:%S %Z %Y'), spelt out here.
GERMAN_WEEKDAYS = ('Mo', 'Di', 'Mi', 'Do', 'Fr', 'Sa', 'So')
GERMAN_MONTHS = ('Jan', 'Feb', 'M\u00e4r', 'Apr', 'Mai', 'Jun', 'Jul', 'Aug', 'Sep', 'Okt', 'Nov', 'Dez')


def german_date(epoch, tz):
    """What `date` prints at ``epoch`` in zone ``tz`` under de_DE.UTF-8: 'Sa 5. Dez 15:31:25 CET 2026'."""
    t = in_timezone(tz, lambda: time.localtime(epoch))
    return ('%s %d. %s %02d:%02d:%02d %s %d' % (GERMAN_WEEKDAYS[t.tm_wday], t.tm_mday, GERMAN_MONTHS[t.tm_mon - 1],
                                                t.tm_hour, t.tm_min, t.tm_sec, t.tm_zone, t.tm_year)).encode('utf-8')


@pytest.mark.parametrize('faked_now', fakeclock.NOW_EPOCHS, ids=fakeclock.NOW_IDS)
def test_entries_added_under_the_german_locale_expire_under_it_and_stay_under_another(tmp_path, files, quiet_log, faked_now):
    """The product's own run writes the activity date in German (LC_TIME=de_DE.UTF-8); a run in
    that locale reads it and expires the entry, a run in the C locale cannot read it and
    keeps the entry, --status saying so. On every day of a month and Europe/Berlin's DST
    nights (a faked clock: one-digit days, a year's end, a skipped and a repeated hour)."""
    require_german_locale()
    faked_clock = fakeclock.FakeClock(faked_now)
    log = tmp_path / 'scraper.log'
    log.write_bytes(in_timezone('Europe/Berlin', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450})))
    german = dict((k, v) for k, v in os.environ.items() if not k.startswith('LC_') and k != 'LANG')
    german.update(TZ='Europe/Berlin', LANG='C.UTF-8', LC_TIME=GERMAN)
    c_locale = dict(german, LC_TIME='C.UTF-8')

    def run(env, *args):
        return subprocess.run([sys.executable, str(CORE)] + [str(a) for a in files.options() + list(args)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=faked_clock.env(env), check=False)
    faked = subprocess.run(['date', '+%s'], stdout=subprocess.PIPE, env=faked_clock.env(german), check=True).stdout
    assert abs(int(faked) - faked_now) < 60, (faked, faked_now)           # the clock is faked indeed
    now = ['--server-ip', '10.0.0.5', '--now', '@%d' % NOW_EPOCH]
    before = int(faked_clock.now())
    blocked = run(german, *(now + [log]))
    after = int(faked_clock.now()) + 1
    assert blocked.returncode == 0 and b'Blocking IP address: 203.0.113.7 (1450 requests)' in blocked.stdout
    date = files.read('activity_log').split(b' | ')[0]
    assert date in [german_date(second, 'Europe/Berlin') for second in range(before, after + 1)], date
    faked_clock.advance(5)               # the ban of one second is over
    kept = run(c_locale, *(now + ['--ban-time', '1', quiet_log]))
    assert kept.returncode == 0 and b'Unblocking' not in kept.stdout and files.read('blocklist') == b'203.0.113.7\n'
    status = json.loads(run(c_locale, '--status', '--json', '--ban-time', '1').stdout)
    assert [(e['address'], e['state']) for e in status['entries']] == [('203.0.113.7', 'unknown_date')]
    expired = run(german, *(now + ['--ban-time', '1', quiet_log]))
    assert expired.returncode == 0, expired.stderr
    assert expired.stdout.split(b'\n')[0] == b'Unblocking IP address: 203.0.113.7 (ban of 1s expired)'
    assert files.read('blocklist') == b''


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


def test_a_locale_with_a_12_hour_clock_reads_back_too(tmp_path):
    """en_US's `date` prints '04:13:43 PM' (glibc's %r): this machine lacks that locale, so a
    `date` printing such a format stands in for it, and DateReader learns it as it learns any."""
    fake = tmp_path / 'bin' / 'date'
    fake.parent.mkdir()
    fake.write_text('#!%s\nimport sys, time\nfor line in sys.stdin:\n'
                    '    print(time.strftime("%%a %%b %%e %%I:%%M:%%S %%p %%Z %%Y", time.localtime(int(line.strip()[1:]))))\n'
                    % sys.executable)
    fake.chmod(0o755)

    def render(epoch):
        return subprocess.run([str(fake)], input=b'@%d\n' % epoch, stdout=subprocess.PIPE, check=True).stdout.strip()

    def expected(tz):
        return EPOCHS[tz] + [NOW_EPOCH + 12 * HOUR, NOW_EPOCH + 20 * HOUR]      # afternoons and evenings: PM

    def reads(tz):
        env = dict(os.environ, PATH='%s%s%s' % (fake.parent, os.pathsep, os.environ['PATH']), LC_ALL='C')   # TZ=tz
        reader = clock.DateReader([env])
        return [(render(epoch), reader.epoch(render(epoch))) for epoch in expected(tz)]
    for tz in ('Europe/Berlin', 'America/New_York'):
        found = in_timezone(tz, lambda: reads(tz))
        assert [epoch for text, epoch in found] == expected(tz), found
        assert any(text.split()[4] == b'PM' for text, epoch in found) and any(text.split()[4] == b'AM' for text, epoch in found)


def test_an_entry_unblocked_under_another_spelling_and_put_back_by_hand_stays(files, quiet_log):
    """--unblock 2001:DB8::7 removes the line 2001:db8::7 (the same address); its removal
    line must end that addition's record too, so the entry put back by hand never expires."""
    files.blocklist.write_bytes(b'2001:db8::7\n')
    files.activity_log.write_bytes(added('2001:db8::7', 6))
    got = run_core(files.options() + ['--unblock', '2001:DB8::7'])
    assert got.returncode == 0 and files.read('blocklist') == b''
    files.blocklist.write_bytes(b'2001:db8::7\n')           # put back by hand
    got = detect(files, quiet_log, '--ban-time', '2h')
    assert got.returncode == 0, got.stderr
    assert b'Unblocking' not in got.stdout
    assert files.read('blocklist') == b'2001:db8::7\n'


def test_unblocking_a_network_with_host_bits_leaves_the_wider_networks_ban_to_expire(files, quiet_log):
    """--unblock 203.0.113.5/22 takes off only its own line (test_unblock), and its removal line
    is a record of that text alone: the wider network's addition 3 h ago still expires it."""
    files.blocklist.write_bytes(b'203.0.112.0/22\n203.0.113.5/22\n')
    files.activity_log.write_bytes(added('203.0.112.0/22', 3))
    got = run_core(['--blocklist', files.blocklist, '--activity-log', files.activity_log, '--unblock', '203.0.113.5/22'])
    assert got.returncode == 0 and files.read('blocklist') == b'203.0.112.0/22\n', (got.stdout, got.stderr)
    got = detect(files, quiet_log, '--ban-time', '2h')
    assert got.returncode == 0, got.stderr
    assert b'Unblocking IP address: 203.0.112.0/22 (ban of 2h expired)' in got.stdout, got.stdout
    assert files.read('blocklist') == b''
