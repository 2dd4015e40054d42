"""The systemd scheduler's units (issue 21): the role's service and timer templates rendered
by real Ansible into a scratch directory, checked by `systemd-analyze verify`, and the
service's ExecStart lines run as they are (the command the role installs, rendered the same
way, on scratch lists). molecule covers the units on a host (molecule/default)."""
import os
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

import loggen
from conftest import ROOT, in_timezone

ROLE = ROOT / 'roles' / 'bot_detector'


def require(tool):
    if shutil.which(tool) is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('%s is missing' % tool)
        pytest.skip('needs %s' % tool)


def render(tmp_path, variables):
    """The role's service, timer and command templates rendered with the role's defaults and
    vars under ``variables``; returns {name: path}."""
    out = tmp_path / 'units'
    out.mkdir()
    names = {'bot-detector.service': 'bot-detector.service.j2', 'bot-detector.timer': 'bot-detector.timer.j2',
             'bot-detector.sh': 'bot-detector.sh.j2'}
    play = [{'name': 'Render', 'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')],
             'tasks': [{'name': 'Render %s' % name, 'ansible.builtin.template': {
                 'src': str(ROLE / 'templates' / template), 'dest': str(out / name),
                 'mode': '0755' if name.endswith('.sh') else '0644'}}
                 for name, template in names.items()]}]
    (tmp_path / 'render.yml').write_text(yaml.safe_dump(play))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))      # extra vars: over the role's
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c',
                          'local', '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s' % (tmp_path / 'vars.yml'),
                          str(tmp_path / 'render.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-3000:]
    return dict((name, out / name) for name in names)


def directives(path):
    found = {}
    for line in path.read_text().splitlines():
        if '=' in line and not line.startswith('#'):
            key, value = line.split('=', 1)
            found.setdefault(key, []).append(value)
    return found


@pytest.fixture
def scratch(tmp_path):
    """A host's files under tmp_path: two logs (one with a scraper), the lists, the state, the
    config file, the core where the command looks for it."""
    import time
    now = time.time()
    base = tmp_path / 'host'
    for name in ('etc', 'log', 'state', 'lib', 'metrics'):
        (base / name).mkdir(parents=True)
    logs = [base / 'log' / 'a.log', base / 'log' / 'b.log']
    logs[0].write_bytes(in_timezone('UTC', lambda: loggen.planted_log(now, current={'203.0.113.7': 1200})))
    logs[1].write_bytes(in_timezone('UTC', lambda: loggen.planted_log(now, current={'203.0.113.8': 1300})))
    shutil.copytree(str(ROOT / 'plugins' / 'module_utils' / 'bot_detector'), str(base / 'lib' / 'bot_detector'))
    config = base / 'etc' / 'bot-detector.conf'
    config.write_text('[bot_detector]\nblocklist = %s\nexclusions_file = %s\nactivity_log = %s\nserver_ips = 10.0.0.5\n'
                      'state_dir = %s\n' % (base / 'etc' / 'ipblocklist.txt', base / 'etc' / 'ipexcludedlist.txt',
                                            base / 'log' / 'bot-detector.log', base / 'state'))
    variables = {'bot_detector_logs': [str(log) for log in logs], 'bot_detector_command': str(base / 'bot-detector.sh'),
                 'bot_detector_lib_dir': str(base / 'lib'), 'bot_detector_config_file': str(config),
                 'bot_detector_blocklist': str(base / 'etc' / 'ipblocklist.txt'),
                 'bot_detector_activity_log': str(base / 'log' / 'bot-detector.log'),
                 'bot_detector_state_dir': str(base / 'state'),
                 'bot_detector_metrics_file': str(base / 'metrics' / 'bot_detector.prom'),
                 'bot_detector_scheduler': 'systemd'}
    return base, logs, variables


def test_the_units_verify_and_the_timer_runs_every_10_minutes_spread_and_persistent(tmp_path, scratch):
    require('systemd-analyze')
    base, logs, variables = scratch
    units = render(tmp_path, variables)
    shutil.copy(str(units['bot-detector.sh']), variables['bot_detector_command'])
    got = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(units['bot-detector.service']),
                          str(units['bot-detector.timer'])], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=60, check=False)
    assert got.returncode == 0 and 'bot-detector' not in got.stdout, got.stdout
    timer = directives(units['bot-detector.timer'])
    assert timer['OnCalendar'] == ['*:0/10'] and timer['RandomizedDelaySec'] == ['120']
    assert timer['Persistent'] == ['true'] and timer['Unit'] == ['bot-detector.service']
    assert timer['WantedBy'] == ['timers.target']
    service = directives(units['bot-detector.service'])
    assert service['Type'] == ['oneshot']
    assert service['StandardOutput'] == ['journal'] and service['StandardError'] == ['journal']
    assert service['ProtectSystem'] == ['strict']
    assert sorted(service['ReadWritePaths']) == sorted('-' + str(p) for p in (
        base / 'etc', base / 'log', base / 'state', base / 'metrics', '/run/bot-detector'))
    for key in ('PrivateTmp', 'NoNewPrivileges', 'PrivateDevices', 'RestrictSUIDSGID'):
        assert service[key] == ['yes'], key
    assert service['ExecStart'] == ['%s %s' % (variables['bot_detector_command'], log) for log in logs]


def test_the_services_exec_lines_run_the_detector_on_each_log(tmp_path, scratch):
    base, logs, variables = scratch
    units = render(tmp_path, variables)
    shutil.copy(str(units['bot-detector.sh']), variables['bot_detector_command'])
    for line in directives(units['bot-detector.service'])['ExecStart']:
        got = subprocess.run(shlex.split(line), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TZ='UTC'),
                             timeout=120, check=False)
        assert got.returncode == 0, got.stderr
    assert (base / 'etc' / 'ipblocklist.txt').read_text() == '203.0.113.7\n203.0.113.8\n'
    assert len(os.listdir(str(base / 'state'))) > 0
