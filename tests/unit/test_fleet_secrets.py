"""A fleet store password never reaches a terminal, a log or a world-readable file (issue 43
§7), in any spelling of the URL: the role's own "Write the host's settings" task (read from
roles/bot_detector/tasks/configure.yml, its vars from the role's defaults and vars), run by real
Ansible into a scratch directory, writes the config file 0600 and shows no diff under --check
--diff for every URL that may hold a password, raw '/' included; a URL without one keeps 0644
and its diff."""
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

ROLE = ROOT / 'roles' / 'bot_detector'
PASSWORD = 'Qx7Lm/Zr9+Kw2='         # base64, as generators write it
# One of each spelling (each case runs ansible-playbook twice): a raw '/', a bare user part, raw
# '?', '#' and '@', percent-encoded, a query.
SECRET_URLS = ['redis://bd:%s@10.0.0.9:6379/0' % PASSWORD, 'redis://%s@10.0.0.9/0' % PASSWORD,
               'rediss://bd:Ty4Hn?Bv8#Pd3@store:6380/0', 'redis://bd:p%2F1x%3Fq9Kd@10.0.0.9/0',
               'redis://10.0.0.9/0?password=Ty4HnBv8']
PLAIN_URLS = ['redis://10.0.0.9:6379/0']


def settings_task():
    tasks = yaml.safe_load((ROLE / 'tasks' / 'configure.yml').read_text())
    return [task for task in tasks if task.get('name') == "Write the host's settings"][0]


def apply(tmp_path, url, *flags):
    task = dict(settings_task())
    task.pop('notify', None)
    module = dict(task['ansible.builtin.template'], src=str(ROLE / 'templates' / 'bot-detector.conf.j2'))
    module.pop('owner'), module.pop('group')
    task['ansible.builtin.template'] = module
    play = [{'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')],
             'tasks': [task]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    given = {'bot_detector_config_file': str(tmp_path / 'bot-detector.conf'), 'bot_detector_fact_server_ips': ['10.0.0.5'],
             'bot_detector_fleet_store': url, 'bot_detector_logs': ['/var/log/nginx/access.log'], 'role_path': str(ROLE)}
    (tmp_path / 'given.json').write_text(json.dumps(given))     # extra vars: over the role's defaults and vars
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable,
                          '-e', '@%s' % (tmp_path / 'given.json')] + list(flags) + [str(tmp_path / 'play.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-3000:]
    return got.stdout


def pieces(url):
    secret = url.partition('://')[2].rpartition('@')[0].partition(':')[2] or url.partition('password=')[2] \
        or url.partition('://')[2].rpartition('@')[0]
    return [piece for piece in secret.replace('/', ' ').replace('?', ' ').replace('#', ' ').split() if len(piece) >= 3]


@pytest.mark.parametrize('url', SECRET_URLS)
def test_a_url_that_may_hold_a_password_is_root_only_and_never_diffed(tmp_path, url):
    assert pieces(url)
    out = apply(tmp_path, url, '--check', '--diff')
    assert not [piece for piece in pieces(url) if piece in out], out
    assert not (tmp_path / 'bot-detector.conf').exists()
    out = apply(tmp_path, url, '--diff', '-v')
    assert not [piece for piece in pieces(url) if piece in out], out
    mode = stat.S_IMODE(os.stat(str(tmp_path / 'bot-detector.conf')).st_mode)
    assert mode == 0o600, oct(mode)
    assert 'fleet_store = ' in (tmp_path / 'bot-detector.conf').read_text()


@pytest.mark.parametrize('url', PLAIN_URLS)
def test_a_url_without_a_password_keeps_its_diff(tmp_path, url):
    out = apply(tmp_path, url, '--check', '--diff')
    assert '+fleet_store = %s' % url in out, out
    apply(tmp_path, url)
    assert stat.S_IMODE(os.stat(str(tmp_path / 'bot-detector.conf')).st_mode) == 0o644
