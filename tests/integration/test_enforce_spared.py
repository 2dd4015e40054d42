"""What nftables never drops, whatever the blocklist says (issue 38, item 1), with real nft, a
real HTTP server and curl in network namespaces the test makes: the server's own addresses,
loopback and the allow-list's addresses and networks are served while the blocklist's
ranges around them are dropped for everyone else, IPv4 and IPv6."""
import json

import pytest

from enforcement import Lab, detector, host_ruleset, require_tools, served, sh, the_table, wait_for

PORT = 8080
SERVER, SERVER_V6 = '192.0.2.1', '2001:db8:1::1'
BLOCKED = ['192.0.2.10', '192.0.2.50', '192.0.2.32']
ALLOWED = ['192.0.2.20', '192.0.2.29', '192.0.2.40']       # an address, inside a network, v4-mapped in the list
BLOCKED_V6, ALLOWED_V6 = ['2001:db8:1::10', '2001:db8:1::24'], ['2001:db8:1::21', '2001:db8:1::23']
BLOCKLIST = b'127.0.0.0/8\n127.0.0.1\n::1\n192.0.2.0/24\n192.0.2.1\n192.0.2.20\n2001:db8:1::/64\n2001:db8:1::21\n'
EXCLUSIONS = b'# the allow-list\n192.0.2.20\n192.0.2.28/30\n::ffff:192.0.2.40\n2001:db8:1::20/126\nnot-an-address\n'


@pytest.fixture
def lab():
    require_tools('ip', 'nft', 'curl')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.clients = lab.client('c', [SERVER + '/24', SERVER_V6 + '/64'],
                                 [a + '/24' for a in BLOCKED + ALLOWED] + [a + '/64' for a in BLOCKED_V6 + ALLOWED_V6])
        lab.start(lab.server, 'python3', '-m', 'http.server', '--bind', '::', str(PORT), '--directory', '/')
        wait_for(lambda: served(lab.clients, url(SERVER)) == 200)
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before


def url(host):
    return 'http://%s:%d/' % ('[%s]' % host if ':' in host else host, PORT)


def options(tmp_path, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER, '--enforcement', 'nftables',
            '--enforcement-port', str(PORT)] + list(extra)


def elements(lab, name):
    out = sh('ip', 'netns', 'exec', lab.server, 'nft', '-j', 'list', 'set', *the_table(lab.server), name).stdout
    found = [item['set'] for item in json.loads(out)['nftables'] if 'set' in item][0].get('elem', [])
    return sorted(e if isinstance(e, str) else '%s/%d' % (e['prefix']['addr'], e['prefix']['len']) for e in found)


def test_the_server_loopback_and_the_allow_list_are_never_dropped(lab, tmp_path):
    (tmp_path / 'blocklist').write_bytes(BLOCKLIST)
    (tmp_path / 'excluded').write_bytes(EXCLUSIONS)
    run = detector(lab.server, options(tmp_path, '--enforce-now'))
    assert run.returncode == 0, run
    assert elements(lab, 'allowed_v4') == ['127.0.0.0/8', '192.0.2.1', '192.0.2.20', '192.0.2.28/30', '192.0.2.40']
    assert elements(lab, 'allowed_v6') == ['2001:db8:1::20/126', '::1']
    # The server reaches itself: its address, loopback (IPv4 and IPv6), from any loopback source.
    for target, source in ((SERVER, None), ('127.0.0.1', None), ('127.0.0.1', '127.0.0.2'), ('::1', None),
                           (SERVER_V6, None)):
        assert served(lab.server, url(target), source=source) == 200, (target, source)
    for address in ALLOWED:
        assert served(lab.clients, url(SERVER), source=address) == 200, address
    for address in ALLOWED_V6:
        assert served(lab.clients, url(SERVER_V6), source=address) == 200, address
    for address in BLOCKED:
        assert served(lab.clients, url(SERVER), source=address) is None, address
    for address in BLOCKED_V6:
        assert served(lab.clients, url(SERVER_V6), source=address) is None, address


def test_a_changed_allow_list_is_loaded_at_the_next_sync(lab, tmp_path):
    """The exceptions are part of what a sync compares: an allow-list line added later spares
    that client at the next sync, though the blocklist did not change."""
    (tmp_path / 'blocklist').write_bytes(b'192.0.2.0/24\n')
    (tmp_path / 'excluded').write_bytes(b'')
    assert detector(lab.server, options(tmp_path, '--enforce-now')).returncode == 0
    assert served(lab.clients, url(SERVER), source=ALLOWED[0]) is None
    (tmp_path / 'excluded').write_bytes(ALLOWED[0].encode() + b'\n')
    idle = detector(lab.server, options(tmp_path, '--unblock', '192.0.2.99'))
    assert idle.returncode == 0, idle
    assert served(lab.clients, url(SERVER), source=ALLOWED[0]) == 200
    assert served(lab.clients, url(SERVER), source=BLOCKED[0]) is None
