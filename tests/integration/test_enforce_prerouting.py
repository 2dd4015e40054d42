"""nftables enforcement sees the traffic before conntrack and DNAT (issue 44, item 7): a raw-table
``notrack`` on the web ports (common tuning on busy hosts) and a web server behind DNAT (docker
``-p``: the forward hook, never input) once left a listed client served while every check said
in sync. In network namespaces made here: the listed client is served before the sync and
refused after it, in both set-ups; the visitor is served throughout; an open connection of
the listed client is cut too (no ``ct state``). The host's own ruleset never changes."""
import subprocess

import pytest

from enforcement import Lab, detector, host_ruleset, require_tools, served, sh, wait_for

PORT = 8080
SERVER, SERVER_VISITOR, BACKEND_GATEWAY, BACKEND = '192.0.2.1', '198.51.100.1', '10.99.0.1', '10.99.0.2'
SCRAPER, VISITOR = '192.0.2.10', '198.51.100.20'
NOTRACK = '''table inet tuning {
    chain prerouting { type filter hook prerouting priority raw; tcp dport %d notrack; udp dport %d notrack; }
    chain output { type filter hook output priority raw; tcp sport %d notrack; udp sport %d notrack; }
}
''' % (PORT, PORT, PORT, PORT)
DNAT = '''table ip docker_like {
    chain prerouting { type nat hook prerouting priority dstnat; tcp dport %d dnat to %s:%d; }
}
''' % (PORT, BACKEND, PORT)


@pytest.fixture
def lab():
    require_tools('ip', 'nft', 'curl')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.scraper = lab.client('c', [SERVER + '/24'], [SCRAPER + '/24'])
        lab.visitor = lab.client('v', [SERVER_VISITOR + '/24'], [VISITOR + '/24'])
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before         # nothing outside the namespaces changed


def options(tmp_path):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER, '--server-ip', SERVER_VISITOR, '--enforcement', 'nftables',
            '--enforcement-port', str(PORT), '--metrics-file', tmp_path / 'metrics.prom', '--enforce-now']


def url(host):
    return 'http://%s:%d/' % (host, PORT)


def listed_is_refused_after_the_sync(lab, tmp_path):
    wait_for(lambda: served(lab.visitor, url(SERVER_VISITOR)) == 200)
    assert served(lab.scraper, url(SERVER)) == 200
    (tmp_path / 'blocklist').write_text(SCRAPER + '\n')
    run = detector(lab.server, options(tmp_path))
    assert run.returncode == 0, run
    assert 'bot_detector_enforcement_in_sync{backend="nftables"} 1' in (tmp_path / 'metrics.prom').read_text()
    assert served(lab.scraper, url(SERVER)) is None
    assert served(lab.visitor, url(SERVER_VISITOR)) == 200


def test_a_raw_notrack_on_the_web_port_does_not_hide_the_listed_client(lab, tmp_path):
    sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=NOTRACK.encode())
    lab.start(lab.server, 'python3', '-m', 'http.server', '--bind', '0.0.0.0', str(PORT), '--directory', '/')
    listed_is_refused_after_the_sync(lab, tmp_path)


def test_a_server_behind_dnat_does_not_hide_the_listed_client(lab, tmp_path):
    backend = lab.client('b', [BACKEND_GATEWAY + '/24'], [BACKEND + '/24'])
    sh('ip', '-n', backend, 'route', 'add', 'default', 'via', BACKEND_GATEWAY)
    sh('ip', 'netns', 'exec', lab.server, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1')
    sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=DNAT.encode())
    lab.start(backend, 'python3', '-m', 'http.server', '--bind', '0.0.0.0', str(PORT), '--directory', '/')
    listed_is_refused_after_the_sync(lab, tmp_path)


def test_a_connection_open_before_the_sync_is_cut_by_it(lab, tmp_path):
    """No ``ct state new``: every packet of a listed client to the ports is dropped, so a
    connection it opened before the sync gets nothing more through."""
    # conntrack at work in the namespace from the start, as on any host with a stateful rule:
    # the connection is tracked from its first packet, so it is not new when the sync comes.
    sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=TRACKING.encode())
    lab.start(lab.server, 'python3', '-c', ECHO % PORT)
    client = subprocess.Popen(['ip', 'netns', 'exec', lab.scraper, 'python3', '-c', TALK % (SERVER, PORT)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lab.processes.append(client)
    try:
        client.stdin.write(b'one\n')
        client.stdin.flush()
        assert client.stdout.readline() == b'one\n'
        (tmp_path / 'blocklist').write_text(SCRAPER + '\n')
        run = detector(lab.server, options(tmp_path))
        assert run.returncode == 0, run
        client.stdin.write(b'two\n')
        client.stdin.flush()
        got = client.stdout.readline()
        assert got == b'timeout\n', (got, client.stderr.read() if got == b'' else '')     # the echo never came back
    finally:
        client.kill()


TRACKING = 'table inet stateful { chain input { type filter hook input priority 0; ct state invalid counter; }; }\n'
# An echo server on the port, one line at a time; a client that says each line of its input and
# prints the answer, or 'timeout' after 3 s without one.
ECHO = '''import socket, threading
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", %d)); server.listen(4)
def serve(conn):
    for line in conn.makefile("rb"):
        conn.sendall(line)
while True:
    threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()
'''
TALK = '''import socket, sys, time
for attempt in range(50):
    try:
        conn = socket.create_connection(("%s", %d), timeout=3); break
    except OSError:
        time.sleep(0.1)
reader = conn.makefile("rb")
for line in sys.stdin.buffer:
    conn.sendall(line)
    try:
        sys.stdout.buffer.write(reader.readline())
    except socket.timeout:
        sys.stdout.buffer.write(b"timeout\\n")
    sys.stdout.flush()
'''
