"""The fleet store on podman hosts (issue 37), after test_fleet.py's playbook runs: the store
host made by the role jobboard.bot_detector.fleet_store (Valkey on Debian 13, its Unix socket
in a volume the web hosts share: no network), its ACL user and nothing else; then the web
hosts given the store by the role (python3-redis, the password file, the command without -S),
a follower each, and a scraper spread over the three hosts (no host sees 1000) blocked on every
host within seconds, one just under the threshold on none, an address allow-listed on fweb2
blocked on the others only."""
import os
import re
import subprocess
import sys
import tempfile
import time

import testinfra
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'default', 'tests'))
from helpers import ROOT, ansible_run, container_now, get, loggen, put  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://fstore']
STORE = testinfra.get_host('podman://fstore')
WEB = dict((name, testinfra.get_host('podman://' + name)) for name in ('fweb1', 'fweb2', 'fweb3'))
SOCKET = '/run/fleet-store/store.sock'
PASSWORD = 'molecule-fleet-store-password'
URL = 'unix://bot-detector@%s' % SOCKET
LOG = '/var/log/nginx/fleet.log'
SPREAD = '198.51.100.150'       # 350 on each host: 1050 fleet-wide
NEAR = '198.51.100.151'         # 333 on each: 999
ALLOWED = '203.0.113.77'        # 400 on each (1200), allow-listed on fweb2 (molecule.yml)


def cli(*args, user=True):
    """valkey-cli on the store host over the socket, as the detectors' user (password in the
    environment, never on the command line) or as the default user."""
    env = ['-e', 'REDISCLI_AUTH=%s' % PASSWORD] if user else []
    got = subprocess.run(['podman', 'exec'] + env + ['fstore', 'valkey-cli', '--no-auth-warning', '-s', SOCKET]
                         + (['--user', 'bot-detector'] if user else []) + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    return got.stdout.strip()


def test_the_store_has_one_acl_user_with_only_the_detectors_commands_and_keys():
    conf = STORE.file('/etc/valkey/fleet-store.conf')
    assert conf.mode == 0o640 and conf.user == 'valkey'
    assert 'appendonly yes' in conf.content_string and 'appendfsync everysec' in conf.content_string
    assert 'port 0' in conf.content_string                      # the socket only
    acl = STORE.file('/etc/valkey/fleet-store.acl').content_string
    assert PASSWORD not in acl and 'user default off' in acl
    assert cli('PING') == 'PONG'
    assert 'NOAUTH' in cli('PING', user=False)                  # the default user is off
    assert 'NOPERM' in cli('FLUSHALL')
    assert 'NOPERM' in cli('CONFIG', 'GET', 'dir')
    assert 'NOPERM' in cli('SET', 'other-fleet:key', '1')       # keys outside {bot-detector:
    assert 'NOPERM' in cli('KEYS', '*')


def converge_web_with_the_store():
    """The role again on the web hosts, now with the fleet store's variables."""
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as extra:
        yaml.safe_dump({'bot_detector_fleet_store': URL, 'bot_detector_fleet_store_password': PASSWORD,
                        'bot_detector_metrics_file': '/var/lib/bot-detector-metrics/bot_detector.prom'}, extra)
    try:
        run = ansible_run(['ansible-playbook', os.path.join(ROOT, 'molecule', 'fleet', 'converge.yml'), '--limit', 'web',
                           '-e', '@' + extra.name], callback='ansible.builtin.default')
    finally:
        os.unlink(extra.name)
    out = run.stdout.decode()
    assert run.returncode == 0, out[-4000:] + run.stderr.decode()
    assert PASSWORD not in out and PASSWORD not in run.stderr.decode()
    return out


def start_follower(name):
    subprocess.run(['podman', 'exec', '-d', name, 'sh', '-c',
                    'echo $$ > /run/fleet-follower.pid; exec /usr/local/sbin/bot-detector.sh --follow '
                    '--state-dir /var/lib/bot-detector-follow %s >/var/log/fleet-follower.out 2>&1' % LOG],
                   stdout=subprocess.DEVNULL, check=True)        # podman prints the exec session's id


def stop_follower(name):
    subprocess.run(['podman', 'exec', name, 'sh', '-c', 'kill $(cat /run/fleet-follower.pid)'], check=False)


def blocklist(host):
    return get(host, '/etc/ipblocklist.txt').decode().split('\n')


def test_a_scraper_spread_over_the_hosts_is_blocked_on_every_host_within_seconds():
    converge_web_with_the_store()
    for name, host in WEB.items():
        password = host.file('/etc/bot-detector/fleet-store.password')
        assert password.mode == 0o600 and password.user == 'root' and password.content_string == PASSWORD + '\n'
        config = host.file('/etc/bot-detector/bot-detector.conf').content_string
        assert 'fleet_store = %s' % URL in config and 'fleet_store_password_file = /etc/bot-detector/fleet-store.password' in config
        status = host.run('/usr/local/sbin/bot-detector.sh --status')      # python3 -S, redis-py found all the same
        assert 'Fleet store unix://***@%s (fleet bot-detector, this host %s): reachable' % (SOCKET, name) in status.stdout, \
            status.stdout + status.stderr
        put(host, LOG, b'')
        host.run('mkdir -p /var/lib/bot-detector-follow')
    try:
        for name in WEB:
            start_follower(name)
        time.sleep(2)
        written = {}
        for name, host in WEB.items():
            now = container_now(host)
            lines = loggen.planted_log(now, current={SPREAD: 350, NEAR: 333, ALLOWED: 400})
            subprocess.run(['podman', 'exec', '-i', name, 'sh', '-c', 'cat >> %s' % LOG], input=lines, check=True)
            written[name] = time.time()
        deadline = time.time() + 20
        while time.time() < deadline and not all(SPREAD in blocklist(host) for host in WEB.values()):
            time.sleep(0.5)
        took = time.time() - max(written.values())
        print('fleet store: the spread scraper blocked on the three hosts %.1f s after the last write' % took)
        for name, host in WEB.items():
            listed = blocklist(host)
            assert SPREAD in listed, (name, get(host, '/var/log/fleet-follower.out'))
            assert NEAR not in listed
            assert (ALLOWED in listed) == (name != 'fweb2')  # allow-listed there only
        assert took < 10
        time.sleep(6)       # a metrics write (every 5 s)
        for name, host in WEB.items():
            prom = get(host, '/var/lib/bot-detector-metrics/bot_detector.prom').decode()
            assert re.search(r'^bot_detector_fleet_store_up\{.*\} 1$', prom, re.M), prom
            assert PASSWORD not in prom
    finally:
        for name in WEB:
            stop_follower(name)
