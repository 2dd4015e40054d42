"""The throttle in nftables (issue 46), in network namespaces the test makes: a per-source rate
limit of new connections, which a scraper on one keep-alive connection escapes (the guide says
so and points to nginx's throttle)."""
import sys

import pytest

from enforcement import Lab, detector, require_tools, served, sh

SERVER, CLIENT = '10.200.1.1', '10.200.1.2'


@pytest.fixture
def lab():
    require_tools('nft', 'ip', 'curl')
    made = Lab()
    yield made
    made.close()


BACKEND_GATEWAY, BACKEND = '10.99.0.1', '10.99.0.2'
# docker -p: the port forwarded to a container, whose packets take the forward hook, never input
DNAT = '''table ip docker_like {
    chain prerouting { type nat hook prerouting priority dstnat; tcp dport 80 dnat to %s:8080; }
}
''' % BACKEND


# common tuning on busy hosts: no connection tracking on the web port (no ct state there)
NOTRACK = '''table inet tuning {
    chain prerouting { type filter hook prerouting priority raw; tcp dport 80 notrack; }
    chain output { type filter hook output priority raw; tcp sport 80 notrack; }
}
'''


@pytest.mark.parametrize('where', ['host', 'behind-dnat', 'notrack'])
def test_a_throttled_address_opens_few_new_connections_but_escapes_on_one_keep_alive(lab, files, tmp_path, where):
    """On the host itself, for a web server behind DNAT (a container) and beside a raw-table
    notrack: the throttle judges the packets in prerouting, before conntrack and DNAT, as the
    drops do (test_enforce_prerouting.py)."""
    client = lab.client('c', [SERVER + '/24'], [CLIENT + '/24'])
    (tmp_path / 'www').mkdir()
    (tmp_path / 'www' / 'job').write_text('a job\n')
    if where == 'notrack':
        sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=NOTRACK.encode())
    if where != 'behind-dnat':
        lab.start(lab.server, sys.executable, '-m', 'http.server', '80', '--bind', SERVER, '--protocol', 'HTTP/1.1',
                  '--directory', tmp_path / 'www')
    else:
        backend = lab.client('b', [BACKEND_GATEWAY + '/24'], [BACKEND + '/24'])
        sh('ip', '-n', backend, 'route', 'add', 'default', 'via', BACKEND_GATEWAY)
        sh('ip', 'netns', 'exec', lab.server, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1')
        sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=DNAT.encode())
        lab.start(backend, sys.executable, '-m', 'http.server', '8080', '--bind', BACKEND, '--protocol', 'HTTP/1.1',
                  '--directory', tmp_path / 'www')
    url = 'http://%s/job' % SERVER
    from enforcement import wait_for
    wait_for(lambda: served(client, url) == 200)
    files.base.mkdir(parents=True, exist_ok=True)
    options = files.options() + ['--enforcement', 'nftables', '--server-ip', SERVER, '--throttle-list', tmp_path / 'throttle.txt',
                                 '--answer-dir', tmp_path / 'answers', '--throttle-rate', '1r/m', '--throttle-burst', '2']
    got = detector(lab.server, options + ['--throttle', CLIENT])
    assert got.returncode == 0, got.stderr
    assert b'table inet bot_detector_answers' in sh('ip', 'netns', 'exec', lab.server, 'nft', 'list', 'ruleset').stdout
    # one keep-alive connection: every request served (the escape)
    many = sh('ip', 'netns', 'exec', client, 'curl', '-s', '-w', '%{http_code} %{num_connects}\n',
              '--connect-timeout', '2', '-m', '20', *(['-o', '/dev/null', url] * 20)).stdout.split(b'\n')
    assert [line.split()[0] for line in many if line] == [b'200'] * 20
    assert sum(int(line.split()[1]) for line in many if line) == 1        # one connection opened
    # a connection per request: past the burst, new connections are dropped
    statuses = [served(client, url) for dummy in range(8)]
    assert statuses.count(None) >= 5, statuses
    # unblock: the throttle ends at once
    got = detector(lab.server, options + ['--unblock', CLIENT])
    assert got.returncode == 0, got.stderr
    assert served(client, url) == 200
