"""The fleet_store role's ACL user (issue 37) against the core's protocol: its commands are
those of decision/fleet_store.py (ACL_RULES), which cover what its Lua script calls (Redis checks a
script's calls against the caller's ACL too), its key pattern covers the keys it writes; then
the role's own ACL file, rendered by real Ansible from the role's template, loaded by a real
redis-server, and the core's Store pushing through it as that user: applied, the crossing
returned; anything else refused."""
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

import fleetstore
from conftest import ROOT
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

ROLE = ROOT / 'roles' / 'fleet_store'
PASSWORD = 'Acl-Us3r-Passw0rd-of-the-fleet'
OTHER_PASSWORD = 'An0ther-Fleets-Passw0rd-here'


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


def playbook(tmp_path, tasks, given=None, ok=True):
    """Real Ansible on localhost with the role's defaults and vars, ``given`` as extra vars."""
    play = [{'name': 'Render', 'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')], 'tasks': tasks}]
    (tmp_path / 'render.yml').write_text(yaml.safe_dump(play))
    given = dict({'fleet_store_server': 'redis', 'fleet_store_password': PASSWORD, 'fleet_store_bind': ['127.0.0.1']}, **(given or {}))
    (tmp_path / 'given.json').write_text(json.dumps(given))
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s' % (tmp_path / 'given.json'),
                          str(tmp_path / 'render.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert (got.returncode == 0) == ok, got.stdout[-3000:]
    assert PASSWORD not in got.stdout and OTHER_PASSWORD not in got.stdout
    return got.stdout


def render(tmp_path, name, given=None):
    out = tmp_path / name
    playbook(tmp_path, [{'name': 'Render', 'ansible.builtin.template': {
        'src': str(ROLE / 'templates' / (name + '.j2')), 'dest': str(out), 'mode': '0600'}}], given)
    return out


def render_acl(tmp_path, given=None):
    return render(tmp_path, 'fleet-store.acl', given)


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


def test_each_fleet_has_its_own_acl_user_that_reaches_no_other_fleets_keys(tmp_path):
    """Two fleets whose names share a prefix ('jobs' and 'jobs-eu'): each user pushes its own
    fleet's windows and is refused the other's keys, through the script and directly."""
    given = {'fleet_store_fleet_names': ['jobs'],
             'fleet_store_fleets': [{'name': 'jobs-eu', 'user': 'bd-eu', 'password': OTHER_PASSWORD}]}
    acl = render_acl(tmp_path, given)
    assert PASSWORD not in acl.read_text() and OTHER_PASSWORD not in acl.read_text()
    server = fleetstore.StoreServer(tmp_path, extra=['--aclfile', str(acl)]).start()
    redis = fleet_store.import_redis()
    try:
        url = 'redis://%s:%s@127.0.0.1:%d/0?cluster=no'
        stamp = '28/Nov/2026:10'
        for user, password, name, other in (('bot-detector', PASSWORD, 'jobs', 'jobs-eu'), ('bd-eu', OTHER_PASSWORD, 'jobs-eu', 'jobs')):
            store = fleet_store.Store(Settings(fleet_store=url % (user, password, server.port), fleet_name=name, fleet_host='web1'))
            applied, dummy = store.push(stamp, 9000, [(b'203.0.113.5', 600)], True, 1000)
            assert applied
            stranger = fleet_store.Store(Settings(fleet_store=url % (user, password, server.port), fleet_name=other, fleet_host='web1'))
            with pytest.raises(fleet_store.StoreDown):
                stranger.push(stamp, 9000, [(b'203.0.113.5', 600)], True, 1000)
            client = store.connect()
            for command in (('RPUSH', '{%s:%s}:crossed' % (other, stamp), '203.0.113.9 5000'), ('GET', '{%s:x' % other),
                            ('SET', '{%s-x:1}' % name, '1')):
                with pytest.raises(redis.exceptions.ResponseError):
                    client.execute_command(*command)
            store.close()
            stranger.close()
    finally:
        server.kill()


@pytest.mark.parametrize('given', [
    {'fleet_store_fleet_names': ['jobs', 'jobs-eu']},                                   # two fleets, one user
    {'fleet_store_fleet_names': ['eu*']}, {'fleet_store_fleet_names': ['eu:de']}, {'fleet_store_fleet_names': ['e}u']},
    {'fleet_store_fleet_names': ['e u']}, {'fleet_store_fleet_names': ['e[u]']}, {'fleet_store_fleet_names': ['e\\u']},
    {'fleet_store_fleet_names': ['e?u']}, {'fleet_store_fleet_names': ['{eu']},
    {'fleet_store_fleets': [{'name': 'bot-detector', 'user': 'bd-2', 'password': OTHER_PASSWORD}]},      # a name twice
    {'fleet_store_fleets': [{'name': 'jobs-eu', 'user': 'bot-detector', 'password': OTHER_PASSWORD}]},   # a user twice
    {'fleet_store_fleets': [{'name': 'jobs-eu', 'user': 'bd-eu', 'password': 'short'}]},
    {'fleet_store_fleets': [{'name': 'jobs:eu', 'user': 'bd-eu', 'password': OTHER_PASSWORD}]},
])
def test_the_preflight_refuses_shared_users_and_names_that_are_patterns(tmp_path, given):
    out = playbook(tmp_path, [{'ansible.builtin.import_tasks': str(ROLE / 'tasks' / 'preflight.yml')}], given, ok=False)
    assert 'one ACL user per fleet' in out, out[-2000:]


def test_the_preflight_takes_one_user_per_fleet(tmp_path):
    playbook(tmp_path, [{'ansible.builtin.import_tasks': str(ROLE / 'tasks' / 'preflight.yml')}],
             {'fleet_store_fleets': [{'name': 'jobs-eu', 'user': 'bd-eu', 'password': OTHER_PASSWORD}]})


def test_the_store_never_evicts_the_fleets_keys(tmp_path):
    """Every key of the fleet expires, so any eviction policy but noeviction may drop a host's
    counts: a real server started on the role's rendered configuration (its ACL file beside it)
    says noeviction, to the fleet's user too (INFO memory, which it may read)."""
    port = fleetstore.free_port()
    given = {'fleet_store_bind': ['127.0.0.1'], 'fleet_store_port': port}
    acl = render_acl(tmp_path, given)
    conf = render(tmp_path, 'fleet-store.conf', given)
    text = conf.read_text().replace('aclfile /etc/redis/fleet-store.acl', 'aclfile %s' % acl)
    conf.write_text(text + 'dir %s\nappendonly no\n' % tmp_path)
    proc = subprocess.Popen([fleetstore.server_binary(), str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        redis = fleet_store.import_redis()
        client = redis.Redis(host='127.0.0.1', port=port, username='bot-detector', password=PASSWORD)
        deadline = time.time() + 5
        while True:
            try:
                memory = client.info('memory')
                break
            except redis.exceptions.ConnectionError:
                assert time.time() < deadline and proc.poll() is None, 'the server did not start on the role\'s configuration'
                time.sleep(0.05)
        assert memory['maxmemory_policy'] == 'noeviction'
        client.close()
    finally:
        proc.kill()
        proc.wait(5)
