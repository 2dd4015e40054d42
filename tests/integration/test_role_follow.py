"""bot_detector_scheduler: follow (issue 26): the role's follow unit rendered by real Ansible
with the role's defaults and vars, checked by `systemd-analyze verify`, its instance names
one per log, and its ExecStart run as it is (the command the role installs, rendered the
same way, %f the log) until a scraper is blocked; then SIGTERM ends it with exit status 0."""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import yaml

import loggen
from conftest import ROOT, in_timezone
from test_role_scheduler import directives, require, scratch  # noqa: F401  pylint: disable=unused-import

ROLE = ROOT / 'roles' / 'bot_detector'
UNIT = 'bot-detector-follow@.service'


def render(tmp_path, variables):
    out = tmp_path / 'units'
    out.mkdir()
    names = {UNIT: UNIT + '.j2', 'bot-detector.sh': 'bot-detector.sh.j2'}
    tasks = [{'name': 'Render %s' % name, 'ansible.builtin.template': {
        'src': str(ROLE / 'templates' / template), 'dest': str(out / name), 'mode': '0755' if name.endswith('.sh') else '0644'}}
        for name, template in names.items()]
    tasks.append({'name': 'Instances', 'ansible.builtin.copy': {
        'content': '{{ bot_detector_follow_units | to_nice_yaml }}', 'dest': str(out / 'instances.yml'), 'mode': '0644'}})
    play = [{'name': 'Render', 'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')], 'tasks': tasks}]
    (tmp_path / 'render.yml').write_text(yaml.safe_dump(play))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c',
                          'local', '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s' % (tmp_path / 'vars.yml'),
                          str(tmp_path / 'render.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-3000:]
    return dict((name, out / name) for name in list(names) + ['instances.yml'])


def unescape(instance):
    """systemd's %f of a path instance: '/' first, '-' for '/', \\xNN for the byte NN."""
    import re
    name = instance[len('bot-detector-follow@'):-len('.service')]
    return '/' + re.sub(r'\\x([0-9a-f]{2})', lambda m: chr(int(m.group(1), 16)), name.replace('-', '/'))


def test_the_follow_unit_verifies_and_names_an_instance_per_log(tmp_path, scratch):  # noqa: F811
    require('systemd-analyze')
    require('systemd-escape')
    base, logs, variables = scratch
    variables = dict(variables, bot_detector_scheduler='follow')
    units = render(tmp_path, variables)
    shutil.copy(str(units['bot-detector.sh']), variables['bot_detector_command'])
    instances = yaml.safe_load(units['instances.yml'].read_text())
    for log, instance in zip(logs, instances):
        escaped = subprocess.run(['systemd-escape', '--path', '--template', UNIT, str(log)], stdout=subprocess.PIPE,
                                 universal_newlines=True, check=True).stdout.strip()
        assert instance == escaped and unescape(instance) == str(log)
    got = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(units[UNIT])], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=60, check=False)
    assert got.returncode == 0 and 'bot-detector' not in got.stdout, got.stdout
    service = directives(units[UNIT])
    assert service['Type'] == ['simple'] and service['Restart'] == ['on-failure']
    assert service['StandardOutput'] == ['journal'] and service['ProtectSystem'] == ['strict']
    for key in ('PrivateTmp', 'NoNewPrivileges', 'PrivateDevices', 'RestrictSUIDSGID'):
        assert service[key] == ['yes'], key
    assert '-%s' % (base / 'state') in service['ReadWritePaths']


def test_the_follow_units_exec_line_follows_the_log_and_blocks(tmp_path, scratch):  # noqa: F811
    base, logs, variables = scratch
    variables = dict(variables, bot_detector_scheduler='follow')
    units = render(tmp_path, variables)
    shutil.copy(str(units['bot-detector.sh']), variables['bot_detector_command'])
    instance = yaml.safe_load(units['instances.yml'].read_text())[0]
    line = directives(units[UNIT])['ExecStart'][0].replace('%f', unescape(instance))
    logs[0].write_bytes(b'')
    proc = subprocess.Popen(shlex.split(line), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TZ='UTC'))
    try:
        time.sleep(1)
        with open(str(logs[0]), 'ab') as handle:
            handle.write(in_timezone('UTC', lambda: loggen.planted_log(time.time(), current={'203.0.113.9': 1100})))
        blocklist = base / 'etc' / 'ipblocklist.txt'
        deadline = time.time() + 15
        while time.time() < deadline and not (blocklist.exists() and b'203.0.113.9' in blocklist.read_bytes()):
            time.sleep(0.1)
        assert blocklist.read_bytes() == b'203.0.113.9\n'
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
