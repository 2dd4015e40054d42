"""nginx enforcement never refuses the server, loopback or the allow-list (issue 38, item 1):
whatever the blocklist says, the geo file maps them to 0 inside the blocked networks (geo takes
the longest prefix), and leaves out a blocked line wholly exempt. Real nginx in a network
namespace of the test's, real requests with curl from the namespace's own addresses; and the
geo file's meaning (longest prefix over its lines) against sets of addresses, for random lists."""
import ipaddress
import os
import signal
import subprocess
import time

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import ROOT
from enforcement import Lab, detector, nginx_conf, reloaded, require_tools, served, sh, wait_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import never_blocked
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nginx, sync

SNIPPET = ROOT / 'roles' / 'bot_detector' / 'files' / 'bot-detector-block.conf'
SERVER_BLOCK = '''        listen 8080;
        listen [::]:8080;
        listen [::]:8081 ipv6only=off;
        include {snippet};
        location / {{ return 200; }}'''.format(snippet=SNIPPET)
SERVER = ['192.0.2.1', '2001:db8::1']
# On the namespace's loopback: each a client of its own (curl --interface).
ADDRESSES = ['192.0.2.1', '192.0.2.20', '192.0.2.21', '192.0.2.30', '198.51.100.5', '198.51.100.6',
             '2001:db8::1', '2001:db8::20', '2001:db8::30']
BLOCKLIST = b'127.0.0.0/8\n192.0.2.0/24\n192.0.2.21\n198.51.100.0/24\n2001:db8::/48\n::1\n::/64\n'
# The same networks as a hostile list may spell them: IPv4-mapped networks, host bits set, the
# server's own address as a network, loopback in three spellings.
SPELLED = (b'::ffff:127.0.0.0/104\n::FFFF:192.0.2.1/120\n0:0:0:0:0:ffff:c000:215\n::ffff:c633:6400/120\n'
           b'2001:db8::1/48\n0:0:0:0:0:0:0:1\n::1/64\n127.0.0.1/8\n::ffff:127.0.0.1\n')
ALLOW = b'192.0.2.16/29\n2001:db8::20\n::ffff:198.51.100.5\nsubstring-only\n'
# (client, server address): the status nginx answers.
EXPECTED = {
    ('127.0.0.1', '127.0.0.1'): 200, ('127.0.0.9', '127.0.0.1'): 200,      # loopback, all of 127.0.0.0/8
    ('192.0.2.1', '192.0.2.1'): 200,                                         # the server
    ('192.0.2.20', '192.0.2.1'): 200, ('192.0.2.21', '192.0.2.1'): 200,     # an allow-listed network
    ('198.51.100.5', '192.0.2.1'): 200,                                      # allow-listed as IPv4-mapped
    ('192.0.2.30', '192.0.2.1'): 403, ('198.51.100.6', '192.0.2.1'): 403,   # the rest of the networks
    ('::1', '::1'): 200, ('2001:db8::1', '2001:db8::1'): 200, ('2001:db8::20', '2001:db8::1'): 200,
    ('2001:db8::30', '2001:db8::1'): 403,
}


@pytest.mark.parametrize('blocklist', [BLOCKLIST, SPELLED], ids=['plain', 'spelled'])
def test_the_server_loopback_and_the_allow_list_get_200_the_rest_of_a_blocked_network_403(tmp_path, blocklist):
    require_tools('ip', 'nginx', 'curl')
    lab = Lab()
    pid = None
    try:
        for address in ADDRESSES:
            sh('ip', '-n', lab.server, 'addr', 'add', address, 'dev', 'lo', *(['nodad'] if ':' in address else []))
        base = tmp_path / 'nginx'
        (base / 'tmp').mkdir(parents=True)
        conf = base / 'nginx.conf'
        conf.write_text(nginx_conf(base, SERVER_BLOCK))
        geo = base / 'blocked.conf'
        geo.write_text('')
        command = 'nginx -p %s -c %s' % (base, conf)
        sh('ip', 'netns', 'exec', lab.server, *command.split())
        pid = int((base / 'nginx.pid').read_text())
        wait_for(lambda: served(lab.server, 'http://127.0.0.1:8080/', '127.0.0.1') == 200)
        (tmp_path / 'blocklist').write_bytes(blocklist)
        (tmp_path / 'allow').write_bytes(ALLOW)
        run = detector(lab.server, [
            '--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'allow', '--activity-log', tmp_path / 'activity',
            '--server-ip', SERVER[0], '--server-ip', SERVER[1], '--enforcement', 'nginx', '--nginx-geo-file', geo,
            '--nginx-test-command', command + ' -t -q', '--nginx-reload-command', command + ' -s reload', '--enforce-now'])
        assert run.returncode == 0, run
        # Wholly exempt lines (127.0.0.0/8, ::1, 192.0.2.21) are left out; the exempt inside the rest map to 0.
        assert geo.read_text().splitlines()[2:] == [
            '192.0.2.0/24 1;', '198.51.100.0/24 1;', '::/64 1;', '2001:db8::/48 1;', nginx.EXEMPT.decode().rstrip('\n'),
            '192.0.2.1 0;', '192.0.2.16/29 0;', '198.51.100.5 0;', '::1 0;', '2001:db8::1 0;', '2001:db8::20 0;']
        wait_for(lambda: served(lab.server, 'http://192.0.2.1:8080/', '192.0.2.30') == 403)
        reloaded(pid)
        got = {(client, server): served(lab.server, 'http://%s:8080/' % ('[%s]' % server if ':' in server else server), client)
               for client, server in EXPECTED}
        assert got == EXPECTED
        # A dual-stack socket: nginx's $remote_addr is ::ffff:192.0.2.x, looked up as IPv4.
        mapped = {client: served(lab.server, 'http://192.0.2.1:8081/', client) for client in ('192.0.2.1', '192.0.2.20', '192.0.2.30')}
        assert mapped == {'192.0.2.1': 200, '192.0.2.20': 200, '192.0.2.30': 403}
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            for dummy in range(50):
                if subprocess.run(['kill', '-0', str(pid)], stderr=subprocess.DEVNULL, check=False).returncode:
                    break
                time.sleep(0.1)
        lab.close()


class NoServer:
    server_ips = []
    exclusions_file = '/nonexistent/allow'


def geo_value(lines, address):
    """What nginx's geo makes of ``address`` from the geo file's lines: the longest prefix holding it, else 0."""
    best = None
    for line in lines:
        if line.startswith('#'):
            continue
        network, value = line.rstrip(';').split()
        network = ipaddress.ip_network(network)
        if network.version == address.version and address in network and (best is None or network.prefixlen > best[0]):
            best = (network.prefixlen, int(value))
    return 0 if best is None else best[1]


NETWORK = st.tuples(st.integers(0, 255), st.integers(20, 32)).map(
    lambda pair: ipaddress.ip_network('10.0.%d.%d/%d' % (pair[0] // 16, pair[0], pair[1]), strict=False))


@hsettings(max_examples=200, deadline=None)
@given(st.lists(NETWORK, max_size=12), st.lists(NETWORK, max_size=12))
def test_the_geo_file_blocks_exactly_the_blocked_less_the_exempt(blocked, allowed):
    """Random blocked and allow-listed networks (nested, overlapping, equal, wider either way):
    the file's meaning is, for every address at a network's edge, blocked and not exempt."""
    exemptions = never_blocked.NeverBlocked([str(n).encode() for n in allowed])
    entries = sync.parse_entries(b''.join(b'%s\n' % str(n).encode() for n in blocked), exempt=exemptions)
    lines = nginx.render(entries).decode().splitlines()
    probes = set()
    for network in blocked + allowed:
        for edge in (network.network_address, network.broadcast_address):
            probes.update(edge + step for step in (-1, 0, 1) if 0 <= int(edge) + step < 2 ** 32)
    for address in probes:
        expected = any(address in n for n in blocked) and not any(address in n for n in allowed)
        assert geo_value(lines, address) == int(expected), (address, lines)


def test_an_allow_list_that_cannot_be_read_fails_the_sync_and_keeps_the_last_load(tmp_path):
    """Loading without the allow-list could block its clients: exit status 4, naming it; the geo
    file stays what it was. A missing allow-list is an empty one."""
    options = ['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions', tmp_path / 'allow',
               '--server-ip', '192.0.2.1', '--enforcement', 'nginx', '--nginx-geo-file', tmp_path / 'blocked.conf',
               '--nginx-test-command', 'true', '--nginx-reload-command', 'true', '--enforce-now']
    (tmp_path / 'blocklist').write_text('198.51.100.0/24\n')
    first = detector(None, options)
    assert first.returncode == 0, first
    loaded = (tmp_path / 'blocked.conf').read_bytes()
    assert loaded.splitlines()[2:] == [b'198.51.100.0/24 1;']
    (tmp_path / 'allow').mkdir()
    with open(str(tmp_path / 'blocklist'), 'a') as f:
        f.write('203.0.113.7\n')
    failed = detector(None, options)
    assert failed.returncode == 4, failed
    assert failed.stderr.decode().splitlines() == [
        'bot-detector: warning: enforcement (nginx) failed, the blocklist is updated but not in effect there: cannot read %s: '
        'not a regular file: the allow-list is needed to exempt its clients' % (tmp_path / 'allow')]
    assert (tmp_path / 'blocked.conf').read_bytes() == loaded


@pytest.mark.parametrize('proxy', ['10.0.0.2', '10.0.0.2/32', '::ffff:a00:2', '::FFFF:10.0.0.2'])
def test_a_trusted_proxy_listed_is_never_blocked_by_either_backend(tmp_path, proxy):
    """A balancer blocked takes the site down (issue 44, item 3): the trusted proxies are spared
    as the server is, in any spelling, by nginx's geo file and by nftables' accepted set."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import spared
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    (tmp_path / 'blocklist').write_text('10.0.0.2\n10.0.0.0/24\n198.51.100.7\n')
    geo = tmp_path / 'blocked.conf'
    run = detector(None, ['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity',
                          '--exclusions', tmp_path / 'allow', '--server-ip', '192.0.2.1', '--trusted-proxy', proxy,
                          '--enforcement', 'nginx', '--nginx-geo-file', geo, '--nginx-test-command', 'true',
                          '--nginx-reload-command', 'true', '--enforce-now'])
    assert run.returncode == 0, run
    lines = geo.read_text().splitlines()
    address = ipaddress.ip_address
    assert geo_value(lines, address('10.0.0.2')) == 0 and geo_value(lines, address('10.0.0.3')) == 1, lines
    assert geo_value(lines, address('198.51.100.7')) == 1, lines
    elements = spared.spared(Settings(server_ips=['192.0.2.1'], exclusions_file=str(tmp_path / 'allow'), trusted_proxies=[proxy]))
    assert '10.0.0.2' in elements[0]
