"""The role's filters on the detector's table (issue 21): role_settings gives the module the
settings a host's variables set, typed as the config file would read them; role_problems
names the variable at fault and the nearest known name."""
import pytest
import yaml

from conftest import ROOT
from ansible.errors import AnsibleFilterError
from ansible_collections.jobboard.bot_detector.plugins.filter.host_config import role_problems, role_settings
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.campaign_settings import CAMPAIGN_ROWS
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SETTINGS

SPECS = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())


def _every_setting_as_text(names, rules):
    """Each of ``names`` given as the role's text, and what the config file reads of it."""
    variables, expected = {}, {}
    for setting in SETTINGS:
        if setting.name not in names:
            continue
        value = setting.default if setting.default not in (None, []) else {
            'list': ['10.0.0.5'], 'int': 24, 'duration': 7200, 'path': '/tmp/x', 'float': 1.5,
            'dict': {'address': 'real_ip'}, 'str': 'web-7'}[setting.kind]
        value = {'fleet_store': 'redis://store.internal:6379/0', 'ipv4_prefix': 24, 'campaigns': True,
                 'log_formats': ['/var/log/nginx/jobs.json=nginx_json'], 'trap_paths': ['/jobs/all-of-them/'],
                 'hosting_asns': [64510]}.get(setting.name, value)
        variables['bot_detector_' + setting.name] = setting.format(value).strip() if setting.kind not in ('list', 'dict') else value
        expected[setting.name] = value
    variables['bot_detector_rules'] = expected['rules'] = rules
    variables['bot_detector_unrelated'] = 'ignored'
    return variables, expected


# The campaign profile's rows need campaigns on and the spec rules (campaign_settings.check_campaigns).
CAMPAIGN_SETTINGS = set(row[0] for row in CAMPAIGN_ROWS)


@pytest.mark.parametrize('names,rules', [
    (set(s.name for s in SETTINGS) - CAMPAIGN_SETTINGS, 'precise'),
    (CAMPAIGN_SETTINGS | {'threshold', 'blocklist'}, 'spec'),
], ids=['every setting but the campaign profile', 'the campaign profile'])
def test_every_setting_given_as_text_is_typed_as_the_config_file_reads_it(names, rules):
    variables, expected = _every_setting_as_text(names, rules)
    assert role_settings(variables) == expected


def test_unset_settings_are_left_out():
    assert role_settings({'bot_detector_threshold': None, 'bot_detector_logs': ['/x']}) == {}


@pytest.mark.parametrize('variables,message', [
    ({'bot_detector_threshold': -5}, 'bot_detector_threshold: must be a whole number of at least 1, got -5'),
    ({'bot_detector_threshold': '-5'}, 'bot_detector_threshold: must be a whole number of at least 1, got -5'),
    ({'bot_detector_ban_time': 'forever'}, 'bot_detector_ban_time: '),
    ({'bot_detector_ban_time_max': '1d'}, 'bot_detector_ban_time_max: needs ban_time'),
    ({'bot_detector_ipv4_prefix': 24}, 'bot_detector_ipv4_prefix: IPv4 grouping needs the precise rules'),
])
def test_a_rejected_value_names_the_variable(variables, message):
    with pytest.raises(AnsibleFilterError) as info:
        role_settings(variables)
    assert str(info.value).startswith(message) and '\n' not in str(info.value)
    assert role_problems(variables, SPECS)[0].startswith(message)


def test_unknown_names_get_the_nearest_known_one_and_known_ones_pass():
    known = dict(('bot_detector_' + s.name, None) for s in SETTINGS)
    assert role_problems(known, SPECS) == []
    assert role_problems({'bot_detector_treshold': 5, 'bot_detector_zzz': 1, 'bot_detector_mine': 1}, SPECS,
                         internal=['bot_detector_mine']) == [
        'bot_detector_treshold: not a variable of the role; did you mean bot_detector_threshold?',
        'bot_detector_zzz: not a variable of the role; meta/argument_specs.yml lists them']


@pytest.mark.parametrize('part', ['http', 'server', 'js', 'page'])
def test_the_role_installs_exactly_the_nginx_answers_the_command_prints(tmp_path, part):
    from conftest import run_core
    from ansible_collections.jobboard.bot_detector.plugins.filter.host_config import nginx_answers
    variables = {'bot_detector_throttle_rate': '12r/s', 'bot_detector_throttle_burst': '4', 'bot_detector_challenge_pass_time': '2h',
                 'bot_detector_answer_exempt_paths': ['/healthz', '/assets/'], 'bot_detector_answer_dir': '/srv/answers',
                 'bot_detector_other_role_variable': 'ignored'}
    printed = run_core(['--blocklist', tmp_path / 'b', '--throttle-rate', '12r/s', '--throttle-burst', '4', '--challenge-pass-time', '2h',
                        '--answer-exempt-path', '/healthz', '--answer-exempt-path', '/assets/', '--answer-dir', '/srv/answers',
                        '--nginx-snippet', part])
    assert printed.returncode == 0, printed.stderr
    assert nginx_answers(variables, part).encode() == printed.stdout
    if part == 'http':
        assert b'rate=12r/s;' in printed.stdout and b'js_var $bot_detector_pass_time 7200;' in printed.stdout


def test_nginx_answers_refuses_what_would_change_the_configuration():
    from ansible_collections.jobboard.bot_detector.plugins.filter.host_config import nginx_answers
    with pytest.raises(AnsibleFilterError, match=r'answer_exempt_paths: .* cannot be written into an nginx configuration'):
        nginx_answers({'bot_detector_answer_exempt_paths': ['/a; return 200']}, 'http')
