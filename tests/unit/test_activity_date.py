"""The activity log's date is what `date` prints in its default format, in the run's
locale and zone (issue 10, finding 11), checked against the real `date`."""
import os
import subprocess
import sys
import time

import pytest

import loggen
from conftest import CORE, REFERENCE, Files, in_timezone

NOW = '2026-11-21 04:13:43'
GERMAN = 'de_DE.UTF-8'


def require_german_locale():
    listed = subprocess.run(['locale', '-a'], stdout=subprocess.PIPE, check=True).stdout.lower().split()
    if b'de_de.utf8' not in listed:
        message = '%s is missing: tests/tools/install-prereqs.sh generates it' % GERMAN
        if os.environ.get('CI') == 'true':
            pytest.fail(message)
        pytest.skip(message)


def environment(tz, **locale_vars):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('LC_') and k != 'LANG')
    env.update(locale_vars, TZ=tz)
    return env


def dates_between(start, end, env):
    """What `date` prints for each second from ``start`` to ``end``, in ``env``."""
    return set(subprocess.run(['date', '-d', '@%d' % second], env=env, stdout=subprocess.PIPE, check=True).stdout.rstrip(b'\n')
               for second in range(start, end + 1))


@pytest.mark.parametrize('tz', ['UTC', 'Europe/Berlin'])
@pytest.mark.parametrize('locale_vars', [{'LC_ALL': GERMAN}, {'LANG': 'C.UTF-8', 'LC_TIME': GERMAN}, {'LANG': GERMAN},
                                         {'LC_ALL': 'C.UTF-8'}], ids=['LC_ALL', 'LC_TIME', 'LANG', 'C'])
def test_activity_date_is_dates_in_the_runs_locale_and_zone(tmp_path, tz, locale_vars):
    require_german_locale()
    env = environment(tz, **locale_vars)
    log = tmp_path / 'access.log'
    epoch = in_timezone(tz, lambda: time.mktime(time.strptime(NOW, '%Y-%m-%d %H:%M:%S')))
    log.write_bytes(in_timezone(tz, lambda: loggen.planted_log(epoch, previous={'203.0.113.7': 1200})))
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    start = int(time.time())
    got = subprocess.run([sys.executable, str(CORE)] + [str(a) for a in ours.options()] + ['--server-ip', '10.0.0.5', '--now', NOW, str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    ref = subprocess.run([str(REFERENCE), str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                         env=dict(env, BD_BLOCKLIST=str(theirs.blocklist), BD_EXCLUSIONS=str(theirs.exclusions),
                                  BD_ACTIVITY_LOG=str(theirs.activity_log), BD_SERVER_IP='10.0.0.5',
                                  BD_NOW=NOW))
    end = int(time.time())
    assert got.returncode == 0 and ref.returncode == 0, (got.stderr, ref.stderr)
    expected = dates_between(start, end, env)
    for files in (ours, theirs):
        date, rest = files.read('activity_log').rstrip(b'\n').split(b' | ')
        assert date in expected, (date, expected)
        assert rest == b'IP addess 203.0.113.7 added to the block list, RPH=1200'
    in_c = dates_between(start, end, environment(tz, LC_ALL='C'))
    german = 'C.UTF-8' not in locale_vars.values() or locale_vars.get('LC_TIME') == GERMAN
    assert (ours.read('activity_log').split(b' | ')[0] in in_c) is not german


def test_date_now_is_taken_again_for_another_zone_or_locale_in_the_same_second(monkeypatch):
    """clock.date_default_format keeps what `date` printed for the rest of its second; a
    change of zone or locale within that second must not get the kept text."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
    require_german_locale()
    for tz, lc_all in (('UTC', 'C'), ('Asia/Tokyo', 'C'), ('Asia/Tokyo', GERMAN), ('UTC', 'C'), ('UTC', 'C')):
        monkeypatch.setenv('TZ', tz)
        monkeypatch.setenv('LC_ALL', lc_all)
        time.tzset()

        def date():
            return subprocess.run(['date'], stdout=subprocess.PIPE, check=True).stdout.decode().strip()
        before = date()
        got = clock.date_default_format()
        assert got in (before, date()), (tz, lc_all)
    time.tzset()


@pytest.mark.parametrize('tz', ['UTC', 'UTC0', ':Europe/Berlin', 'America/New_York', 'EST5EDT', 'Australia/Lord_Howe',
                                '<+0530>-5:30', 'Nowhere/Fake'])
@pytest.mark.parametrize('locale_vars', [{}, {'LC_ALL': 'POSIX'}, {'LC_ALL': '', 'LC_TIME': 'C', 'LANG': GERMAN},
                                         {'LANG': GERMAN}, {'LC_ALL': GERMAN, 'LC_TIME': 'C'}])
def test_date_now_is_what_date_prints_whatever_the_zone_and_locale_variables(tz, locale_vars, monkeypatch):
    """Under the C locale the date is written in this process (clock.C_DATE_FORMAT), under
    another taken from `date`: both must print what `date` prints, for every way the
    environment names a locale and for zones given as names, POSIX rules or nonsense."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
    if GERMAN in locale_vars.values():
        require_german_locale()
    env = environment(tz, **locale_vars)
    for name in ('LC_ALL', 'LC_TIME', 'LANG', 'TZ'):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        if name in ('LC_ALL', 'LC_TIME', 'LANG', 'TZ'):
            monkeypatch.setenv(name, value)
    time.tzset()
    try:
        for dummy in range(3):
            before = subprocess.run(['date'], env=env, stdout=subprocess.PIPE, check=True).stdout.decode().strip()
            got = clock.date_default_format()
            after = subprocess.run(['date'], env=env, stdout=subprocess.PIPE, check=True).stdout.decode().strip()
            assert got in (before, after)
            for epoch in (1792888200, 1775314800, 1767225600):
                assert clock.date_default_format(epoch) == subprocess.run(
                    ['date', '-d', '@%d' % epoch], env=env, stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    finally:
        monkeypatch.undo()
        time.tzset()
