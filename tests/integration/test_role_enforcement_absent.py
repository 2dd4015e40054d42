"""``bot_detector_state: absent`` and the enforcement, and a deploy that switches the
enforcement: real Ansible installs the enforcement's files with the role's
tasks/enforcement.yml, the real detector loads its nftables tables (the blocklist's drops, the
throttle), then the role's tasks/enforcement_absent.yml and nftables_absent.yml (what absent.yml
imports: the first before any other change, the second once the schedulers are stopped) remove
them; or enforcement.yml in another mode removes what the earlier mode left. On this machine seen
through a private mount namespace whose /etc, /var/lib, /var/log, /usr/local and /run are
overlays (as test_role_check_mode.py does), in a network namespace of its own: the real
directories and ruleset are never touched.

Removed: nginx's geo block, its server snippet and the geo file, the boot unit, and the
detector's tables, which would go on dropping the listed clients until the next boot. Kept: the
blocklist (the operators'), and a table of the operator's. A server block that still includes
the snippet stops the removal before any change, and a deploy in another mode than nginx
(preflight.yml) likewise."""
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, require_root
from test_role_check_mode import MOUNT_OVERLAYS

ROLE_NAME = 'jobboard.bot_detector.bot_detector'
CORE = ROOT / 'plugins' / 'module_utils' / 'bot_detector'
INSTALLED = ['/etc/nginx/conf.d/bot-detector.conf', '/etc/nginx/snippets/bot-detector-block.conf',
             '/etc/nginx/bot-detector/blocked.conf', '/etc/systemd/system/bot-detector-enforce.service',
             '/etc/systemd/system/multi-user.target.wants/bot-detector-enforce.service']
KEPT = ['/etc/bd-test/blocklist.txt']
SITE = '/etc/nginx/sites-enabled/bd-test-jobs'
OPERATORS_TABLE = 'table inet operators_own'
NGINX_FILES, BOOT_UNIT = INSTALLED[:3], INSTALLED[3:]
# Done by the set-up script, not by a play.
STEPS = ('site-includes', 'site-includes-inline', 'site-uses-variable', 'site-uses-answers', 'site-uses-njs', 'load-tables',
         'boot-unit')


# In private mount and network namespaces: overlays over the real directories, the role's paths
# removed from the view (a fresh host), the detector's tables loaded as a run loads them and a
# table of the operator's, then the plays; then what is there written outside the overlays.
SETUP = r'''set -eu
scratch=$1; shift
%(mount_overlays)srm -rf %(installed)s /etc/nginx/bot-detector /etc/bd-test %(site)s
mkdir -p /etc/bd-test /etc/nginx/sites-enabled
printf '203.0.113.7\n' > /etc/bd-test/blocklist.txt
core="$PYTHON %(core)s --blocklist /etc/bd-test/blocklist.txt --exclusions /etc/bd-test/allow.txt"
core="$core --activity-log /etc/bd-test/activity.log --enforcement nftables"
nft add table inet operators_own
status=0
for play in "$@"; do
    case "$play" in
        site-includes)
            printf 'server {\n    listen 8080;\n    include snippets/bot-detector-block.conf;\n}\n' > %(site)s
            continue ;;
        site-includes-inline)   # quoted, after other directives on its line
            printf 'server { listen 8080; location / { include "/etc/nginx/snippets/bot-detector-block.conf"; } }\n' > %(site)s
            continue ;;
        site-uses-variable)     # the operator's own answer to a blocked client (and an include commented out)
            printf 'server {\n    listen 8080;\n    # include snippets/bot-detector-block.conf;\n    if ($bot_detector_blocked) { return 429; }\n}\n' > %(site)s
            continue ;;
        site-uses-answers)      # the answers' throttle zone, in a location of the operator's
            printf 'server {\n    listen 8080;\n    location /jobs/ { limit_req zone=bot_detector_throttle burst=5; }\n}\n' > %(site)s
            continue ;;
        site-uses-njs)          # the answers' njs function, in a location of the operator's
            printf 'server {\n    listen 8080;\n    location = /pass { js_content bot_detector_answers.pass; }\n}\n' > %(site)s
            continue ;;
        load-tables)        # as a run with nftables enforcement loads them
            $core --enforce-now > /dev/null
            $core --throttle-list /etc/bd-test/throttle.txt --answer-dir /etc/bd-test/answers --throttle 198.51.100.9 > /dev/null
            continue ;;
        boot-unit)          # as an earlier deploy with nftables left it
            mkdir -p /etc/systemd/system/multi-user.target.wants
            touch %(boot_unit)s
            continue ;;
        *check*) check=--check ;;
        *) check= ;;
    esac
    "$ANSIBLE_PLAYBOOK" -i localhost, -c local -e "ansible_python_interpreter=$PYTHON" $check "$play" \
        > "$scratch/$(basename "$play").out" 2>&1 || { status=$?; break; }
done
for path in %(installed)s %(kept)s %(site)s; do
    if [ -e "$path" ]; then echo "$path"; fi
done > "$scratch/present"
nft list tables > "$scratch/tables"
exit $status
'''


def run(tmp_path, plays):
    require_root('the role runs on this machine seen through mount and network namespaces')
    for program in ('unshare', 'nft'):
        if shutil.which(program) is None:
            pytest.fail('%s is missing (make test installs it)' % program)
    scratch = tmp_path / 'overlay'
    scratch.mkdir()
    files = []
    for name, tasks in plays:
        if name in STEPS:
            files.append(name)
            continue
        state = 'present' if name.startswith('preflight') else 'absent'
        play = [{'name': name, 'hosts': 'localhost', 'gather_facts': False, 'tasks': tasks,
                 'vars': {'bot_detector_state': state, 'bot_detector_blocklist': '/etc/bd-test/blocklist.txt'}}]
        path = tmp_path / ('%s.yml' % name)
        path.write_text(yaml.safe_dump(play))
        files.append(str(path))
    setup = SETUP % {'mount_overlays': MOUNT_OVERLAYS, 'installed': ' '.join(INSTALLED), 'kept': ' '.join(KEPT), 'site': SITE,
                     'core': CORE, 'boot_unit': ' '.join(BOOT_UNIT)}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', PYTHON=sys.executable,
               ANSIBLE_PLAYBOOK=os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'))
    got = subprocess.run(['unshare', '--mount', '--net', '--propagation', 'private', 'sh', '-c', setup, 'setup', str(scratch)] + files,
                         cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         timeout=600, check=False)
    outputs = dict((name, (scratch / (os.path.basename(path) + '.out')).read_text())
                   for (name, dummy), path in zip(plays, files) if (scratch / (os.path.basename(path) + '.out')).exists())
    tables = (scratch / 'tables').read_text().splitlines() if (scratch / 'tables').exists() else []
    return got.returncode, outputs, (scratch / 'present').read_text().split(), sorted(tables), got.stdout


def all_loaded(tables):
    """The blocklist's table (bot_detector_<its key>: not the default blocklist), the throttle's
    and the operator's."""
    return (len(tables) == 3 and OPERATORS_TABLE in tables and 'table inet bot_detector_answers' in tables
            and any(table.startswith('table inet bot_detector_') and table != 'table inet bot_detector_answers' for table in tables))


def install(enforcement, name=None):
    return (name or 'install-' + enforcement, [{'name': 'Install', 'ansible.builtin.include_role': {
        'name': ROLE_NAME, 'tasks_from': 'enforcement.yml'}, 'vars': {'bot_detector_enforcement': enforcement}}])


REMOVE = [{'name': 'Remove the files', 'ansible.builtin.include_role': {'name': ROLE_NAME, 'tasks_from': 'enforcement_absent.yml'}},
          {'name': 'Delete the tables', 'ansible.builtin.include_role': {'name': ROLE_NAME, 'tasks_from': 'nftables_absent.yml'}}]


def test_absent_removes_the_enforcement_and_its_tables_keeping_the_blocklist(tmp_path):
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), ('boot-unit', None), ('load-tables', None),
                                                           ('remove', REMOVE), ('again', REMOVE)])
    assert status == 0, out[-3000:] + ''.join(text[-3000:] for text in outputs.values())
    assert present == KEPT, (present, outputs['remove'][-3000:])
    assert tables == [OPERATORS_TABLE], (tables, outputs['remove'][-3000:])
    assert 'changed=0' in outputs['again'], outputs['again'][-2000:]     # idempotent
    for run_output in outputs.values():
        assert '[WARNING]' not in run_output, run_output[-3000:]


def test_a_dry_run_removes_nothing_and_a_server_block_including_the_snippet_stops_the_removal(tmp_path):
    """A dry run plans the removal and removes nothing; with a server block that includes the
    snippet, the removal stops before any change, naming the file."""
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), ('boot-unit', None), ('load-tables', None),
                                                           ('check', REMOVE), ('site-includes', None), ('remove', REMOVE)])
    assert status != 0
    assert 'changed=0' not in outputs['check'] and 'failed=0' in outputs['check'], outputs['check'][-3000:]
    assert SITE in outputs['remove'] and 'Nothing' in outputs['remove'], outputs['remove'][-3000:]
    assert present == INSTALLED + KEPT + [SITE]      # nothing removed, by either
    assert all_loaded(tables), tables


@pytest.mark.parametrize('site', ['site-uses-variable', 'site-uses-answers', 'site-uses-njs'])
def test_a_server_block_using_the_variables_the_detectors_nginx_files_set_stops_the_removal(tmp_path, site):
    """Without the include: the enforcement's variable used in the operator's own ``if``, the
    answers' throttle zone or their njs function; nginx's next reload would fail on each once the
    http part that defines it is gone."""
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), (site, None), ('remove', REMOVE)])
    assert status != 0
    assert SITE in outputs['remove'] and 'Nothing was removed' in outputs['remove'], outputs['remove'][-3000:]
    assert present == NGINX_FILES + KEPT + [SITE]


def preflight(enforcement):
    return ('preflight-check', [{'name': 'Preflight', 'ansible.builtin.include_role': {
        'name': ROLE_NAME, 'tasks_from': 'preflight.yml'}, 'vars': {'bot_detector_enforcement': enforcement}}])


def test_a_deploy_without_nginx_stops_on_the_enforcements_variable_not_on_the_answers(tmp_path):
    """A switch away from nginx's enforcement removes its geo block, not the answers' part: the
    operator's use of $bot_detector_blocked stops it, the throttle zone does not."""
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), ('site-uses-variable', None), preflight('none')])
    assert status != 0
    assert SITE in outputs['preflight-check'] and 'Nothing was removed' in outputs['preflight-check'], \
        outputs['preflight-check'][-3000:]
    (tmp_path / 'answers').mkdir()
    status, outputs, present, tables, out = run(tmp_path / 'answers', [install('nginx'), ('site-uses-answers', None), preflight('none')])
    assert 'Look for nginx configuration that still includes' in outputs['preflight-check'], outputs['preflight-check'][-3000:]
    assert 'Nothing was removed' not in outputs['preflight-check'], outputs['preflight-check'][-3000:]


def test_a_deploy_with_nftables_after_nginx_removes_nginxs_files(tmp_path):
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), ('load-tables', None), install('nftables'),
                                                           install('nftables', 'again')])
    assert status == 0, out[-3000:] + ''.join(text[-3000:] for text in outputs.values())
    assert present == BOOT_UNIT + KEPT, (present, outputs['install-nftables'][-3000:])
    assert all_loaded(tables), tables      # its own mode's: kept
    assert 'changed=0' in outputs['again'], outputs['again'][-2000:]


def test_a_deploy_without_nftables_after_it_deletes_the_detectors_tables(tmp_path):
    """The tables a deploy with nftables left would go on dropping the clients listed then, an
    unblock since included, until the next boot; an operator's table stays."""
    status, outputs, present, tables, out = run(tmp_path, [install('nftables'), ('load-tables', None), install('none'),
                                                           install('none', 'again')])
    assert status == 0, out[-3000:] + ''.join(text[-3000:] for text in outputs.values())
    assert present == KEPT and tables == [OPERATORS_TABLE], (present, tables, outputs['install-none'][-3000:])
    assert 'changed=0' in outputs['again'], outputs['again'][-2000:]


def test_a_deploy_without_nginx_stops_before_any_change_while_a_server_block_includes_its_snippet(tmp_path):
    """The preflight (in a dry run here: it would install cron on a host without it) names the
    file, and nginx's files stay until the include is gone; the include is found quoted, after
    other directives on its line."""
    status, outputs, present, tables, out = run(tmp_path, [install('nginx'), ('site-includes-inline', None), preflight('none')])
    assert status != 0
    assert SITE in outputs['preflight-check'] and 'Nothing was removed' in outputs['preflight-check'], \
        outputs['preflight-check'][-3000:]
    assert present == NGINX_FILES + KEPT + [SITE]
