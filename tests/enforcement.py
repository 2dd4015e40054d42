"""Helpers of the enforcement tests: the tools they need, network namespaces made and removed
by the test, a request from a client, and the command run in a namespace."""
import os
import secrets
import shutil
import subprocess
import sys
import time

import pytest

from conftest import CORE

TOOLS = {'nft': 'nftables', 'nginx': 'nginx', 'curl': 'curl', 'ip': 'iproute2'}
# Every request: at most this long (connect, then the whole transfer).
CONNECT_TIMEOUT, MAX_TIME = 2, 10


def require_tools(*tools):
    """Root and ``tools``, or (outside CI) a skip; under CI a missing one is a failure
    (tests/tools/install-prereqs.sh installs them)."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    problem = 'needs root' if os.geteuid() != 0 else ('needs %s' % ', '.join(TOOLS[t] for t in missing) if missing else None)
    if problem:
        if os.environ.get('CI') == 'true':
            pytest.fail('enforcement test %s (tests/tools/install-prereqs.sh)' % problem)
        pytest.skip(problem)


def sh(*args, **kwargs):
    return subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=kwargs.pop('check', True),
                          timeout=kwargs.pop('timeout', 60), **kwargs)


def host_ruleset():
    return sh('nft', 'list', 'ruleset').stdout


class Lab:
    """Network namespaces with unique names (``bd<pid><random>`` and a role letter): a server
    and clients, each client joined to the server by its own veth pair. Removed by ``close``,
    with every process started in them."""

    def __init__(self):
        self.tag = 'bd%d%s' % (os.getpid() % 100000, secrets.token_hex(2))
        self.namespaces, self.processes = [], []
        self.server = self.namespace('s')

    def namespace(self, role):
        name = self.tag + role
        sh('ip', 'netns', 'add', name)
        self.namespaces.append(name)
        sh('ip', '-n', name, 'link', 'set', 'lo', 'up')
        return name

    def client(self, role, server_addresses, client_addresses):
        """A client namespace joined to the server: ``server_addresses`` on the server's end of
        the pair, ``client_addresses`` (the first of each family is its source) on the client's."""
        name = self.namespace(role)
        near, far = self.tag + role + 'a', self.tag + role + 'b'       # at most 15 characters
        sh('ip', 'link', 'add', near, 'netns', self.server, 'type', 'veth', 'peer', 'name', far, 'netns', name)
        for namespace, link, addresses in ((self.server, near, server_addresses), (name, far, client_addresses)):
            for address in addresses:
                sh('ip', '-n', namespace, 'addr', 'add', address, 'dev', link, *(['nodad'] if ':' in address else []))
            sh('ip', '-n', namespace, 'link', 'set', link, 'up')
        return name

    def start(self, namespace, *args):
        proc = subprocess.Popen(['ip', 'netns', 'exec', namespace] + [str(a) for a in args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(proc)
        return proc

    def close(self):
        for proc in self.processes:
            proc.kill()
            proc.wait()
        for name in self.namespaces:
            subprocess.run(['ip', 'netns', 'del', name], check=False)


def served(namespace, url, source=None):
    """The HTTP status of one request from ``namespace`` (an int), or None when no connection
    was made within the time-out (a dropped SYN)."""
    args = ['ip', 'netns', 'exec', namespace, 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '-g',
            '--connect-timeout', str(CONNECT_TIMEOUT), '-m', str(MAX_TIME)]
    if source:
        args += ['--interface', source]
    proc = subprocess.run(args + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=MAX_TIME + 5, check=False)
    if proc.returncode == 0:
        return int(proc.stdout)
    assert proc.returncode == 28, proc         # a time-out: the connection was dropped
    return None


def reloaded(master_pid, workers=1, seconds=10):
    """Until an nginx master's old workers have gone after a reload: until then an old worker,
    not yet told to stop, may still accept a connection and answer with the old configuration."""
    def settled():
        children = subprocess.run(['pgrep', '-P', str(master_pid)], stdout=subprocess.PIPE, check=False).stdout.split()
        return len(children) == workers
    wait_for(settled, seconds)


def wait_for(check, seconds=10):
    """Until ``check()`` is true (an AssertionError, such as a refused connection, is not yet)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return
        except AssertionError:
            pass
        time.sleep(0.1)
    raise AssertionError('not ready after %ds' % seconds)


def detector(namespace, args):
    """The host command run in ``namespace`` (None: here)."""
    prefix = [] if namespace is None else ['ip', 'netns', 'exec', namespace]
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    return subprocess.run(prefix + [sys.executable, str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=120, check=False)


# A scratch nginx for the nginx enforcement's tests: its own prefix, pid file, temp directories
# and geo file ({d}/blocked.conf) under ``d``; ``server`` holds the listen lines and the
# blocking (the role's snippet). tests/bench/geo_bench.py has its own: it runs without pytest.
NGINX_CONF = '''
pid {d}/nginx.pid;
error_log {d}/error.log notice;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    log_format combined_here '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
                             '"$http_referer" "$http_user_agent"';
    access_log {access_log};
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    geo $bot_detector_blocked {{
        default 0;
        include {d}/blocked.conf;
    }}
    server {{
{server}
    }}
}}
'''


def nginx_conf(directory, server, access_log='off'):
    """The text of a scratch nginx.conf under ``directory`` (NGINX_CONF); ``server``: the lines
    of its one server block."""
    return NGINX_CONF.format(d=directory, server=server, access_log=access_log)


def table_of(blocklist):
    """The nftables table of ``blocklist`` (one a blocklist: enforce/nftables.table_name), as
    'inet bot_detector_<key>' ('inet bot_detector' for the default blocklist)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nftables
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    return nftables.table_name(Settings(blocklist=str(blocklist)))


def the_table(namespace):
    """The one detector's table in ``namespace`` (family, name), or None (a test's namespace has a few
    elements: listing its tables is cheap there)."""
    out = sh('ip', 'netns', 'exec', namespace, 'nft', 'list', 'tables').stdout.decode().split('\n')
    found = [line.split()[1:] for line in out if line.startswith('table inet bot_detector')]
    assert len(found) <= 1, out
    return found[0] if found else None
