"""nginx enforcement: lines appended to the blocklist since the last load are added to the geo
file without the whole blocklist parsed again (issue 38, item 7), and the file then means what
a whole load of the blocklist would: checked against a whole load for random blocklists and
random appended lines (addresses alone, next to listed ones or to each other, already listed,
exempt, networks, junk), and one addition to a 200,000-entry blocklist timed against a load."""
import ipaddress
import random

from hypothesis import given, settings as hsettings, strategies as st

from conftest import run_core
from loadfactor import children_cpu_seconds
from test_nginx_exemptions import geo_value
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nginx, sync
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

LINE = st.one_of(
    st.integers(0, 63).map(lambda n: '10.0.0.%d' % n),                    # addresses, many next to each other
    st.integers(0, 63).map(lambda n: '2001:db8::%x' % n),
    st.integers(0, 15).map(lambda n: '10.0.0.%d/30' % (n * 4)),           # networks
    st.sampled_from(['192.0.2.1', '192.0.2.20', '127.0.0.1', '::1', '::ffff:10.0.0.9', 'junk', '# comment', '']),
)


def settings_for(tmp_path, name):
    (tmp_path / 'allow').write_text('192.0.2.16/29\n10.0.0.40\n')
    return Settings(enforcement='nginx', blocklist=str(tmp_path / 'blocklist'), activity_log=str(tmp_path / 'activity'),
                    exclusions_file=str(tmp_path / 'allow'), server_ips=['192.0.2.1', '2001:db8::1'],
                    nginx_geo_file=str(tmp_path / name), nginx_test_command='true', nginx_reload_command='true',
                    enforcement_min_prefix_v4=24)


def meaning(path):
    lines = path.read_text().splitlines()
    probes = [ipaddress.ip_address('10.0.0.%d' % n) for n in range(66)] + [ipaddress.ip_address('2001:db8::%x' % n) for n in range(66)]
    probes += [ipaddress.ip_address(a) for a in ('192.0.2.1', '192.0.2.20', '127.0.0.1', '::1', '2001:db8::1')]
    return {str(address): geo_value(lines, address) for address in probes}


@hsettings(max_examples=150, deadline=None)
@given(st.lists(LINE, max_size=20), st.lists(st.lists(LINE, max_size=4), min_size=1, max_size=4))
def test_appended_lines_mean_what_a_whole_load_means(tmp_path_factory, base, additions):
    tmp_path = tmp_path_factory.mktemp('appends')
    settings = settings_for(tmp_path, 'blocked.conf')
    whole = settings_for(tmp_path, 'whole.conf')
    blocklist = tmp_path / 'blocklist'
    blocklist.write_text(''.join(line + '\n' for line in base))
    assert sync.sync(settings).in_sync
    for lines in additions:
        with open(str(blocklist), 'a') as f:
            f.write(''.join(line + '\n' for line in lines))
        status = sync.sync(settings)
        again = sync.sync(whole, force=True)
        assert status.in_sync and again.in_sync
        assert meaning(tmp_path / 'blocked.conf') == meaning(tmp_path / 'whole.conf')
        assert status.entries == again.entries
        assert nginx.loaded(settings)[:2] == nginx.loaded(whole)[:2]
        assert sync.sync(settings).changed is False        # in sync: nothing loaded again


def test_one_addition_to_200000_entries_costs_a_fraction_of_a_load(tmp_path):
    rng = random.Random(38)
    listed = sorted(set(rng.randrange(1, 1 << 23) * 2 for dummy in range(200000)))      # even: never next to each other
    (tmp_path / 'blocklist').write_text(''.join('10.%d.%d.%d\n' % (n >> 16, n >> 8 & 255, n & 255) for n in listed))
    options = ['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions', tmp_path / 'allow',
               '--server-ip', '192.0.2.1', '--enforcement', 'nginx', '--nginx-geo-file', tmp_path / 'blocked.conf',
               '--nginx-test-command', 'true', '--nginx-reload-command', 'true']
    start = children_cpu_seconds()
    load = run_core(options + ['--enforce-now'])
    whole = children_cpu_seconds() - start
    assert load.returncode == 0, load
    before = (tmp_path / 'blocked.conf').read_text().splitlines()
    with open(str(tmp_path / 'blocklist'), 'a') as f:
        f.write('198.51.100.77\n')
    start = children_cpu_seconds()
    (tmp_path / 'access.log').write_text('')
    added = run_core(options + [tmp_path / 'access.log'])      # a run that blocks nothing syncs what was appended
    one = children_cpu_seconds() - start
    assert added.returncode == 0, added
    after = (tmp_path / 'blocked.conf').read_text().splitlines()
    assert after[2:] == before[2:] + ['198.51.100.77 1;']
    assert after[1].split()[3] == str(int(before[1].split()[3]) + 1)        # the entries count
    assert one < whole / 3, (one, whole)        # CPU seconds: wall time varies with the machine's load


def test_a_change_nginx_would_not_see_writes_the_header_without_a_reload(tmp_path):
    """Lines appended that block no one more (exempt, already inside a blocked network, a
    comment): the geo file's header follows the blocklist, nginx is neither tested nor reloaded;
    a line that blocks someone reloads it. The commands count their runs in a file."""
    calls = tmp_path / 'calls'
    options = ['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions', tmp_path / 'allow',
               '--server-ip', '192.0.2.1', '--enforcement', 'nginx', '--nginx-geo-file', tmp_path / 'blocked.conf',
               '--nginx-test-command', 'sh -c "echo test >> %s"' % calls, '--nginx-reload-command', 'sh -c "echo reload >> %s"' % calls]
    (tmp_path / 'allow').write_text('10.9.0.0/16\n')
    (tmp_path / 'blocklist').write_text('198.51.100.0/24\n')
    (tmp_path / 'access.log').write_text('')
    assert run_core(options + [tmp_path / 'access.log']).returncode == 0
    assert calls.read_text().split() == ['test', 'reload']
    for lines, reloads in ((['10.9.8.7', '192.0.2.1'], 1), (['198.51.100.77', '# a comment', '127.0.0.1'], 1),
                           (['198.51.100.0/25'], 1), (['203.0.113.5'], 2), (['10.9.0.0/24', '::1'], 2)):
        with open(str(tmp_path / 'blocklist'), 'a') as f:
            f.write(''.join(line + '\n' for line in lines))
        run = run_core(options + [tmp_path / 'access.log'])
        assert run.returncode == 0, run
        assert calls.read_text().split().count('reload') == reloads, lines
        assert nginx.loaded(Settings(nginx_geo_file=str(tmp_path / 'blocked.conf')))[2] == (tmp_path / 'blocklist').stat().st_size
        status = run_core(options + ['--status'])
        assert 'Enforcement nginx: in sync' in status.stdout.decode(), status


def test_a_sync_already_in_sync_does_not_parse_a_large_allow_list(tmp_path):
    """The exemptions enter the load's digest by their bytes; their lines are parsed only for a
    load. A run with nothing to load and a 600,000-line allow-list takes about as long as with
    an empty one (parsing it costs seconds)."""
    (tmp_path / 'blocklist').write_text('198.51.100.0/24\n')
    (tmp_path / 'access.log').write_text('')
    big = ''.join('10.%d.%d.%d\n' % (n >> 16, n >> 8 & 255, n & 255) for n in range(600000))
    times = {}
    for name, content in (('empty', ''), ('big', big)):
        (tmp_path / name).write_text(content)
        options = ['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions', tmp_path / name,
                   '--server-ip', '192.0.2.1', '--enforcement', 'nginx', '--nginx-geo-file', tmp_path / ('%s.conf' % name),
                   '--nginx-test-command', 'true', '--nginx-reload-command', 'true']
        assert run_core(options + ['--enforce-now']).returncode == 0
        start = children_cpu_seconds()
        run = run_core(options + [tmp_path / 'access.log'])
        times[name] = children_cpu_seconds() - start
        assert run.returncode == 0, run
    assert times['big'] < times['empty'] + 0.6, times       # CPU seconds: the same on a loaded machine
