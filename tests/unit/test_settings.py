"""The one table of settings: the command, the config file, the module's docs, the role."""
import json
import os
import subprocess
import sys

import pytest
import yaml

import loggen
from conftest import ROOT, mask_duration, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.config import DEFAULT_CONFIG, format_config, read_config

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


@pytest.fixture
def log(tmp_path):
    path = tmp_path / 'access.log'
    path.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450, '203.0.113.8': 1100}))
    return path


def run(files, log, config, *extra):
    return run_core(files.options() + ['--now', NOW, '--config', config] + list(extra) + [log])


def test_config_file_then_options_then_defaults(tmp_path, files, log):
    config = tmp_path / 'bot-detector.conf'
    config.write_text('# the role writes this\n[bot_detector]\nthreshold = 1200\nserver_ips =\n    10.0.0.5\n'
                      'job_prefixes =\n    "GET /job/"\n    "GET /jobs/"\n')
    got = run(files, log, config)
    assert got.returncode == 0, got.stderr
    assert b'Blocking IP address: 203.0.113.7 (1450 requests)' in got.stdout
    assert b'203.0.113.8' not in got.stdout                      # 1100 < 1200, the file's threshold
    again = run(files, log, config, '--threshold', '1000', '--check')
    assert b'Would block IP address: 203.0.113.8 (1100 requests)' in again.stdout   # the option wins


def test_config_list_items_keep_their_blanks(tmp_path, files):
    """A prefix ending in a space is written quoted and read back with it: 'GET /job ' must not
    count '/jobboard' pages, which 'GET /job' (the space lost) would."""
    path = tmp_path / 'access.log'
    path.write_bytes(b''.join(loggen.line('203.0.113.9', NOW_EPOCH - 3600, path='/jobboard/%d' % i) for i in range(1200)))
    text = format_config({'job_prefixes': ['GET /job '], 'server_ips': ['10.0.0.5']})
    assert '"GET /job "' in text
    config = tmp_path / 'c.conf'
    config.write_text(text)
    assert read_config(str(config)) == {'job_prefixes': ['GET /job '], 'server_ips': ['10.0.0.5']}
    assert run(files, path, config, '--check').stdout.count(b'203.0.113.9') == 0
    assert run(files, path, config, '--check', '--job-prefix', 'GET /job').stdout.count(b'203.0.113.9') == 1


@pytest.mark.parametrize('content,fragment', [
    ('[bot_detector]\nthreshold = ten\n', b": threshold = ten: must be a whole number, got 'ten'"),
    ('[bot_detector]\nthreshold = 0\n', b': threshold = 0: must be a whole number of at least 1, got 0'),
    ('[bot_detector]\nrules = fuzzy\n', b': rules = fuzzy: must be one of spec, precise'),
    ('[bot_detector]\nrotated = maybe\n', b': rotated = maybe: must be true or false'),
    ('[bot_detector]\ncrawlers = {"x": \n', b': crawlers = {"x":: must be a JSON object'),
    # nested deeper than Python's json reads: a RecursionError, no ValueError, escaped as a traceback
    pytest.param('[bot_detector]\ncrawlers = %s%s\n' % ('[' * 5000, ']' * 5000), b': crawlers = [[[[',
                 id='crawlers-nested-deep'),
    pytest.param('[bot_detector]\nlog_json_fields = %s1%s\n' % ('{"a":' * 5000, '}' * 5000), b': log_json_fields = {"a":{"a":',
                 id='log_json_fields-nested-deep'),
    ('[bot_detector]\nthreshhold = 5\n', b": unknown setting 'threshhold'"),
    ('threshold = 5\n', b'File contains no section headers'),
    ('[bot_detector]\nthreshold = 5\nthreshold = 6\n', b"option 'threshold'"),
    (b'[bot_detector]\nsearch_engine = \xff\n', b': not UTF-8 text'),
])
def test_bad_config_exit_2_one_line_naming_file_and_key(tmp_path, files, log, content, fragment):
    config = tmp_path / 'bad.conf'
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    got = run(files, log, config)
    assert got.returncode == 2 and got.stdout == b''
    assert got.stderr.count(b'\n') == 1, got.stderr
    assert got.stderr.startswith(b'bot-detector: error: %s' % bytes(config)) and fragment in got.stderr, got.stderr
    assert not files.base.exists() or not any(files.base.iterdir())


def _module_setting_names():
    """Every name and alias of the module's options that are settings, {name: setting}."""
    sys.path.insert(0, str(ROOT / 'plugins' / 'modules'))
    try:
        import bot_detector as module  # pylint: disable=import-error
    finally:
        sys.path.pop(0)
    names = {}
    for name, option in module.argument_spec().items():
        if name in settings.BY_NAME:
            names.update((key, name) for key in [name] + list(option.get('aliases', [])))
    return names


def test_the_config_file_takes_exactly_the_names_and_aliases_the_module_takes(tmp_path):
    """Issue 21: `server_ip = 127.0.0.1` was an unknown setting, though a documented alias."""
    names = _module_setting_names()
    assert any(key != name for key, name in names.items())          # there are aliases to test
    for key, name in names.items():
        setting = settings.BY_NAME[name]
        value = settings.SETTINGS[0].default if setting.kind == 'path' else setting.default
        if value is None or value == []:
            value = {'list': [24] if setting.elements == 'int' else ['127.0.0.1'], 'int': 24, 'duration': 3600, 'path': '/tmp/x',
                     'dict': {'address': 'real_ip'},
                     'str': 'redis://127.0.0.1:6379/0'}[setting.kind]
        config = tmp_path / ('%s.conf' % key)
        text = setting.format(value)
        config.write_text('[bot_detector]\n%s =%s\n' % (key, text if text.startswith('\n') else ' ' + text))
        assert read_config(str(config)) == {name: value}, key
    for bad in ('threshhold', 'server_ipss', 'exclusion'):
        config = tmp_path / 'bad.conf'
        config.write_text('[bot_detector]\n%s = 1\n' % bad)
        with pytest.raises(errors.BotDetectorError, match="unknown setting '%s'" % bad):
            read_config(str(config))


def test_a_setting_given_by_its_name_and_an_alias_in_the_config_file_fails(tmp_path, files, log):
    config = tmp_path / 'both.conf'
    config.write_text('[bot_detector]\nserver_ips = 10.0.0.5\nserver_ip = 127.0.0.1\n')
    got = run(files, log, config)
    assert got.returncode == 2 and got.stderr.count(b'\n') == 1, got.stderr
    assert b"server_ip: server_ips is given twice (server_ip is its alias)" in got.stderr, got.stderr


def test_missing_config_given_explicitly_is_an_error_the_default_is_not(tmp_path, files, log):
    got = run(files, log, tmp_path / 'nope.conf')
    assert got.returncode == 2 and b'cannot read the config file %s' % bytes(tmp_path / 'nope.conf') in got.stderr
    # Without --config, the default path is read when it exists; on this machine it does not.
    assert not os.path.exists(DEFAULT_CONFIG)
    plain = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', log])
    assert plain.returncode == 0 and b'Blocking IP address: 203.0.113.7' in plain.stdout


def test_bool_settings_turn_off_from_the_command_line(tmp_path, files, log):
    config = tmp_path / 'c.conf'
    config.write_text('[bot_detector]\nrotated = true\nseek = true\nserver_ips = 10.0.0.5\n')
    (tmp_path / 'access.log.1').write_bytes(loggen.planted_log(NOW_EPOCH, previous={'198.51.100.7': 1300}))
    log.write_bytes(loggen.planted_log(NOW_EPOCH, current={'203.0.113.7': 10}))   # starts after the windows began
    on = json.loads(run(files, log, config, '--json', '--check').stdout)
    off = json.loads(run(files, log, config, '--json', '--check', '--no-rotated', '--full-scan').stdout)
    assert [b['address'] for b in on['blocked']] == ['198.51.100.7'] and len(on['scans']) == 2
    assert off['blocked'] == [] and [s['mode'] for s in off['scans']] == ['full']


def test_format_config_round_trips_every_setting(tmp_path):
    values = {'blocklist': '/srv/b list.txt', 'exclusions_file': '/srv/e', 'activity_log': '/srv/a', 'threshold': 7,
              'top': 3, 'job_prefixes': [' GET /x ', '#GET', '"q"', 'GET /é/'], 'search_engine': 'Bing;x',
              'server_ips': ['10.0.0.5', '::1'], 'rotated': False, 'seek': False, 'seek_margin': 0, 'rules': 'precise',
              'crawlers': {'a': {'user_agent': 'A|B', 'domains': ['a.example']}}, 'ipv6_prefix': 64, 'dns_timeout': 0.5, 'dns_budget': 12.5, 'dns_lookups': 40,
              'lock_timeout': 5, 'state_dir': '/srv/state', 'ipv4_prefix': 24, 'ban_time': 5400,
              'ban_time_max': 7 * 86400, 'metrics_file': '/srv/m.prom', 'count_budget': 5000, 'state_budget': 1 << 20,
              'enforcement': 'nginx', 'enforcement_ports': [8080, 443], 'enforcement_min_prefix_v4': 16, 'enforcement_min_prefix_v6': 48,
              'nginx_geo_file': '/srv/geo.conf',
              'nginx_test_command': "nginx -t -c '/srv/n x.conf'", 'nginx_reload_command': 'systemctl reload nginx',
              'log_format': 'auto', 'log_formats': ['/srv/a b.log=nginx_json', '/srv/c=caddy'],
              'log_json_fields': {'address': 'real_ip'}, 'trusted_proxies': ['10.0.0.0/8', '::1'],
              'haproxy_user_agent_capture': 2, 'fleet_store': 'redis://bd@store:6379/1?cluster=no',
              'fleet_store_password_file': '/srv/fleet pw', 'fleet_host': 'web-7.example', 'fleet_name': 'jobs-eu',
              'campaigns': True, 'trap_paths': ['/jobs/x y/', '/hidden'], 'sliding_hour': True,
              'campaign_behaviour_threshold': 50, 'campaign_shared_threshold': 4000, 'campaign_network_threshold': 300,
              'campaign_network_addresses': 8, 'campaign_ipv4_prefix': 22, 'campaign_ipv6_prefixes': [56, 40],
              'asn_database': '/srv/ip2asn v4.tsv', 'campaign_as_threshold': 500, 'campaign_as_addresses': 30,
              'campaign_walk_ids': 12, 'hosting_asns': [64510, 4294967295], 'campaign_hosting_divisor': 8,
              'throttle_list': '/srv/t list', 'challenge_list': '/srv/c', 'answer_dir': '/srv/answers', 'answer_time': 7200,
              'throttle_rate': '5r/s', 'throttle_burst': 0, 'throttle_retry_after': 30, 'challenge_pass_time': 600,
              'challenge_secret_file': '/srv/secret', 'answer_exempt_paths': ['/healthz', '/static/'],
              'nginx_answers_dir': '/srv/nginx', 'answer_address': 'block', 'answer_trap': 'throttle',
              'answer_network': 'block', 'answer_as': 'challenge', 'answer_shared': 'throttle', 'answer_behaviour': 'block',
              'answer_escalation': 40}
    assert set(values) == set(settings.BY_NAME)        # every row is exercised
    path = tmp_path / 'c.conf'
    path.write_text(format_config(values, header='# managed'))
    assert read_config(str(path)) == values
    # Unset settings are comments: the file reads back as no settings at all.
    path.write_text(format_config({}))
    assert read_config(str(path)) == {}


def test_settings_check_each_kind():
    for name, bad in (('threshold', '5'), ('threshold', True), ('rotated', 'yes'), ('job_prefixes', 'GET /job/'),
                      ('crawlers', []), ('dns_timeout', 0), ('rules', 'fuzzy'), ('ipv6_prefix', 0), ('blocklist', '')):
        with pytest.raises(errors.BotDetectorError) as err:
            settings.Settings(**{name: bad})
        assert err.value.exit_status == errors.EXIT_BAD_OPTION and err.value.message.startswith(name + ': ')
    assert settings.Settings(surface='module').rotated is True and settings.Settings().rotated is False
    assert settings.Settings(exclusions='/x', server_ip=['1.2.3.4']).exclusions_file == '/x'


def test_command_options_come_from_the_table():
    help_text = run_core(['--help']).stdout.decode()
    for setting in settings.SETTINGS:
        assert setting.flag in help_text, setting.name
        if setting.off_flag:
            assert setting.off_flag in help_text, setting.name


def ansible_doc(name):
    out = subprocess.run(['ansible-doc', '--json', name], cwd=str(ROOT), stdout=subprocess.PIPE, check=True,
                         env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'))).stdout
    return json.loads(out)[name]['doc']


def test_module_documentation_agrees_with_the_table_and_the_argument_spec():
    sys.path.insert(0, str(ROOT / 'plugins' / 'modules'))
    try:
        import bot_detector as module  # pylint: disable=import-error
    finally:
        sys.path.pop(0)
    spec = module.argument_spec()
    documented = ansible_doc('jobboard.bot_detector.bot_detector')['options']
    assert set(documented) == set(spec)
    for name, option in spec.items():
        doc = documented[name]
        assert doc['type'] == option['type'], name
        assert doc.get('elements') == option.get('elements'), name
        assert doc.get('choices') == option.get('choices'), name
        assert sorted(doc.get('aliases', [])) == sorted(option.get('aliases', [])), name
        assert doc.get('default') == option.get('default'), name
    for setting in settings.SETTINGS:
        assert setting.help in ' '.join(documented[setting.name]['description'])


def test_every_setting_is_a_documented_role_variable():
    specs = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())
    options = specs['argument_specs']['main']['options']
    defaults = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'defaults' / 'main.yml').read_text())
    for setting in settings.SETTINGS:
        variable = 'bot_detector_' + setting.name
        assert variable in options, variable
        assert options[variable]['type'] == setting.ansible_type, variable
        assert options[variable].get('choices') == (list(setting.choices) if setting.choices else None), variable
        # The role's defaults file sets exactly the settings the table says it does, to that value.
        assert defaults.get(variable) == setting.role_default, variable
        assert options[variable].get('default') == setting.role_default, variable
    # Every variable the role uses is documented, in the main entry point or the fleet's.
    assert set(defaults) <= set(options) | set(specs['argument_specs']['fleet']['options'])


def test_generated_docs_are_current():
    got = subprocess.run([sys.executable, str(ROOT / 'tests' / 'tools' / 'render_settings_docs.py'), '--check'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert got.returncode == 0, got.stdout


def test_role_renders_the_config_file_the_command_reads(tmp_path, files, log):
    """The role's template (through the host_config filter), rendered by real Ansible, read by the command."""
    playbook = tmp_path / 'render.yml'
    dest = tmp_path / 'bot-detector.conf'
    playbook.write_text(yaml.safe_dump([{
        'hosts': 'localhost', 'gather_facts': False,
        'vars': {'bot_detector_threshold': 1200, 'bot_detector_server_ips': ['10.0.0.5'],
                 'bot_detector_job_prefixes': ['GET /job/', 'GET /jobs/'], 'bot_detector_rules': 'spec'},
        'tasks': [{'name': 'render', 'ansible.builtin.template': {
            'src': str(ROOT / 'roles' / 'bot_detector' / 'templates' / 'bot-detector.conf.j2'), 'dest': str(dest)},
            'vars': {'bot_detector_config_names': "{{ lookup('ansible.builtin.varnames', '^bot_detector_(?!config_|fact_)', wantlist=True) }}",
                     'bot_detector_config_values': "{{ dict(bot_detector_config_names | zip(lookup('ansible.builtin.vars', "
                                                   "*bot_detector_config_names, wantlist=True))) }}"}}],
    }]))
    got = subprocess.run(['ansible-playbook', '-i', 'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
                          str(playbook)], cwd=str(ROOT),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                         env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg')))
    assert got.returncode == 0, got.stdout.decode()[-2000:]
    text = dest.read_text()
    assert text.startswith('#') and 'threshold = 1200' in text and '# top: default, 20' in text
    assert read_config(str(dest)) == {'threshold': 1200, 'server_ips': ['10.0.0.5'], 'rules': 'spec',
                                      'job_prefixes': ['GET /job/', 'GET /jobs/']}
    out = run(files, log, dest)
    assert out.returncode == 0 and mask_duration(out.stdout).splitlines()[1] == b'Blocking IP address: 203.0.113.7 (1450 requests)'
    assert b'203.0.113.8' not in out.stdout


def test_a_stale_settings_reference_is_caught(tmp_path):
    """The settings reference in guide_command.rst is rendered from the table: a row edited by
    hand, or the markers gone, fail the check naming the guide."""
    import shutil
    for part in ('tests/tools/render_settings_docs.py', 'plugins/doc_fragments/settings.py',
                 'roles/bot_detector/meta/argument_specs.yml', 'docs/docsite/rst/guide_command.rst'):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(str(ROOT / part), str(tmp_path / part))
    shutil.copytree(str(ROOT / 'plugins/module_utils/bot_detector'), str(tmp_path / 'plugins/module_utils/bot_detector'))
    guide = tmp_path / 'docs/docsite/rst/guide_command.rst'
    tool = [sys.executable, str(tmp_path / 'tests/tools/render_settings_docs.py')]

    def check():
        return subprocess.run(tool + ['--check'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
    assert check().returncode == 0
    text = guide.read_text()
    assert '     - ``bot_detector_threshold``\n     - 1000\n' in text
    guide.write_text(text.replace('     - ``bot_detector_threshold``\n     - 1000\n', '     - ``bot_detector_threshold``\n     - 100\n'))
    got = check()
    assert got.returncode == 1 and got.stdout == 'stale, run tests/tools/render_settings_docs.py: docs/docsite/rst/guide_command.rst\n'
    subprocess.run(tool, check=True)
    assert guide.read_text() == text
    guide.write_text(text.replace('.. END settings\n', ''))
    got = check()
    assert got.returncode != 0 and 'guide_command.rst: markers' in got.stdout, got.stdout
