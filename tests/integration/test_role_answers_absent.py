"""``bot_detector_state: absent`` and the answers softer than a block (issue 46): real Ansible
installs the answers' files with the role's tasks/answers.yml, then removes them with the
role's tasks/answers_absent.yml (what absent.yml imports), on this machine seen through a
private mount namespace whose /etc, /var/lib, /var/log, /usr/local and /run are overlays (as
test_role_check_mode.py does): the real directories are never written to.

Removed: the nginx configuration (conf.d and the server snippet), the njs script, the page,
the secret, the directory the lists are mirrored into. Kept, as the operators' data: the
throttle and challenge lists, the activity log, and whatever else is in the answers' nginx
directory (the enforcement's geo file). A server block that still includes the snippet stops
the removal before any change (nginx's next reload would fail without the snippet)."""
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, require_root
from test_role_check_mode import MOUNT_OVERLAYS

ROLE = ROOT / 'roles' / 'bot_detector'
INSTALLED = ['/etc/nginx/conf.d/bot-detector-answers.conf', '/etc/nginx/snippets/bot-detector-answers.conf',
             '/etc/nginx/bot-detector/answers.js', '/etc/nginx/bot-detector/challenge.html',
             '/etc/nginx/bot-detector/challenge.secret', '/etc/nginx/bot-detector/answers',
             '/etc/nginx/bot-detector/answers/challenge/4-cb007107']
KEPT = ['/etc/bd-test/throttle.txt', '/etc/bd-test/challenge.txt', '/var/log/bd-test.log',
        '/etc/nginx/bot-detector/blocked.conf']
SITE = '/etc/nginx/sites-enabled/bd-test-jobs'

# In a private mount namespace: overlays over the real directories, the answers' and the
# test's paths removed from the view (a fresh host), then the commands given, then what is
# there written to a file outside the overlays.
SETUP = r'''set -eu
scratch=$1; shift
%(mount_overlays)srm -rf /etc/nginx/conf.d/bot-detector-answers.conf /etc/nginx/snippets/bot-detector-answers.conf /etc/nginx/bot-detector \
    /etc/bd-test /var/log/bd-test.log %(site)s
mkdir -p /etc/bd-test /etc/nginx/bot-detector /etc/nginx/sites-enabled
printf '203.0.113.7\n' > /etc/bd-test/challenge.txt
printf '198.51.100.9\n' > /etc/bd-test/throttle.txt
printf 'Sat Dec  5 14:34:13 UTC 2026 | IP addess 203.0.113.7 added to the challenge list (by hand)\n' > /var/log/bd-test.log
printf '# the enforcement geo file\n' > /etc/nginx/bot-detector/blocked.conf
status=0
for play in "$@"; do
    if [ "$play" = site-includes ]; then
        printf 'server {\n    listen 8080;\n    include snippets/bot-detector-answers.conf;\n}\n' > %(site)s
        continue
    fi
    "$ANSIBLE_PLAYBOOK" -i localhost, -c local -e "ansible_python_interpreter=$PYTHON" -e "@$scratch/vars.yml" \
        "$play" > "$scratch/$(basename "$play").out" 2>&1 || { status=$?; break; }
done
for path in %(paths)s; do
    if [ -e "$path" ]; then echo "$path"; fi
done > "$scratch/present"
exit $status
'''


def run(tmp_path, plays):
    require_root('the role runs on this machine seen through a mount namespace')
    if shutil.which('unshare') is None:
        pytest.fail('unshare (util-linux) is missing')
    scratch = tmp_path / 'overlay'
    scratch.mkdir()
    variables = {'bot_detector_state': 'absent', 'bot_detector_throttle_list': '/etc/bd-test/throttle.txt',
                 'bot_detector_challenge_list': '/etc/bd-test/challenge.txt', 'bot_detector_activity_log': '/var/log/bd-test.log',
                 'bot_detector_challenge_secret': 'a-secret-of-the-test'}
    (scratch / 'vars.yml').write_text(yaml.safe_dump(variables))
    files = []
    for name, tasks in plays:
        if name == 'site-includes':
            files.append(name)
            continue
        play = [{'name': name, 'hosts': 'localhost', 'gather_facts': False, 'tasks': tasks}]
        path = tmp_path / ('%s.yml' % name)
        path.write_text(yaml.safe_dump(play))
        files.append(str(path))
    setup = SETUP % {'mount_overlays': MOUNT_OVERLAYS, 'site': SITE, 'paths': ' '.join(INSTALLED + KEPT + [SITE])}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', PYTHON=sys.executable,
               ANSIBLE_PLAYBOOK=os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'))
    got = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', setup, 'setup', str(scratch)] + files,
                         cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         timeout=600, check=False)
    outputs = dict((name, (scratch / (os.path.basename(path) + '.out')).read_text())
                   for (name, dummy), path in zip(plays, files) if (scratch / (os.path.basename(path) + '.out')).exists())
    return got.returncode, outputs, (scratch / 'present').read_text().split()


ROLE_NAME = 'jobboard.bot_detector.bot_detector'
INSTALL = ('install', [{'name': 'Install', 'ansible.builtin.include_role': {'name': ROLE_NAME, 'tasks_from': 'answers.yml'}},
                       {'name': 'The directory of a listed key, as the detector makes it', 'ansible.builtin.file': {
                           'path': '/etc/nginx/bot-detector/answers/challenge', 'state': 'directory', 'mode': '0755'}},
                       {'name': 'A listed key, as the detector mirrors it', 'ansible.builtin.copy': {
                           'content': '', 'mode': '0644',
                           'dest': '/etc/nginx/bot-detector/answers/challenge/4-cb007107'}}])
REMOVE = ('remove', [{'name': 'Remove', 'ansible.builtin.include_role': {'name': ROLE_NAME, 'tasks_from': 'answers_absent.yml'}}])


def test_absent_removes_the_answers_files_and_keeps_the_operators_lists(tmp_path):
    status, outputs, present = run(tmp_path, [INSTALL, REMOVE, ('again', REMOVE[1])])
    assert status == 0, outputs.get("remove", "")[-4000:] + outputs.get("install", "")[-3000:]
    assert present == KEPT, (present, outputs['remove'][-3000:])
    assert 'changed=0' in outputs['again'], outputs['again'][-2000:]     # idempotent
    for run_output in (outputs['remove'], outputs['again']):
        assert '[WARNING]' not in run_output, run_output[-3000:]


def test_absent_stops_before_any_change_while_a_server_block_includes_the_snippet(tmp_path):
    status, outputs, present = run(tmp_path, [INSTALL, ('site-includes', None), REMOVE])
    assert status != 0
    assert SITE in outputs['remove'] and 'include' in outputs['remove'], outputs['remove'][-3000:]
    assert present == INSTALLED + KEPT + [SITE]      # nothing removed
