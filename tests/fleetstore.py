"""A real fleet store for the tests (issue 37): Debian's redis-server (or valkey-server), started
by the test in its scratch directory on a free loopback port, with no persistence; killed with
SIGKILL and restarted empty on the same port; a 3-master cluster on loopback ports; and a TCP
proxy that drops a connection after forwarding a request (the reply is lost)."""
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest


def debian_has_valkey():
    """Whether this Debian has Valkey (13 and later; install-prereqs.sh installs it there)."""
    try:
        with open('/etc/os-release') as handle:
            fields = dict(line.rstrip('\n').split('=', 1) for line in handle if '=' in line)
        return fields.get('ID') == 'debian' and int(fields.get('VERSION_ID', '0').strip('"').split('.')[0]) >= 13
    except (OSError, ValueError):
        return False


# The servers the fleet tests run against: Redis always, Valkey where Debian has it (Debian 12
# has none: there the Valkey case is molecule's fleet scenario, whose store host is Debian 13).
SERVERS = ['redis-server'] + (['valkey-server'] if debian_has_valkey() or shutil.which('valkey-server') else [])


def server_binary(name='redis-server'):
    path = shutil.which(name)
    if path is None:
        pytest.fail('%s is missing: tests/tools/install-prereqs.sh installs it' % name)
    return path


def free_port(cluster=False):
    """A free loopback port; for a cluster node, one whose bus port (+10000) is free too."""
    while True:
        with socket.socket() as probe:
            probe.bind(('127.0.0.1', 0))
            port = probe.getsockname()[1]
        if not cluster:
            return port
        if port + 10000 < 65536:
            with socket.socket() as probe:
                try:
                    probe.bind(('127.0.0.1', port + 10000))
                    return port
                except OSError:
                    continue


def cli_binary(server):
    return server.replace('-server', '-cli') if shutil.which(os.path.basename(server).replace('-server', '-cli')) else 'redis-cli'


def die_with_parent():
    """In a server's child before exec: killed when the test process that started it dies, so a
    killed pytest (its teardown never run) leaves no server behind (Linux's PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # 1: PR_SET_PDEATHSIG


class StoreServer:
    """One server process; ``url`` for the settings, ``cli(...)`` runs its client."""

    def __init__(self, base, binary='redis-server', port=None, extra=()):
        self.base, self.binary = base, server_binary(binary)
        self.port = port or free_port()
        self.extra = list(extra)
        self.proc = None
        self.dir = base / ('store-%d' % self.port)
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self):
        return 'redis://127.0.0.1:%d/0' % self.port

    def start(self):
        self.proc = subprocess.Popen([self.binary, '--port', str(self.port), '--bind', '127.0.0.1', '--dir', str(self.dir),
                                      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'no']
                                     + self.extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=die_with_parent)
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                socket.create_connection(('127.0.0.1', self.port), 0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.02)
        self.kill()
        raise AssertionError('the store did not listen on port %d within 5 s' % self.port)

    def kill(self):
        """kill -9, nothing kept (no persistence)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)
        self.proc = None

    def cli(self, *args, user=None):
        command = [cli_binary(self.binary), '-h', '127.0.0.1', '-p', str(self.port)]
        if user:
            command += ['--user', user[0], '--pass', user[1], '--no-auth-warning']
        out = subprocess.run(command + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        return out.stdout.decode()


def store_under(request, tmp_path, name):
    """A fixture's (url, fleet name, cli): a server of ``request.param`` (a name of SERVERS) of
    the test's own, or the session's cluster ('cluster') under the fleet ``name``."""
    if request.param == 'cluster':
        cluster = request.getfixturevalue('fleet_cluster')
        yield cluster.url, name, lambda *a: cluster.nodes[0].cli('-c', *a)
        return
    server = StoreServer(tmp_path, request.param).start()
    yield server.url, name, server.cli
    server.kill()


def window_sums(cli, start, name='bot-detector'):
    """{address: sum} of the window starting at ``start`` in the keys its token names now (the
    product's layout 2: ``{NAME:v2:START}``), its own fields (" total", " crossed") left out;
    ``cli``: a StoreServer's cli (with '-c' for a cluster)."""
    tag = '{%s:v2:%d}' % (name, start)
    token = cli('get', tag + ':epoch').strip()
    raw = cli('hgetall', '%s:%s:sum' % (tag, token)).split('\n')
    pairs = dict(zip(raw[::2], raw[1::2]))
    return dict((key, int(value)) for key, value in pairs.items() if key and not key.startswith(' '))


def plant_crossings(cli, start, items, name='bot-detector'):
    """As a host with the fleet's password could: ``items`` ("address sum" texts) appended to
    the crossings list of the window starting at ``start`` under its token (set when none)."""
    tag = '{%s:v2:%d}' % (name, start)
    cli('set', tag + ':epoch', 'b1a7ed' * 4, 'nx')        # one the script could have drawn: 24 hex digits
    token = cli('get', tag + ':epoch').strip()
    for item in items:
        cli('rpush', '%s:%s:crossed' % (tag, token), item)


def store_starts(server, name='bot-detector'):
    """The windows' starts the store holds keys of (layout 2)."""
    found = server.cli('--scan', '--pattern', '{%s:v2:*}:epoch' % name).split()
    return sorted(int(key.split(':')[2].rstrip('}')) for key in found)


def tls_files(base):
    """A scratch CA and a certificate for 127.0.0.1 it signed (openssl): {ca, cert, key}."""
    base.mkdir(parents=True, exist_ok=True)
    ca, ca_key, cert, key, csr = (str(base / n) for n in ('ca.pem', 'ca.key', 'server.pem', 'server.key', 'server.csr'))
    ext = base / 'san.cnf'
    ext.write_text('subjectAltName = IP:127.0.0.1\n')

    def openssl(*args):
        subprocess.run(['openssl'] + list(args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', ca_key, '-out', ca, '-days', '2', '-subj', '/CN=test CA')
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1')
    openssl('x509', '-req', '-in', csr, '-CA', ca, '-CAkey', ca_key, '-CAcreateserial', '-out', cert, '-days', '2',
            '-extfile', str(ext))
    return {'ca': ca, 'cert': cert, 'key': key}


class Cluster:
    """Three masters on loopback ports, joined by ``redis-cli --cluster create``."""

    def __init__(self, base, binary='redis-server'):
        extra = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000']
        self.nodes = [StoreServer(base, binary, port=free_port(cluster=True), extra=extra) for dummy in range(3)]

    @property
    def url(self):
        return 'redis://127.0.0.1:%d/0?cluster=yes' % self.nodes[0].port

    def start(self):
        try:
            return self._start()
        except BaseException:
            self.kill()         # no node left running
            raise

    def _start(self):
        for node in self.nodes:
            node.start()
        subprocess.run([cli_binary(self.nodes[0].binary), '--cluster', 'create']
                       + ['127.0.0.1:%d' % n.port for n in self.nodes] + ['--cluster-replicas', '0', '--cluster-yes'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        wait_cluster_ok(self)
        return self

    def kill(self):
        for node in self.nodes:
            node.kill()


def wait_cluster_ok(cluster, timeout=15):
    """Until every node says cluster_state:ok."""
    deadline = time.time() + timeout
    while not all('cluster_state:ok' in node.cli('cluster', 'info') for node in cluster.nodes):
        assert time.time() < deadline, 'the cluster did not come up'
        time.sleep(0.1)


class DroppingProxy:
    """Loopback TCP between a client and ``port``: every ``every``-th script call (EVALSHA) is
    forwarded and then the connection is closed before its reply comes back (a lost reply)."""

    def __init__(self, port, every=2):
        self.target, self.every = port, every
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.requests = self.dropped = 0
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return 'redis://127.0.0.1:%d/0?cluster=no' % self.port

    def _accept(self):
        while not self.stopped:
            try:
                client, dummy = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        server = socket.create_connection(('127.0.0.1', self.target))
        cut = threading.Event()

        def replies():
            try:
                while not cut.is_set():
                    data = server.recv(1 << 20)
                    if not data or cut.is_set():
                        return
                    client.sendall(data)
            except OSError:
                return
        threading.Thread(target=replies, daemon=True).start()
        try:
            while True:
                data = client.recv(1 << 20)
                if not data:
                    return
                with self.lock:
                    if b'EVALSHA' in data.upper():
                        self.requests += 1
                    drop = b'EVALSHA' in data.upper() and self.requests % self.every == 0
                if drop:
                    cut.set()       # its reply is not forwarded
                server.sendall(data)
                if drop:
                    time.sleep(0.05)        # the server has applied it by then
                    with self.lock:
                        self.dropped += 1
                    return
        except OSError:
            return
        finally:
            cut.set()
            client.close()
            server.close()

    def close(self):
        self.stopped = True
        self.listener.close()


class DrippingStore:
    """A loopback TCP server that answers anything sent to it one byte every ``every`` seconds,
    a reply that never ends (a bulk string of ten million bytes): each read gets a byte in time."""

    def __init__(self, every=0.5):
        self.every = every
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return 'redis://127.0.0.1:%d/0?cluster=no' % self.port

    def _accept(self):
        while not self.stopped.is_set():
            try:
                client, dummy = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(client,), daemon=True).start()

    def _drip(self, client):
        reply = b'$10000000\r\n' + b'x' * 10000000
        client.setblocking(False)
        try:
            for byte in range(len(reply)):
                if self.stopped.wait(self.every):
                    return
                try:
                    client.recv(1 << 16)        # whatever the client sent, taken in
                except BlockingIOError:
                    pass
                client.sendall(reply[byte:byte + 1])
        except OSError:
            return
        finally:
            client.close()

    def close(self):
        self.stopped.set()
        self.listener.close()
