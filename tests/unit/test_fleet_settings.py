"""The fleet store's settings (issue 37 §1): one row each in the settings table, so option,
config key, module option and role variable; a bad URL is one line naming it, exit status 2,
before anything is read or written, and the password never shows in it."""
import re

import pytest

import loggen
from conftest import in_timezone, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import checks, settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SECRET = 'S3cr3t-pw'
BAD = {
    'http://u:%s@store:6379/0' % SECRET: 'the scheme must be redis://, rediss:// (TLS) or unix://',
    'redis://u:%s@store:6379/x' % SECRET: "the database must be a number (/0 to /15), got 'x'",
    'redis://u:%s@store:99999/0' % SECRET: 'is not a valid URL',
    'redis://:%s@/0' % SECRET: 'no host: redis://HOST:PORT/DB',
    'unix://u:%s@' % SECRET: "unix:// needs the socket's path",
    'redis://store:6379/0?clutser=yes': 'unknown parameter clutser',
    'redis://store:6379/0?cluster=maybe': 'cluster must be yes, no or auto',
    'redis://u:%s@store:6379/3?cluster=yes' % SECRET: 'a Redis Cluster has database 0 only',
    'store:6379': 'the scheme must be',
}
GOOD = {
    'redis://store:6379/2': dict(host='store', port=6379, db=2, password=None, tls=False, cluster=None),
    'redis://bd:p%%40%s@10.0.0.9/0' % SECRET: dict(host='10.0.0.9', port=6379, username='bd', password='p@' + SECRET, db=0),
    'rediss://:%s@store.example:6380' % SECRET: dict(port=6380, tls=True, username=None, password=SECRET),
    'unix:///run/redis/redis.sock?db=4': dict(path='/run/redis/redis.sock', db=4, host=None),
    'redis://[::1]:7000/0?cluster=yes': dict(host='::1', port=7000, cluster=True),
    'redis://store/0?cluster=no': dict(cluster=False),
}


@pytest.mark.parametrize('url', sorted(BAD))
def test_the_command_refuses_a_bad_store_url_in_one_line_without_the_password(tmp_path, files, url):
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1500})))
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--fleet-store', url, '--now', NOW, log])
    assert got.returncode == errors.EXIT_BAD_OPTION, got
    lines = got.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and 'fleet_store: ' in lines[0] and BAD[url] in lines[0], lines
    assert SECRET not in got.stderr.decode() and got.stdout == b''
    assert files.read('blocklist') is None and files.read('activity_log') is None


@pytest.mark.parametrize('url', sorted(GOOD))
def test_a_good_url_is_read_into_its_parts(url):
    store = checks.fleet_store_url(url)
    for key, value in GOOD[url].items():
        assert store[key] == value, (key, store)
    assert SECRET not in checks.redact_url(url)
    assert settings.Settings(fleet_store=url).fleet_store == url


def test_the_redacted_url_keeps_everything_but_the_password():
    assert checks.redact_url('redis://bd:%s@store:6379/2?cluster=yes' % SECRET) == 'redis://bd:***@store:6379/2?cluster=yes'
    assert checks.redact_url('rediss://:%s@store' % SECRET) == 'rediss://:***@store'
    assert checks.redact_url('redis://store:6379/0') == 'redis://store:6379/0'
    assert checks.redact_url('unix:///run/r.sock') == 'unix:///run/r.sock'


@pytest.mark.parametrize('values, message', [
    (dict(fleet_store='redis://u:%s@store/0' % SECRET, fleet_store_password_file='/etc/pw'), 'the password is given twice'),
    (dict(fleet_host='web1'), 'fleet_host: needs fleet_store'),
    (dict(fleet_store_password_file='/etc/pw'), 'fleet_store_password_file: needs fleet_store'),
    (dict(fleet_store='redis://store/0', fleet_name='a{b}'), 'fleet_name: must not hold'),
    (dict(fleet_store='redis://store/0', fleet_host='web 1\n'), 'fleet_host: must not hold braces'),
    # A blank inside meets the store's own 'NAME twice' field; control characters reach the warnings.
    (dict(fleet_store='redis://store/0', fleet_host='web1 twice'), 'fleet_host: must not hold braces, blanks'),
    (dict(fleet_store='redis://store/0', fleet_host='e\x00u'), 'fleet_host: must not hold'),
    (dict(fleet_store='redis://store/0', fleet_host='web\x7f'), 'fleet_host: must not hold'),
    (dict(fleet_store='redis://store/0', fleet_host='web\u2028'), 'fleet_host: must not hold'),
])
def test_the_settings_refuse_what_cannot_work(values, message):
    with pytest.raises(errors.BotDetectorError) as caught:
        settings.Settings(surface='module', **values)
    assert message in str(caught.value) and caught.value.exit_status == errors.EXIT_BAD_OPTION
    assert SECRET not in str(caught.value)


def test_the_config_file_and_the_options_carry_them(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    config = tmp_path / 'bot-detector.conf'
    config.write_text('[bot_detector]\nfleet_store = gopher://u:%s@store/0\nfleet_name = jobs-eu\n' % SECRET)
    got = run_core(files.options() + ['--config', config, '--now', NOW, log])
    assert got.returncode == errors.EXIT_BAD_OPTION and SECRET not in got.stderr.decode(), got
    assert 'fleet_store: gopher://u:***@store/0: the scheme must be' in got.stderr.decode()
    help_text = run_core(['--help']).stdout.decode()
    for flag in ('--fleet-store URL', '--fleet-store-password-file PATH', '--fleet-host NAME', '--fleet-name NAME'):
        assert flag in help_text


# Passwords as generators write them (base64: '/' and '+'; others: '?', '#', '@', ':'), raw
# in the URL: each piece between those characters must never show, whatever the URL's fault.
RAW_PASSWORDS = ['Qx7Lm/Zr9+Kw2=', 'Ty4Hn?Bv8#Pd3@Jc6:Wq1', 'Mf5Gs//Xk2Rb', 'Nh8Ue[Vt5]Ay0']
FAULTS = ['http://bd:%s@store:6379/0', 'redis://bd:%s@store:6379/x', 'redis://bd:%s@store:99999/0', 'redis://:%s@/0',
          'redis://bd:%s@store:6379/0', 'redis://%s@store:6379/0?cluster=maybe', 'unix://bd:%s@',
          'redis://store:6379/0?password=%s', 'rediss://bd:%s@store/3?cluster=yes']


def pieces(password):
    return [piece for piece in re.split(r'[/?#@:\[\]+=]', password) if len(piece) >= 3]


@pytest.mark.parametrize('password', RAW_PASSWORDS)
@pytest.mark.parametrize('fault', FAULTS)
def test_a_password_in_any_spelling_never_shows_in_the_error(tmp_path, files, password, fault):
    url = fault % password
    try:
        checks.fleet_store_url(url)
    except errors.BotDetectorError as exc:
        shown = str(exc)
    else:
        shown = None
    if shown is not None:       # refused: the one line names the setting, the password stays out
        assert shown.startswith('fleet_store: ') and '\n' not in shown, shown
        assert not [piece for piece in pieces(password) if piece in shown], shown
    redacted = checks.redact_url(url)
    assert not [piece for piece in pieces(password) if piece in redacted], redacted
    if fault == FAULTS[1]:      # the command's own line too
        log = tmp_path / 'access.log'
        log.write_bytes(b'')
        got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--fleet-store', url, '--now', NOW, log])
        assert got.returncode == errors.EXIT_BAD_OPTION, got
        assert not [piece for piece in pieces(password) if piece in (got.stderr + got.stdout).decode()], got


# A fleet's keys start with "{NAME:" and its ACL user's pattern is "~{NAME:*": a glob character
# in a name widens the pattern over other fleets' keys ("eu*" covers "eu-de"), a ':' makes one
# name a prefix of another's keys ("eu" covers "eu:de"), a '}' ends the hash tag early (a
# window's keys spread over cluster slots), a blank splits the ACL line.
@pytest.mark.parametrize('name', ['eu*', 'e?', 'eu[de]', 'eu\\de', 'eu}de', '{eu', 'eu:de', 'eu de', 'eu\tde', ' eu', 'eu\n'])
def test_a_fleet_name_with_a_glob_or_hash_tag_character_is_refused(tmp_path, files, name):
    with pytest.raises(errors.BotDetectorError) as caught:
        settings.Settings(fleet_store='redis://store/0', fleet_name=name)
    assert str(caught.value).startswith('fleet_name: ') and caught.value.exit_status == errors.EXIT_BAD_OPTION
    if name != name.strip():
        return      # the command line strips its values' blanks: the name is then plain
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--fleet-store', 'redis://127.0.0.1:1/0', '--fleet-name', name,
                                      '--now', NOW, log])
    assert got.returncode == errors.EXIT_BAD_OPTION and 'error: fleet_name: must not hold' in got.stderr.decode(), got
    assert len(got.stderr.decode().strip().splitlines()) == 1 and got.stdout == b''


@pytest.mark.parametrize('name', ['bot-detector', 'jobs-eu', 'jobs_eu.2', 'EU'])
def test_a_plain_fleet_name_is_taken(name):
    assert settings.Settings(fleet_store='redis://store/0', fleet_name=name).fleet_name == name


@pytest.mark.parametrize('url', ['redis://%s@127.0.0.1:1/0', 'rediss://%s@store:6380', 'redis://%s@127.0.0.1:1/0?cluster=maybe',
                                 'redis://bd:x@127.0.0.1:1/0?%s', 'redis://127.0.0.1:1/0?db=0&%s'])
def test_a_password_where_redis_cli_reads_one_or_a_bare_query_value_never_shows(tmp_path, files, url):
    """redis-cli -u reads a user part without ':' as the password (redis://PASSWORD@host): an
    operator who tried the URL so gives it whole; a bare query value is no db or cluster either.
    Neither shows in the exit-2 line, the warnings, --json, --status or the metrics."""
    url = url % SECRET
    assert SECRET not in checks.redact_url(url)
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    metrics = tmp_path / 'metrics.prom'
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--fleet-store', url, '--fleet-host', 'web1', '--json',
                                      '--metrics-file', metrics, '--now', NOW, log])
    status = run_core(files.options() + ['--server-ip', '10.0.0.5', '--fleet-store', url, '--status', '--json'])
    shown = got.stdout + got.stderr + status.stdout + status.stderr + (metrics.read_bytes() if metrics.exists() else b'')
    assert SECRET.encode() not in shown, shown
