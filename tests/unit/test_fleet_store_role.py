"""The fleet_store role's ACL user (issue 37) against the core's protocol: its commands are
those of decision/fleet_store.py (ACL_RULES), which cover what its Lua script calls (Redis checks a
script's calls against the caller's ACL too), its key pattern covers the keys it writes; then
the role's own ACL file, rendered by real Ansible from the role's template, loaded by a real
redis-server, and the core's Store pushing through it as that user: applied, the crossing
returned; anything else refused."""
import os
import re
import subprocess
import sys

import yaml

import fleetstore
from conftest import ROOT
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

ROLE = ROOT / 'roles' / 'fleet_store'
PASSWORD = 'Acl-Us3r-Passw0rd-of-the-fleet'


def role_vars():
    return yaml.safe_load((ROLE / 'vars' / 'main.yml').read_text())


def test_the_users_commands_are_the_protocols():
    granted = set(role_vars()['fleet_store_acl_commands'])
    rules = set(rule[1:] for rule in fleet_store.ACL_RULES if rule.startswith('+'))
    called = set(name.lower() for name in re.findall(r"redis\.call\('([A-Za-z]+)'", fleet_store.PUSH_SCRIPT))
    assert called and called <= rules
    assert granted == rules, (granted ^ rules)
    keys = fleet_store.window_keys('bot-detector', '28/Nov/2026:10', 'web1')
    assert all(key.startswith('{bot-detector:') for key in keys)


def render_acl(tmp_path):
    out = tmp_path / 'fleet-store.acl'
    play = [{'name': 'Render', 'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')],
             'tasks': [{'name': 'Render', 'ansible.builtin.template': {
                 'src': str(ROLE / 'templates' / 'fleet-store.acl.j2'), 'dest': str(out), 'mode': '0600'}}]}]
    (tmp_path / 'render.yml').write_text(yaml.safe_dump(play))
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', 'fleet_store_server=redis',
                          '-e', 'fleet_store_password=%s' % PASSWORD, str(tmp_path / 'render.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-3000:]
    assert PASSWORD not in got.stdout
    return out


def test_the_core_pushes_as_the_roles_acl_user_and_may_do_nothing_else(tmp_path):
    acl = render_acl(tmp_path)
    assert PASSWORD not in acl.read_text()
    server = fleetstore.StoreServer(tmp_path, extra=['--aclfile', str(acl)]).start()
    try:
        (tmp_path / 'password').write_text(PASSWORD + '\n')
        settings = Settings(fleet_store='redis://bot-detector@127.0.0.1:%d/0' % server.port,
                            fleet_store_password_file=str(tmp_path / 'password'), fleet_host='web1')
        store = fleet_store.Store(settings)
        stamp = '28/Nov/2026:10'
        applied, crossings = store.push(stamp, 9000, [(b'203.0.113.5', 600)], False, 1000)
        if not applied:
            applied, crossings = store.push(stamp, 9000, [(b'203.0.113.5', 600)], True, 1000)
        assert applied and crossings == []
        other = fleet_store.Store(Settings(fleet_store=settings.fleet_store, fleet_store_password_file=settings.fleet_store_password_file,
                                           fleet_host='web2'))
        applied, crossings = other.push(stamp, 9000, [(b'203.0.113.5', 400)], True, 1000)
        assert applied and crossings == [(b'203.0.113.5', 1000)]
        client = store.connect()
        redis = fleet_store.import_redis()
        for command in (('FLUSHALL',), ('CONFIG', 'GET', 'dir'), ('KEYS', '*'), ('SET', 'other:key', '1'), ('ACL', 'LIST')):
            try:
                client.execute_command(*command)
            except redis.exceptions.ResponseError as exc:
                assert 'NOPERM' in str(exc) or 'no permissions' in str(exc), (command, exc)
            else:
                raise AssertionError('%s was allowed' % (command,))
        store.close()
        other.close()
        refused = subprocess.run(['redis-cli', '-p', str(server.port), 'PING'], stdout=subprocess.PIPE, universal_newlines=True, check=False)
        assert 'NOAUTH' in refused.stdout          # the default user is off
    finally:
        server.kill()
