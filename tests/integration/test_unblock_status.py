"""The module's unblock and status modes, ban expiry and warnings, through real ad-hoc
`ansible`; playbooks/unblock.yml on local-connection web hosts."""
import os
import stat
import subprocess
import sys
import time

import pytest
import yaml

import loggen
from conftest import ROOT
from test_module import NOW, NOW_EPOCH, ansible


def gnu_date(epoch):
    return subprocess.run(['date', '-d', '@%d' % epoch], stdout=subprocess.PIPE, check=True,
                          env=dict(os.environ, TZ='UTC', LC_ALL='C')).stdout.strip().decode()


@pytest.fixture
def lists(tmp_path):
    blocklist, activity = tmp_path / 'blocklist', tmp_path / 'activity.log'
    blocklist.write_bytes(b'192.0.2.1\n203.0.113.7\r\n198.51.100.4\n203.0.113.70')
    os.chmod(str(blocklist), 0o600)
    return tmp_path, {'blocklist': str(blocklist), 'activity_log': str(activity)}


def test_unblock_check_diff_then_exact_changed(lists):
    tmp_path, args = lists
    blocklist = tmp_path / 'blocklist'
    decision = {'address': '198.51.100.4', 'count': 3000, 'reason': 'fleet'}     # as the fleet playbook has it
    unblock = dict(args, mode='unblock', addresses=['203.0.113.7', decision, '192.0.2.99'])
    rc, res = ansible(unblock, flags=['--check', '--diff'])
    assert rc == 0 and res['changed'] is True
    assert res['unblocked'] == [{'address': '203.0.113.7', 'lines': 1}, {'address': '198.51.100.4', 'lines': 1}]
    assert res['not_listed'] == ['192.0.2.99']
    assert res['diff']['prepared'].split('\n') == [
        '--- %s' % blocklist, '+++ %s' % blocklist, '@@ -2,2 +1,0 @@', '-203.0.113.7\r', '-198.51.100.4', '']
    assert blocklist.read_bytes() == b'192.0.2.1\n203.0.113.7\r\n198.51.100.4\n203.0.113.70'
    assert not (tmp_path / 'activity.log').exists()
    rc, res = ansible(unblock)
    assert rc == 0 and res['changed'] is True
    assert res['messages'] == ['Unblocking IP address: 203.0.113.7', 'Unblocking IP address: 198.51.100.4',
                               'IP address 192.0.2.99 is not in the block list.']
    assert blocklist.read_bytes() == b'192.0.2.1\n203.0.113.70'
    assert stat.S_IMODE(blocklist.stat().st_mode) == 0o600
    assert [l.split(' | ')[1] for l in (tmp_path / 'activity.log').read_text().splitlines()] == [
        'IP addess 203.0.113.7 removed from the block list (unblock)',
        'IP addess 198.51.100.4 removed from the block list (unblock)']
    rc, res = ansible(unblock, flags=['--diff'])
    assert rc == 0 and res['changed'] is False and 'diff' not in res
    assert res['not_listed'] == ['203.0.113.7', '198.51.100.4', '192.0.2.99']


@pytest.mark.parametrize('addresses,fragment', [
    ([], 'addresses: mode unblock needs at least one address'),
    ([5], 'addresses: item 1 must be an address or a mapping with an address, got 5'),
    ([{'count': 3}], 'addresses: item 1: missing required arguments: address'),
    (['192.0.2.1', {'address': '192.0.2.2', 'colour': 'red'}], 'addresses: item 2: unknown key colour (known: address, answer, count, reason, source, window)'),
    (['192.0.2.1\n192.0.2.2'], 'unblock: each address must be one non-empty line of text'),
])
def test_bad_addresses_fail_and_change_nothing(lists, addresses, fragment):
    tmp_path, args = lists
    rc, res = ansible(dict(args, mode='unblock', addresses=addresses))
    assert rc != 0 and res['failed'] is True and fragment in res['msg'], res['msg']
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.7\r\n198.51.100.4\n203.0.113.70'


def test_apply_takes_addresses_as_text_too(lists):
    tmp_path, args = lists
    rc, res = ansible(dict(args, mode='apply', exclusions=str(tmp_path / 'none'), addresses=['192.0.2.55']))
    assert rc == 0 and res['changed'] is True
    assert (tmp_path / 'activity.log').read_text().endswith('IP addess 192.0.2.55 added to the block list, RPH=0 (fleet)\n')


def test_expiry_status_and_warnings_through_the_module(case_log, lists):
    tmp_path, args = lists
    wall = int(time.time())
    (tmp_path / 'activity.log').write_text(
        '%s | IP addess 203.0.113.7 added to the block list, RPH=1450\n' % gnu_date(wall - 3 * 3600)
        + '%s | IP addess 198.51.100.4 added to the block list, RPH=1200 (fleet)\n' % gnu_date(wall - 600))
    rc, res = ansible(dict(args, mode='status', ban_time='2h'))
    assert rc == 0 and res['changed'] is False and 'windows' not in res
    assert [(e['address'], e['source'], e['state']) for e in res['entries']] == [
        ('192.0.2.1', 'hand', 'never'), ('203.0.113.7', 'own', 'due'), ('198.51.100.4', 'fleet', 'at'),
        ('203.0.113.70', 'hand', 'never')]
    assert res['entries'][2]['expires'] == wall - 600 + 7200
    detect = dict(args, log=str(case_log), now=NOW, server_ip='10.0.0.5', exclusions=str(tmp_path / 'none'),
                  ban_time=7200)
    rc, res = ansible(detect, flags=['--check', '--diff'])
    assert rc == 0 and res['changed'] is True
    assert [e['address'] for e in res['expired']] == ['203.0.113.7'] and res['expired'][0]['ban'] == '2h'
    assert res['diff']['prepared'].split('\n')[2:] == ['@@ -2 +1,0 @@', '-203.0.113.7\r', '@@ -4,0 +4 @@', '+192.0.2.77', '']
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.7\r\n198.51.100.4\n203.0.113.70'
    rc, res = ansible(detect)
    assert rc == 0 and res['changed'] is True and res['messages'][0] == 'Unblocking IP address: 203.0.113.7 (ban of 2h expired)'
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n198.51.100.4\n203.0.113.70\n192.0.2.77\n'
    # A log the detector cannot read: the task warns, naming it.
    iso = tmp_path / 'iso.log'
    iso.write_bytes(b'192.0.2.9 - - 2026-11-21T03:10:00+00:00 "GET /job/1 HTTP/1.1" 200 1 "-" "x"\n')
    rc, res = ansible(dict(args, mode='status', log=[str(iso)], now=NOW, server_ip='10.0.0.5'))
    assert rc == 0 and [w['records'] for w in res['windows']] == [[], []]
    assert len(res['warnings']) == 1 and res['warnings'][0].startswith('%s: no line of the part read carries' % iso)


@pytest.fixture
def case_log(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'192.0.2.77': 1300}))
    return log


def playbook(inventory, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    return subprocess.run(['ansible-playbook', '-i', str(inventory), str(ROOT / 'playbooks' / 'unblock.yml')] + list(extra),
                          cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)


def test_unblock_playbook_on_every_web_host(tmp_path):
    hosts = {}
    for name in ('web1', 'web2'):
        base = tmp_path / name
        base.mkdir()
        (base / 'blocklist').write_bytes(b'192.0.2.1\n203.0.113.7\n')
        (base / 'exclusions').write_bytes(b'# office\n198.51.100.23\n')
        hosts[name] = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                       'bot_detector_blocklist': str(base / 'blocklist'),
                       'bot_detector_exclusions_file': str(base / 'exclusions'),
                       'bot_detector_activity_log': str(base / 'activity.log')}
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(yaml.safe_dump({'all': {'children': {'web': {'hosts': hosts}}}}))
    missing = playbook(inventory)
    assert missing.returncode != 0 and b'Give the addresses to unblock as a list' in missing.stdout
    check = playbook(inventory, '-e', '{"bot_detector_unblock": ["203.0.113.7"], "bot_detector_unblock_allow": true}',
                     '--check', '--diff')
    assert check.returncode == 0, check.stdout.decode()[-3000:]
    assert b'-203.0.113.7' in check.stdout and b'+203.0.113.7' in check.stdout
    for name in hosts:
        assert (tmp_path / name / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.7\n'
    run = playbook(inventory, '-e', '{"bot_detector_unblock": ["203.0.113.7"], "bot_detector_unblock_allow": true}')
    assert run.returncode == 0, run.stdout.decode()[-3000:]
    for name in hosts:
        assert (tmp_path / name / 'blocklist').read_bytes() == b'192.0.2.1\n'
        assert (tmp_path / name / 'exclusions').read_bytes() == b'# office\n198.51.100.23\n203.0.113.7\n'
        assert (tmp_path / name / 'activity.log').read_text().endswith(
            'IP addess 203.0.113.7 removed from the block list (unblock)\n')
    again = playbook(inventory, '-e', '{"bot_detector_unblock": ["203.0.113.7"], "bot_detector_unblock_allow": true}')
    assert again.returncode == 0 and b'changed=0' in again.stdout and b'changed=1' not in again.stdout
    # Without the allow-list option, only the blocklist is touched.
    (tmp_path / 'web1' / 'blocklist').write_bytes(b'192.0.2.1\n')
    plain = playbook(inventory, '-e', '{"bot_detector_unblock": ["192.0.2.1"]}', '--limit', 'web1')
    assert plain.returncode == 0
    assert (tmp_path / 'web1' / 'blocklist').read_bytes() == b''
    assert b'192.0.2.1' not in (tmp_path / 'web1' / 'exclusions').read_bytes()


def test_the_diff_of_an_expired_entry_blocked_again_shows_its_removal_and_its_addition(tmp_path):
    """The diff says which lines go and which come: an expired first line appended again by
    the same run is one line removed at the top and one appended, not another line moved."""
    blocklist, activity = tmp_path / 'blocklist', tmp_path / 'activity.log'
    blocklist.write_bytes(b'203.0.113.7\n192.0.2.1\n')
    activity.write_text('%s | IP addess 203.0.113.7 added to the block list, RPH=1450\n' % gnu_date(int(time.time()) - 3 * 3600))
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1300}))
    detect = dict(blocklist=str(blocklist), activity_log=str(activity), log=str(log), now=NOW, server_ip='10.0.0.5',
                  exclusions=str(tmp_path / 'none'), ban_time='2h')
    rc, res = ansible(detect, flags=['--check', '--diff'])
    assert rc == 0 and res['changed'] is True
    assert res['messages'][:3] == ['Would unblock IP address: 203.0.113.7 (ban of 2h expired)', 'Checking the previous hour...',
                                   'Would block IP address: 203.0.113.7 (1300 requests)']
    assert res['diff']['prepared'].split('\n')[2:] == ['@@ -1 +0,0 @@', '-203.0.113.7', '@@ -2,0 +2 @@', '+203.0.113.7', '']
