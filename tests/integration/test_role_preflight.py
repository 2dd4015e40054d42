"""The role's preflight (issue 21, findings 2 and 3), by real ansible-playbook on this
machine as a local-connection host, in check mode and with only the preflight's tag, so that
nothing is written whatever happens: every variable is checked before any change, a bad value
fails with one line naming the variable, a misspelt variable fails naming the nearest known
one, a missing log is a warning naming it, and a missing cron fails clearly when the role
may not install it."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SETTINGS

PLAY = '''- name: Deploy
  hosts: all
  gather_facts: false
  roles:
    - role: jobboard.bot_detector.bot_detector
'''


def preflight(tmp_path, *extra):
    """The role's preflight alone, in check mode; returns (status, output)."""
    play = tmp_path / 'play.yml'
    play.write_text(PLAY)
    present = tmp_path / 'access.log'
    present.write_text('')
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.default')
    argv = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'testhost,', '-c', 'local',
            '-e', 'ansible_python_interpreter=%s' % sys.executable, '--check', '--tags', 'bot_detector_preflight',
            '-e', '{"bot_detector_logs": ["%s"]}' % present, str(play)]
    for item in extra:
        argv += ['-e', item]
    got = subprocess.run(argv, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=300, check=False)
    return got.returncode, got.stdout


def failure(out):
    """The failed task's name and its message, which must be one line."""
    lines = out.splitlines()
    fatal = [i for i, line in enumerate(lines) if line.startswith('fatal: [testhost]: FAILED!')]
    assert len(fatal) == 1, out[-3000:]
    task = [line for line in lines[:fatal[0]] if line.startswith('TASK [')][-1]
    return task, lines[fatal[0]]


def bad_values():
    """A value each bounded setting rejects, and one of each kind the core parses."""
    for setting in SETTINGS:
        if setting.minimum is not None and setting.kind == 'int':
            yield setting.name, str(setting.minimum - 1)
        if setting.maximum is not None:
            yield setting.name, str(setting.maximum + 1)
        if setting.choices:
            yield setting.name, 'fuzzy'
        if setting.kind == 'duration':
            yield setting.name, 'forever'


@pytest.mark.parametrize('name,value', sorted(set(bad_values())))
def test_a_value_the_detector_rejects_fails_first_naming_the_variable_in_one_line(tmp_path, name, value):
    status, out = preflight(tmp_path, 'bot_detector_%s=%s' % (name, value), 'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'Check the variables' in task or 'Fail naming each variable' in task, out[-3000:]
    assert re.search(r'"msg": "[^"]*\bbot_detector_%s\b' % name, fatal), fatal
    assert len(fatal) < 400, fatal
    assert 'argument_spec_data' not in out
    assert 'changed=0' in out


@pytest.mark.parametrize('name,value', [('threshold', 'abc'), ('logrotate_rotate', 'many'), ('rotated', 'maybe'),
                                        ('logs', '{"a": 1}'), ('scheduler', 'anacron')])
def test_a_wrong_type_or_choice_fails_in_one_line_naming_the_variable_without_the_spec(tmp_path, name, value):
    status, out = preflight(tmp_path, '{"bot_detector_%s": %s}' % (name, value if value.startswith('{') else '"%s"' % value))
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'Fail naming each variable' in task, task
    assert 'bot_detector_%s' % name in fatal and len(fatal) < 600, fatal
    assert 'argument_spec_data' not in out and len(out) < 3000, out


def test_settings_that_conflict_fail_naming_the_variable(tmp_path):
    status, out = preflight(tmp_path, 'bot_detector_ipv6_prefix=64', 'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'Check the variables' in task
    assert '"msg": "bot_detector_ipv6_prefix: IPv6 grouping needs the precise rules' in fatal, fatal


@pytest.mark.parametrize('campaigns', ['false', 'true'])
def test_an_as_database_to_copy_needs_the_campaign_profile(tmp_path, campaigns):
    status, out = preflight(tmp_path, 'bot_detector_asn_database_src=files/ip2asn-combined.tsv',
                            'bot_detector_campaigns=%s' % campaigns, 'bot_detector_install_packages=false')
    if campaigns == 'true':     # this check passes (a later one may fail on this machine: cron)
        after = out.split('Check that the AS database to copy has the campaign profile to read it', 1)[1]
        assert after.split('TASK [', 1)[0].split('\n')[1].startswith('ok: [testhost]'), out[-3000:]
        return
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'AS database' in task
    assert '"msg": "bot_detector_asn_database_src: needs the campaign profile (bot_detector_campaigns: true)"' in fatal, fatal


@pytest.mark.parametrize('given,known', [
    ('bot_detector_treshold', 'bot_detector_threshold'),
    ('bot_detector_server_ip', 'bot_detector_server_ips'),
    ('bot_detector_cron_minutes', 'bot_detector_cron_minute'),
    ('bot_detector_fleet_treshold', 'bot_detector_fleet_threshold'),
])
def test_an_unknown_variable_fails_naming_the_nearest_known_one(tmp_path, given, known):
    status, out = preflight(tmp_path, '%s=500' % given, 'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'Check the variables' in task
    assert '"msg": "%s: not a variable of the role; did you mean %s?' % (given, known) in fatal, fatal


def test_a_missing_log_is_a_warning_naming_it_and_a_missing_cron_fails_when_not_installed(tmp_path):
    """This machine has no cron (/usr/sbin/cron); the role may not install it here."""
    if os.path.exists('/usr/sbin/cron'):
        pytest.skip('cron is installed on this machine')
    missing = tmp_path / 'nope' / 'access.log'
    status, out = preflight(tmp_path, '{"bot_detector_logs": ["%s", "%s"]}' % (tmp_path / 'access.log', missing),
                            'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    assert ('Warning: bot_detector_logs: %s does not exist (yet) on testhost; each run warns until it appears'
            % missing) in out, out[-3000:]
    assert out.count('does not exist (yet)') == 1
    task, fatal = failure(out)
    assert ('"msg": "cron is not installed on testhost, and the schedule (bot_detector_scheduler: cron) needs it: '
            'install the package cron, or set bot_detector_install_packages: true"') in fatal, fatal


def test_every_name_the_role_and_its_playbooks_set_is_known_to_the_preflight():
    """A bot_detector_* name registered, set as a fact or in the role's vars is listed in
    vars/main.yml's bot_detector_internal_variables (or documented): else the preflight of a
    second run in the same play would call it unknown."""
    import yaml
    role = ROOT / 'roles' / 'bot_detector'
    internal = set(yaml.safe_load((role / 'vars' / 'main.yml').read_text())['bot_detector_internal_variables'])
    documented = set()
    for entry in yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())['argument_specs'].values():
        documented.update(entry['options'])
    internal |= set(yaml.safe_load((role / 'vars' / 'main.yml').read_text()))
    set_here = set()
    for path in list(ROOT.glob('roles/*/tasks/*.yml')) + list(ROOT.glob('playbooks/*.yml')):
        text = path.read_text()
        set_here.update(re.findall(r'register: (bot_detector_\w+)', text))
        set_here.update(re.findall(r'set_fact:\n\s+(bot_detector_\w+):', text))
    set_here = set(name for name in set_here if not name.startswith('bot_detector_preflight_') or 'types' in name)
    assert set_here, 'no names found'
    assert sorted(set_here - internal - documented) == []


def role_lists():
    """The role's own list variables (type list in meta/argument_specs.yml, no setting of the
    table, whose text the table parses): the role loops over them."""
    import yaml
    specs = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    settings = set('bot_detector_' + setting.name for setting in SETTINGS)
    return sorted(set(name for entry in specs.values() for name, option in entry['options'].items()
                      if option.get('type') == 'list') - settings)


@pytest.mark.parametrize('name', role_lists())
def test_a_list_given_as_a_string_fails_naming_the_variable(tmp_path, name):
    """Issue 39: bot_detector_logs given as a string failed in a loop naming no variable."""
    assert 'bot_detector_logs' in role_lists()
    status, out = preflight(tmp_path, '%s=/var/log/nginx/access.log' % name, 'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert 'Check the variables' in task, task
    assert ('"msg": "%s: a list is needed, not the string \'/var/log/nginx/access.log\'; write it as a YAML list, '
            '[/var/log/nginx/access.log]"' % name) in fatal, fatal


@pytest.mark.parametrize('scheduler', ['systemd', 'follow'])
def test_a_scheduler_of_systemd_units_fails_first_where_systemd_does_not_run(tmp_path, scheduler):
    """Issue 39: the follow units need systemd as much as the timer does. This machine's init
    is not systemd (/run/systemd/system is missing)."""
    if os.path.exists('/run/systemd/system'):
        pytest.skip('systemd runs this machine')
    status, out = preflight(tmp_path, 'bot_detector_scheduler=%s' % scheduler, 'bot_detector_install_packages=false')
    assert status == 2, out[-3000:]
    task, fatal = failure(out)
    assert ('"msg": "bot_detector_scheduler: %s needs systemd running as init on testhost (/run/systemd/system is '
            'missing); use bot_detector_scheduler: cron"' % scheduler) in fatal, fatal
