"""The systemd scheduler on a host whose init is systemd (issue 21): the timer enabled and
waiting, the service sandboxed, a start of the service runs the detector on each log with
its output in the journal; the switch to cron removes the units; absent leaves no unit."""
import os
import sys

import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'default', 'tests'))
from helpers import ROOT, ansible_run, container_now, get, loggen, put  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://tweb1']
HOST = testinfra.get_host('podman://tweb1')
CONVERGE = os.path.join(ROOT, 'molecule', 'default', 'converge.yml')


def show(unit, prop):
    return HOST.check_output('systemctl show %s -p %s --value' % (unit, prop)).strip()


def test_the_timer_is_enabled_and_waits_every_10_minutes_spread_and_persistent():
    assert HOST.run('systemctl is-enabled bot-detector.timer').stdout.strip() == 'enabled'
    assert HOST.run('systemctl is-active bot-detector.timer').stdout.strip() == 'active'
    assert show('bot-detector.timer', 'Persistent') == 'yes'
    assert show('bot-detector.timer', 'RandomizedDelayUSec') == '2min'
    assert '*-*-* *:00/10:00' in show('bot-detector.timer', 'TimersCalendar')
    assert not HOST.file('/etc/cron.d/bot-detector').exists


def test_the_service_is_sandboxed():
    assert show('bot-detector.service', 'Type') == 'oneshot'
    assert show('bot-detector.service', 'ProtectSystem') == 'strict'
    assert show('bot-detector.service', 'PrivateTmp') == 'yes'
    assert show('bot-detector.service', 'NoNewPrivileges') == 'yes'
    writable = [path.lstrip('-') for path in show('bot-detector.service', 'ReadWritePaths').split()]
    for path in ('/etc', '/var/log', '/var/lib/bot-detector', '/run/bot-detector', '/var/lib/node_exporter/textfile_collector'):
        assert path in writable, writable
    assert HOST.run('systemd-analyze verify /etc/systemd/system/bot-detector.service').rc == 0


def test_a_start_of_the_service_runs_the_detector_on_each_log_into_the_journal():
    now = container_now(HOST)
    put(HOST, '/var/log/nginx/access.log', loggen.planted_log(now, current={'203.0.113.61': 1200}))
    put(HOST, '/var/log/nginx/stellen.access.log', loggen.planted_log(now, current={'203.0.113.62': 1300}))
    got = HOST.run('systemctl start bot-detector.service')
    assert got.rc == 0, got.stderr + HOST.run('journalctl -u bot-detector --no-pager | tail -20').stdout
    blocklist = get(HOST, '/etc/ipblocklist.txt')
    assert b'203.0.113.61\n' in blocklist and b'203.0.113.62\n' in blocklist
    journal = HOST.check_output('journalctl -u bot-detector.service --no-pager -o cat')
    assert 'Blocking IP address: 203.0.113.61 (1200 requests)' in journal
    assert 'Blocking IP address: 203.0.113.62 (1300 requests)' in journal
    assert HOST.file('/var/lib/node_exporter/textfile_collector/bot_detector.prom').exists
    assert not HOST.file('/var/log/bot-detector-cron.log').exists          # cron's output file: not used


def test_switching_to_cron_removes_the_units_and_stops_the_timer():
    run = ansible_run(['ansible-playbook', CONVERGE, '--limit', 'tweb1', '-e', 'bot_detector_scheduler=cron'])
    assert run.returncode == 0, run.stdout.decode()[-3000:]
    assert HOST.file('/etc/cron.d/bot-detector').exists
    for unit in ('/etc/systemd/system/bot-detector.timer', '/etc/systemd/system/bot-detector.service'):
        assert not HOST.file(unit).exists, unit
    assert HOST.run('systemctl is-active bot-detector.timer').stdout.strip() != 'active'


def test_back_to_systemd_then_absent_leaves_no_unit_and_no_state():
    run = ansible_run(['ansible-playbook', CONVERGE, '--limit', 'tweb1'])
    assert run.returncode == 0, run.stdout.decode()[-3000:]
    assert not HOST.file('/etc/cron.d/bot-detector').exists
    assert HOST.run('systemctl is-active bot-detector.timer').stdout.strip() == 'active'
    run = ansible_run(['ansible-playbook', CONVERGE, '--limit', 'tweb1', '-e', 'bot_detector_state=absent'])
    assert run.returncode == 0, run.stdout.decode()[-3000:]
    for gone in ('/etc/systemd/system/bot-detector.timer', '/etc/systemd/system/bot-detector.service',
                 '/etc/cron.d/bot-detector', '/var/lib/bot-detector', '/usr/local/lib/bot-detector'):
        assert not HOST.file(gone).exists, gone
    assert HOST.run('systemctl is-active bot-detector.timer').stdout.strip() != 'active'
    assert b'203.0.113.61\n' in get(HOST, '/etc/ipblocklist.txt')           # the operators' list stays
