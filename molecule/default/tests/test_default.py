"""Verify the role on each molecule host, through podman exec (testinfra's podman backend).
Tests that act on the whole group are in test_group.py, which runs after this file."""
import hashlib
import os

from prometheus_client.parser import text_string_to_metric_families

from helpers import CORE, PREPARED_BLOCKLIST, container_now, get, loggen, name_of, put

testinfra_hosts = ['podman://web1', 'podman://web2']
SCHEDULE = {'web1': '*/10', 'web2': '*/5'}
THRESHOLD = {'web1': 1000, 'web2': 1150}     # web2's from its host_vars, through the config file
LOGS = ['/var/log/nginx/access.log', '/var/log/nginx/stellen.access.log']
METRICS = '/var/lib/node_exporter/textfile_collector/bot_detector.prom'
# The platforms roles/bot_detector/meta/main.yml lists, one host each (molecule.yml).
RELEASE = {'web1': ('12', 'bookworm'), 'web2': ('13', 'trixie')}


def test_host_runs_its_debian_release(host):
    os_release = get(host, '/etc/os-release').decode()
    version, codename = RELEASE[name_of(host)]
    assert 'VERSION_ID="%s"' % version in os_release.splitlines()
    assert 'VERSION_CODENAME=%s' % codename in os_release.splitlines()


def test_files_owners_and_modes(host):
    # Every file of the core's stages (enforce/ is installed with enforcement only).
    sources = sorted(os.path.relpath(os.path.join(directory, name), CORE) for directory, dirs, names in os.walk(CORE)
                     for name in names if name.endswith('.py') and '__pycache__' not in directory)
    sources = [name for name in sources if not name.startswith('enforce/')]
    assert '__main__.py' in sources and 'values/settings.py' in sources and 'drivers/run.py' in sources
    for name in sources:
        core = host.file('/usr/local/lib/bot-detector/bot_detector/' + name)
        assert (core.user, core.group, core.mode) == ('root', 'root', 0o644)
        with open(os.path.join(CORE, name), 'rb') as f:
            assert core.sha256sum == hashlib.sha256(f.read()).hexdigest(), name    # the collection's own files
    assert not host.file('/usr/local/lib/bot-detector/bot_detector.py').exists
    command = host.file('/usr/local/sbin/bot-detector.sh')
    assert (command.user, command.mode) == ('root', 0o755)
    assert command.contains('Ansible managed')
    assert host.file('/etc/logrotate.d/bot-detector').contains('/var/log/bot-detector.log')
    # Numbered rotations whatever /etc/logrotate.conf says (dateext): ban expiry reads them.
    assert host.file('/etc/logrotate.d/bot-detector').contains('^ *nodateext$')
    exclusions = host.file('/etc/ipexcludedlist.txt')
    assert exclusions.mode == 0o644
    assert get(host, '/etc/ipexcludedlist.txt') == b'# office\n203.0.113.250\n198.51.100.23\n'


def test_existing_blocklist_survived_the_converges(host):
    # Converge, idempotence and check ran over a blocklist prepared with mode 0600 and no final newline.
    assert get(host, '/etc/ipblocklist.txt') == PREPARED_BLOCKLIST
    assert host.file('/etc/ipblocklist.txt').mode == 0o600


def test_cron_entry_per_log(host):
    cron = host.file('/etc/cron.d/bot-detector')
    assert (cron.user, cron.mode) == ('root', 0o644)
    entries = [l.split() for l in cron.content_string.splitlines() if l and not l.startswith('#') and '=' not in l]
    assert len(entries) == len(LOGS)
    for fields, log in zip(entries, LOGS):
        assert fields[:5] == [SCHEDULE[name_of(host)], '*', '*', '*', '*']
        assert fields[5] == 'root'
        assert fields[6:12] == ['mkdir', '-p', '-m', '0700', '/run/bot-detector', '&&']
        assert fields[12:15] == ['flock', '-n', fields[14]] and fields[14].startswith('/run/bot-detector/cron-')
        assert fields[15:17] == ['/usr/local/sbin/bot-detector.sh', log]
        assert fields[17:] == ['>>', '/var/log/bot-detector-cron.log', '2>&1']


def test_cron_lock_is_roots_alone(host):
    """A cron entry's lock: its flock file is in a directory no other user can enter, so
    no other user can hold it and make every run skip."""
    entry = [l for l in host.file('/etc/cron.d/bot-detector').content_string.splitlines()
             if l and not l.startswith('#') and '=' not in l][0]
    words = entry.split()[6:]
    lock = words[8]
    # The entry's own commands, with `true` for the detector (the planted-log tests run it).
    ran = host.run('sh -c %s', ' '.join(words[:9] + ['true']))
    assert ran.rc == 0, ran.stderr
    lock_dir = host.file('/run/bot-detector')
    assert (lock_dir.is_directory, lock_dir.user, lock_dir.mode) == (True, 'root', 0o700)
    assert host.file(lock).exists
    tried = host.run('setpriv --reuid=65534 --regid=65534 --clear-groups flock -n %s true', lock)
    assert tried.rc != 0 and 'Permission denied' in tried.stderr


def test_config_file_holds_the_hosts_settings(host):
    config = host.file('/etc/bot-detector/bot-detector.conf')
    assert (config.user, config.group, config.mode) == ('root', 'root', 0o644)
    assert config.contains('Ansible managed')
    text = config.content_string
    assert '\nrotated = true\n' in text
    assert '\nban_time = 2h\n' in text and '\nban_time_max = 1d\n' in text
    assert '\nmetrics_file = %s\n' % METRICS in text
    metrics_dir = host.file(os.path.dirname(METRICS))
    assert metrics_dir.is_directory and (metrics_dir.user, metrics_dir.mode) == ('root', 0o755)
    assert '\nserver_ips =\n    10.0.0.5\n' in text                  # group_vars: given, so no facts added
    if name_of(host) == 'web2':
        assert '\nthreshold = 1150\n' in text
    else:
        assert '\n# threshold: default, 1000\n' in text
    # The command on the host reads it back: a bad edit would fail every cron run.
    check = host.run('f=$(mktemp) && /usr/local/sbin/bot-detector.sh --check "$f"; rc=$?; rm -f "$f"; exit $rc')
    assert check.rc == 0, check.stderr


def test_command_without_argument_prints_usage(host):
    result = host.run('/usr/local/sbin/bot-detector.sh')
    assert result.rc == 1
    assert result.stdout.splitlines() == ['Path to log file missing.', 'Usage: bot-detector.sh <logfile>',
                                          '    bot-detector.sh /var/log/nginx/access.log']


def test_planted_log_blocks_expected_addresses(host):
    now = container_now(host)
    scraper = {'web1': '203.0.113.7', 'web2': '2001:db8:7::1'}[name_of(host)]
    put(host, LOGS[0], loggen.planted_log(now, previous={scraper: 1200, '198.51.100.23': 1500, '203.0.113.99': 999},
                                          current={'203.0.113.8': 1000, scraper: 40}))
    first = host.run('/usr/local/sbin/bot-detector.sh %s' % LOGS[0])
    assert first.rc == 0, first.stderr
    lines = first.stdout.splitlines()
    # 203.0.113.8 (1000 requests) reaches web1's threshold, not web2's (1150, from its config file).
    blocked_now = THRESHOLD[name_of(host)] <= 1000
    assert lines[:-1] == [
        'Checking the previous hour...',
        'IP address 198.51.100.23 is allow-listed and will not be blocked.',
        'Blocking IP address: %s (1200 requests)' % scraper,
        'Checking the current hour...',
    ] + (['Blocking IP address: 203.0.113.8 (1000 requests)'] if blocked_now else [])
    assert lines[-1].startswith('Execution time: ')
    added = [scraper] + (['203.0.113.8'] if blocked_now else [])
    assert get(host, '/etc/ipblocklist.txt') == PREPARED_BLOCKLIST + ''.join('\n' + a for a in added).encode() + b'\n'
    activity = get(host, '/var/log/bot-detector.log').decode().splitlines()
    assert [l.split(' | ', 1)[1] for l in activity] == [
        'IP addess %s added to the block list, RPH=%d' % (a, 1200 if a == scraper else 1000) for a in added]
    second = host.run('/usr/local/sbin/bot-detector.sh %s' % LOGS[0])
    assert 'IP address %s is already blocked.' % scraper in second.stdout
    assert ('IP address 203.0.113.8 is already blocked.' in second.stdout) == blocked_now
    assert 'Blocking' not in second.stdout


def test_runs_keep_their_state_where_only_root_can_read_it(host):
    """The planted-log runs above went through the wrapper with the role's state_dir."""
    directory = host.file('/var/lib/bot-detector')
    assert (directory.is_directory, directory.user, directory.group, directory.mode) == (True, 'root', 'root', 0o700)
    names = host.run('ls -A /var/lib/bot-detector').stdout.split()
    assert names and all(n.endswith('.json') for n in names), names
    for name in names:
        kept = host.file('/var/lib/bot-detector/' + name)
        assert (kept.user, kept.mode) == ('root', 0o600)
    again = host.run('/usr/local/sbin/bot-detector.sh %s' % LOGS[0])
    assert again.rc == 0 and again.stderr == '', again.stderr


def test_metrics_file_after_the_runs(host):
    """The runs above wrote the metrics file node_exporter reads: Prometheus text, parsed here."""
    blocked = 2 if THRESHOLD[name_of(host)] <= 1000 else 1
    metrics = host.file(METRICS)
    assert (metrics.user, metrics.mode) == ('root', 0o644)
    families = dict((f.name, f) for f in text_string_to_metric_families(get(host, METRICS).decode()))
    samples = dict(((s.name, tuple(sorted(s.labels.items()))), s.value) for f in families.values() for s in f.samples)
    assert all(f.documentation and f.type in ('gauge', 'counter') for f in families.values())
    assert samples[('bot_detector_last_run_success', (('log', LOGS[0]),))] == 1
    # The runs above kept a state (the role's state_dir): this one reads only what is appended.
    more = loggen.planted_log(container_now(host), current={'192.0.2.77': 25})
    put(host, LOGS[0], get(host, LOGS[0]) + more)
    again = host.run('/usr/local/sbin/bot-detector.sh %s' % LOGS[0])
    assert again.rc == 0 and again.stderr == '', again.stderr
    samples = dict(((s.name, tuple(sorted(s.labels.items()))), s.value)
                   for f in text_string_to_metric_families(get(host, METRICS).decode()) for s in f.samples)
    assert samples[('bot_detector_last_run_read_lines', (('log', LOGS[0]),))] == more.count(b'\n') == 25
    assert samples[('bot_detector_last_run_read_bytes', (('log', LOGS[0]),))] == len(more)
    assert samples[('bot_detector_last_run_top_requests', (('log', LOGS[0]), ('window', 'previous')))] == 1500
    assert samples[('bot_detector_additions_total', (('reason', 'own'),))] == blocked
    assert samples[('bot_detector_blocklist_entries', ())] == 2 + blocked


def test_bans_expire_across_the_rotated_activity_log(host):
    """With bot_detector_ban_time 2h: an addition 3 hours old in the activity log, and one only
    in its rotated, gzip-compressed file, expire; one an hour old and the prepared entries (no
    addition line) stay, the blocklist keeping its other lines, its owner and mode."""
    now = container_now(host)

    def activity(address, hours_ago):
        date = host.check_output('LC_ALL=C date -d @%d' % (now - hours_ago * 3600))
        return '%s | IP addess %s added to the block list, RPH=1300\n' % (date, address)
    before = get(host, '/etc/ipblocklist.txt')
    put(host, '/etc/ipblocklist.txt', before + b'203.0.113.201\n203.0.113.202\n203.0.113.203\n')
    host.run_expect([0], 'chmod 0600 /etc/ipblocklist.txt')
    put(host, '/var/log/bot-detector.log.2', activity('203.0.113.202', 3).encode())
    host.run_expect([0], 'gzip -f /var/log/bot-detector.log.2')
    put(host, '/var/log/bot-detector.log', get(host, '/var/log/bot-detector.log')
        + (activity('203.0.113.201', 3) + activity('203.0.113.203', 1)).encode())
    run = host.run('/usr/local/sbin/bot-detector.sh %s' % LOGS[0])
    assert run.rc == 0, run.stderr
    assert run.stdout.splitlines()[:2] == ['Unblocking IP address: 203.0.113.201 (ban of 2h expired)',
                                           'Unblocking IP address: 203.0.113.202 (ban of 2h expired)']
    assert get(host, '/etc/ipblocklist.txt') == before + b'203.0.113.203\n'
    assert get(host, '/etc/ipblocklist.txt').startswith(PREPARED_BLOCKLIST)
    blocklist = host.file('/etc/ipblocklist.txt')
    assert (blocklist.user, blocklist.mode) == ('root', 0o600)
    assert get(host, '/var/log/bot-detector.log').decode().endswith(
        'IP addess 203.0.113.202 removed from the block list (expired, ban 2h)\n')
    status = host.run('/usr/local/sbin/bot-detector.sh --status')
    assert '192.0.2.50  added by hand or by other software (no addition in the activity log, or none since its last removal); never expires' in status.stdout
    assert '203.0.113.203  added ' in status.stdout and 'expires' in status.stdout.split('203.0.113.203')[1]
