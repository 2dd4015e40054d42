"""An unsupported ansible-core stops the role and the playbooks at once (issue 39, section 6),
with the one sentence that says how to get a supported one, which the README quotes.

Run by a real older ansible-core: 2.14, what Debian 12's apt gives, from the package index into
.cache/ansible-core-2.14 (a venv made once, about a minute; kept, as .cache is). With it, the
collection's own check (meta/runtime.yml) only warns and goes on."""
import fcntl
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

OLD = ROOT / '.cache' / 'ansible-core-2.14'
PLAYBOOKS = ['site.yml', 'playbooks/site.yml', 'playbooks/fleet.yml', 'playbooks/unblock.yml', 'playbooks/fleet_store.yml']


def sentence():
    path = ROOT / 'roles' / 'bot_detector_preflight' / 'vars' / 'main.yml'
    return ' '.join(yaml.safe_load(path.read_text())['bot_detector_preflight_ansible_core'].split())


@pytest.fixture(scope='module')
def old_core():
    """ansible-playbook of ansible-core 2.14, in its own venv."""
    playbook = OLD / 'bin' / 'ansible-playbook'
    OLD.parent.mkdir(exist_ok=True)
    with open(str(OLD) + '.lock', 'w') as lock:        # pytest -n: one worker makes it, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not playbook.exists():
            subprocess.run([sys.executable, '-m', 'venv', '--clear', str(OLD)], check=True)
            subprocess.run([str(OLD / 'bin' / 'pip'), 'install', '--quiet', 'ansible-core>=2.14,<2.15'], check=True,
                           timeout=600)
    version = subprocess.run([str(OLD / 'bin' / 'ansible'), '--version'], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    assert version.startswith('ansible [core 2.14.'), version
    return playbook


def test_the_sentence_names_the_releases_runtime_yml_and_the_readme_support():
    minimum = yaml.safe_load((ROOT / 'meta' / 'runtime.yml').read_text())['requires_ansible']
    assert minimum == '>=2.19.0'
    text = sentence()
    assert "pip install 'ansible-core>=2.19,<2.22'" in text and 'ansible-core 2.19, 2.20 or 2.21' in text
    readme = ' '.join((ROOT / 'README.md').read_text().replace('`', '').split())
    assert text in readme, 'README.md must quote the sentence of roles/bot_detector_preflight/vars/main.yml'
    assert '| ansible-core (control node) | 2.19, 2.20, 2.21 |' in readme


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_an_unsupported_ansible_core_stops_every_playbook_first_saying_how_to_get_one(tmp_path, old_core, playbook):
    inventory = tmp_path / 'inventory.yml'
    host = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
    inventory.write_text(yaml.safe_dump({'all': {'children': {'web': {'hosts': {'web1': host}},
                                                              'fleet_store': {'hosts': {'store1': host}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_STDOUT_CALLBACK='default')
    got = subprocess.run([str(old_core), '-i', str(inventory), '--check', str(ROOT / playbook),
                          '-e', '{"bot_detector_unblock": ["203.0.113.7"]}'],
                         cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 2, got.stdout[-3000:]
    # The first task run (the preflight role's own argument validation, of no options, aside).
    tasks = [task for task in re.findall(r'(?m)^TASK \[(.*?)\]', got.stdout) if 'Validating arguments against' not in task]
    assert tasks and tasks[0].endswith('Require a supported ansible-core') and len(tasks) == 1, tasks
    message = re.search(r'"msg": "(.*)"', got.stdout).group(1)
    assert message == 'ansible-core 2.14.%s is not supported. %s' % (
        re.search(r'ansible-core 2\.14\.(\d+)', message).group(1), sentence()), message
