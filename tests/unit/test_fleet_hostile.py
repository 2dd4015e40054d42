"""A compromised host in the fleet (issue 43 §2-4, the Proof's hostile-host test): with the
fleet's ACL user exactly as the guide and the store role grant it (decision/fleet_store.ACL_RULES,
key pattern ``~{bot-detector:*``), it writes with every command that user has, on every key of
the fleet, not only through the product's script (its own script loaded too): junk crossings,
other spellings of the hosts' server addresses, allow-listed addresses and trusted proxies,
loopback, networks wider than the hosts' prefixes, values of a MiB, thousands of entries and
keys, junk in the sums, the epochs and the other hosts' hashes. Real redis-server (one server
and a 3-master cluster), real runs and a real follower; the oracle of what a host may append is
the test's own (Python's ipaddress), not the product's code. No host appends an entry its own
rules would refuse, and the host's own scraper is blocked as without a store."""
import ipaddress
import json

import pytest

import fleetstore
import loggen
from conftest import Files, in_timezone, run_core
from test_follow import Following, lines, wait_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

NOW = 1795258200            # 2026-11-21 10:50:00 UTC: the windows 09 and 10
PASSWORD = 'Fl33t-Hostile-Passw0rd'
SERVERS = ['10.9.9.9', '2001:db8::5']
ALLOWED = ['198.51.100.7', '2001:DB8:0::77']        # spelled otherwise than the crossings below
PROXY = '192.0.2.10'
SCRAPER = '203.0.113.7'         # the host's own scraper: 1500 requests in the previous hour
NEVER = [ipaddress.ip_network(n) for n in SERVERS + ALLOWED + [PROXY, '127.0.0.0/8', '::1']]

# What the hostile host pushes as crossings, each "address sum".
JUNK = (['x00 999999999'] * 25
        + ['2001:DB8::5 5000', '2001:db8:0::5 5000', '::ffff:a09:909 5000', '::ffff:10.9.9.9 5000', '10.9.9.9 5000',
           '2001:DB8::77 5000', '2001:db8::77 5000', '::ffff:c633:6407 5000', '198.51.100.7 5000',
           '127.0.0.1 5000', '127.8.9.1 5000', '::1 5000', '192.0.2.10 5000', '::ffff:192.0.2.10 5000', '192.0.2.10/32 5000',
           '2000::/3 5000', '64.0.0.0/2 5000', '10.0.0.0/8 5000', '10.9.9.0/24 5000', '0.0.0.0/0 5000', ':: 5000',
           '010.1.1.1 5000', '203.0.113.250 999', '203.0.113.251 -5000', '203.0.113.252 1e9', '203.0.113.253 ' + '9' * 40,
           ' 5000', '5000', '', 'A' * (1 << 20) + ' 5000'])
# With ipv4_prefix 24 and ipv6_prefix 64: canonical addresses whose network holds a server address.
NEAR_SERVERS = ['10.9.9.7 5000', '2001:db8::1234 5000', '198.51.100.200 5000', '192.0.2.99 5000']
PLAUSIBLE = '203.0.113.99 5000'     # canonical, nothing the host spares: the trust boundary lets it through


def acl_user(node):
    node.cli('ACL', 'SETUSER', 'bd', 'on', '>' + PASSWORD, '~{bot-detector:*', *fleet_store.ACL_RULES)


def hostile_client(redis, target):
    """A client of the fleet's ACL user: what a compromised host holds."""
    if isinstance(target, fleetstore.Cluster):
        from redis.cluster import RedisCluster
        return RedisCluster(host='127.0.0.1', port=target.nodes[0].port, username='bd', password=PASSWORD)
    return redis.Redis(host='127.0.0.1', port=target.port, username='bd', password=PASSWORD)


# A script of the hostile host's own (SCRIPT LOAD and EVALSHA are granted): thousands of entries
# and keys in one call, with the commands the ACL grants.
FLOOD = """
for i = 1, tonumber(ARGV[1]) do
  redis.call('RPUSH', KEYS[1], '203.0.' .. (i % 256) .. '.' .. (i % 250) .. 'x ' .. 5000 + i)
  redis.call('HSET', KEYS[2], 'junk-' .. i, 'not a number')
  redis.call('HINCRBY', KEYS[3], '198.51.100.' .. (i % 256), 100000)
end
return 1
"""


def window_keys(client, window):
    """(epoch, another host's hash, sums, crossings) of ``window`` as the product lays them out:
    what a compromised host, running the same code, knows."""
    epoch = fleet_store.window_keys('bot-detector', window.start, 'web2')[0]
    token = (client.get(epoch) or b'').decode()
    dummy, other, sums, crossed, names = fleet_store.window_keys('bot-detector', window.start, 'web2', token, 'writer')
    return epoch, other, sums, crossed


def crossed_key(server, window):
    """The window's crossings list under the token the store holds now (admin's redis-cli)."""
    epoch = fleet_store.window_keys('bot-detector', window.start, 'web1')[0]
    token = server.cli('GET', epoch).strip()
    return fleet_store.window_keys('bot-detector', window.start, 'web1', token, 'w')[3]


def attack(target, windows, extra=()):
    """Everything the ACL lets a host do to the fleet's keys of ``windows``."""
    redis = fleet_store.import_redis()
    client = hostile_client(redis, target)
    try:
        with pytest.raises(redis.exceptions.ResponseError):
            client.execute_command('FLUSHALL')      # what it may not do: the user is the guide's
        for window in windows:
            client.set(window_keys(client, window)[0], 'f00d' * 6, ex=7200)     # a token of its own, well formed: the hosts follow it
            epoch, other, sums, crossed = window_keys(client, window)
            sha = client.script_load(FLOOD)
            client.evalsha(sha, 3, crossed, other, sums, 3000)
            for item in JUNK + list(extra):
                client.rpush(crossed, item)
            client.hset(sums, SCRAPER, -99999999)           # the host's own scraper's sum lowered
            client.hset(sums, 'A' * (1 << 20), 1)
            client.hset(other, mapping={'x00': 'junk', SCRAPER: '-5'})
            client.expire(epoch, 7200)
            for i in range(200):                                    # many keys under the fleet's pattern
                client.set(epoch[:-len('epoch')] + 'junk:%d' % i, 'B' * 4096, ex=7200)
    finally:
        client.close()


def windows_of(now=NOW):
    return in_timezone('UTC', lambda: hour_windows(now))


def may_append(entry, prefixes):
    """The test's oracle: whether a host with these prefixes could append ``entry`` on its own
    log's counts: a canonical address or a network of exactly the host's prefix, nothing never
    blocked in it."""
    try:
        network = ipaddress.ip_network(entry)
    except ValueError:
        return False
    length = prefixes.get(network.version) or network.max_prefixlen
    canonical = str(network.network_address) if network.prefixlen == network.max_prefixlen else str(network)
    if canonical != entry or network.prefixlen != length or (network.version == 6 and network.network_address.ipv4_mapped):
        return False
    return not any(never.version == network.version and never.overlaps(network) for never in NEVER)


def host_args(files, base, url, name, precise):
    password = base / 'password'
    password.write_text(PASSWORD + '\n')
    args = files.options() + ['--threshold', '1000', '--fleet-store', url, '--fleet-store-password-file', password,
                              '--fleet-host', name, '--trusted-proxy', PROXY]
    for server in SERVERS:
        args += ['--server-ip', server]
    if precise:
        args += ['--rules', 'precise', '--ipv4-prefix', '24', '--ipv6-prefix', '64']
    files.exclusions.write_text(''.join(a + '\n' for a in ALLOWED))
    return args


def run_host(base, url, name, precise, previous):
    files = Files(base / name)
    log = base / name / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW, previous=previous)))
    got = run_core(host_args(files, base / name, url, name, precise) + ['--now', '@%d' % NOW, '--json', log])
    assert got.returncode == 0, got
    return json.loads(got.stdout), files


def appended(files):
    return (files.read('blocklist') or b'').decode().split()


@pytest.fixture(params=[(kind, binary) for binary in fleetstore.SERVERS for kind in ('server', 'cluster')],
                ids=lambda param: '%s-%s' % param)
def store(request, tmp_path):
    kind, binary = request.param
    if kind == 'cluster':
        target = fleetstore.Cluster(tmp_path / 'cluster', binary).start()
        nodes = target.nodes
    else:
        target = fleetstore.StoreServer(tmp_path / 'server', binary).start()
        nodes = [target]
    try:
        for node in nodes:
            acl_user(node)
            node.cli('CONFIG', 'SET', 'proto-max-bulk-len', str(8 << 20))
        url = 'redis://bd@127.0.0.1:%d/0?cluster=%s' % (nodes[0].port, 'yes' if kind == 'cluster' else 'no')
        yield target, url
    finally:
        target.kill()


@pytest.mark.parametrize('precise', [False, True], ids=['spec', 'precise'])
def test_a_hostile_host_gets_nothing_appended_a_host_would_refuse_and_displaces_no_local_block(tmp_path, store, precise):
    target, url = store
    prefixes = {4: 24, 6: 64} if precise else {}
    # An honest host first, then the attack, then hosts with their own scraper and one without.
    run_host(tmp_path, url, 'web0', precise, {'203.0.113.60': 400})
    attack(target, windows_of(), NEAR_SERVERS + [PLAUSIBLE])
    doc, files = run_host(tmp_path, url, 'web1', precise, {SCRAPER: 1500, '203.0.113.61': 10})
    scraper = SCRAPER if not precise else '203.0.113.0/24'
    assert scraper in appended(files), (doc, appended(files))
    refused = [entry for entry in appended(files) if not may_append(entry, prefixes)]
    assert refused == [], refused
    assert [b for b in doc['blocked'] if b['address'] == scraper][0]['count'] == 1500 + (10 if precise else 0)
    doc, quiet = run_host(tmp_path, url, 'web2', precise, {'203.0.113.62': 10})
    assert [entry for entry in appended(quiet) if not may_append(entry, prefixes)] == []
    assert (PLAUSIBLE.split()[0] if not precise else '203.0.113.0/24') in appended(quiet)      # the trust boundary: said in the guide
    assert len(appended(quiet)) <= 2 * 20       # at most top a window from the fleet


def test_a_followers_local_block_is_neither_displaced_nor_delayed_by_a_hostile_host(tmp_path):
    server = fleetstore.StoreServer(tmp_path / 'server').start()
    try:
        acl_user(server)
        server.cli('CONFIG', 'SET', 'proto-max-bulk-len', str(8 << 20))
        url = 'redis://bd@127.0.0.1:%d/0?cluster=no' % server.port
        files = Files(tmp_path / 'web1')
        log = tmp_path / 'web1' / 'access.log'
        log.write_bytes(b'')
        follower = Following(tmp_path / 'web1', files, log, extra=host_args(files, tmp_path / 'web1', url, 'web1', False)[6:])
        follower.start()
        attack(server, windows_of(follower.now), [PLAUSIBLE])
        wait_for(lambda: PLAUSIBLE.split()[0] in appended(files), 10, 'the follower reading the crossings')
        with open(str(log), 'ab') as out:
            out.write(lines(SCRAPER, 1500))
        wait_for(lambda: SCRAPER in appended(files), 5, 'the local scraper blocked')
        refused = [entry for entry in appended(files) if not may_append(entry, {})]
        assert refused == [], refused
        # What it holds follows the store: emptied (the ACL cannot; an administrator can), the
        # follower keeps nothing of it, and a crossing pushed again is decided again.
        server.cli('FLUSHALL')
        with open(str(files.blocklist), 'w'):
            pass
        wait_for(lambda: all(server.cli('GET', fleet_store.window_keys('bot-detector', w.start, 'web1')[0]).strip()
                             for w in windows_of(follower.now)), 10, 'a new epoch')
        client = hostile_client(fleet_store.import_redis(), server)
        for window in windows_of(follower.now):
            client.rpush(window_keys(client, window)[3], PLAUSIBLE)
        client.close()
        wait_for(lambda: PLAUSIBLE.split()[0] in appended(files), 10, 'the crossing decided again')
    finally:
        follower.stop() if 'follower' in locals() else None
        server.kill()


def test_what_a_host_holds_follows_the_store_and_each_read_is_bounded(tmp_path):
    """The product's Fleet thread against a real server: the crossings held go with the store's
    window (FLUSHALL: a new token), a list replaced shorter is read again from its start, and a
    push reads at most READ_PER_PUSH entries however many there are."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        settings = Settings(fleet_store=server.url + '?cluster=no', fleet_host='web1', threshold=1000,
                            server_ips=SERVERS, exclusions_file=str(tmp_path / 'allow'))
        fleet = Fleet(settings, warn=lambda line: None)
        window = windows_of()[0]
        stamp = window.stamp
        fleet.windows, fleet.starts = [(stamp, 9000)], {stamp: window.start}
        assert fleet.push_once() is True
        key = crossed_key(server, window)
        for i in range(3 * 200 + 10):
            server.cli('RPUSH', key, '203.0.113.%d %d' % (i % 250 + 1, 5000 + i))
        assert fleet.push_once() is True
        held = fleet.take_crossed()[0][stamp]      # one push: the newest 200 entries, the flood before them skipped
        assert held == dict((('203.0.113.%d' % (i % 250 + 1)).encode(), 5000 + i) for i in range(410, 610))
        server.cli('RPUSH', key, '198.51.100.2 1100')
        fleet.push_once()
        assert fleet.take_crossed()[0][stamp][b'198.51.100.2'] == 1100       # then on from its place
        server.cli('FLUSHALL')
        assert fleet.push_once() is True and fleet.push_once() is True
        assert fleet.take_crossed()[0].get(stamp, {}) == {}     # the store was emptied: nothing held
        server.cli('RPUSH', crossed_key(server, window), '198.51.100.1 1200')
        fleet.push_once()
        assert fleet.take_crossed()[0][stamp] == {b'198.51.100.1': 1200}
        for i in range(5):
            server.cli('RPUSH', crossed_key(server, window), '198.51.100.%d 1300' % (10 + i))
        fleet.push_once()
        server.cli('DEL', crossed_key(server, window))      # the list replaced by a shorter one, the epoch kept
        server.cli('RPUSH', crossed_key(server, window), '198.51.100.3 1400')
        fleet.push_once()       # lost data found: a new token
        fleet.push_once()
        server.cli('RPUSH', crossed_key(server, window), '198.51.100.3 1400')
        fleet.push_once()
        assert fleet.take_crossed()[0][stamp] == {b'198.51.100.3': 1400}
        fleet.store.close()
    finally:
        server.kill()


def spellings(address):
    """Other spellings of ``address`` (the test's own, with ipaddress): upper case, every zero
    compression, leading zeros, the IPv4-mapped forms of an IPv4 address, a /32 or /128."""
    parsed = ipaddress.ip_address(address)
    found = {address, address.upper(), parsed.exploded, parsed.exploded.upper(), address + '/%d' % parsed.max_prefixlen}
    if parsed.version == 4:
        mapped = ipaddress.IPv6Address('::ffff:' + address)
        found |= {'::ffff:' + address, '::FFFF:' + address, str(mapped), mapped.exploded, '0:0:0:0:0:ffff:' + address}
    else:
        groups = parsed.exploded.split(':')
        found |= {':'.join(g.lstrip('0') or '0' for g in groups), ':'.join(groups)}
        for i in range(8):      # one group of zeros written out, the rest compressed where they can be
            found.add(str(parsed).replace('::', ':' + ':'.join(['0'] * (i + 1)) + ':', 1) if '::' in str(parsed) else str(parsed))
    return sorted(s for s in found if s)


@pytest.mark.parametrize('precise', [False, True], ids=['spec', 'precise'])
def test_no_spelling_of_what_is_never_blocked_is_taken_from_the_fleet(tmp_path, precise):
    """The reading side alone (decision/fleet_answers.py), against the test's own oracle: of every
    spelling of the server addresses, loopback, the allow-list's and the proxy's addresses, none
    is a record; of the canonical spellings of other addresses, each is, keyed by the host's prefix."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.fleet_answers import (
        FleetAnswers, crossing)
    allow = tmp_path / 'allow'
    allow.write_text(''.join(a + '\n' for a in ALLOWED))
    values = dict(server_ips=SERVERS, exclusions_file=str(allow), trusted_proxies=[PROXY], threshold=1000)
    if precise:
        values.update(rules='precise', ipv4_prefix=24, ipv6_prefix=64)
    answers = FleetAnswers(Settings(**values))
    never = ['10.9.9.9', '2001:db8::5', '198.51.100.7', '2001:db8::77', '192.0.2.10', '127.0.0.1', '127.3.2.1', '::1']
    for address in never:
        for spelled in spellings(address):
            item = ('%s 5000' % spelled).encode()
            entry = crossing(item, 1000)
            records = answers.records({'s': {entry[0]: entry[1]}} if entry else {}, 1000)
            assert records == {}, (spelled, records)
    others = ['203.0.113.9', '2001:db9::1', '8.8.4.4', '2a00:1450::200e']
    for address in others:
        for spelled in spellings(address):
            entry = crossing(('%s 5000' % spelled).encode(), 1000)
            if spelled != address:
                assert entry is None, spelled       # another spelling: junk
                continue
            network = ipaddress.ip_network('%s/%d' % (address, (24 if ':' not in address else 64) if precise else
                                                      (32 if ':' not in address else 128)), strict=False)
            key = str(network) if precise else address
            assert answers.records({'s': {entry[0]: entry[1]}}, 1000) == {'s': [(5000, key.encode())]}


def test_a_follower_decides_every_crossing_held_top_at_a_time(tmp_path):
    """More crossings than ``top`` at once: each decision takes ``top`` of them (its cost as
    without a store), and the follower is told to decide again until none is left."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading.tally import WindowCounts
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        settings = Settings(fleet_store=server.url + '?cluster=no', fleet_host='web1', threshold=1000, top=20,
                            server_ips=SERVERS, exclusions_file=str(tmp_path / 'allow'))
        fleet = Fleet(settings, warn=lambda line: None)
        windows = in_timezone('UTC', lambda: hour_windows(NOW))
        stamp = windows[0].stamp
        fleet.windows, fleet.starts = [(stamp, 9000)], {stamp: windows[0].start}
        fleet.push_once()
        for i in range(45):
            server.cli('RPUSH', crossed_key(server, windows[0]), '203.0.113.%d %d' % (i + 1, 2000 + i))
        fleet.push_once()
        decided = []
        for dummy in range(3):
            assert fleet.tick({}, windows, 0) is True       # crossings not decided yet: decide
            laid = fleet.overlay(WindowCounts(windows))
            decided.append([key for dummy, key in laid.fleet_records[stamp]])
        assert [len(keys) for keys in decided] == [20, 20, 5]
        assert len(set(sum(decided, []))) == 45 and decided[0][0] == b'203.0.113.45'      # the largest sums first
        assert fleet.tick({}, windows, 0) is False
        fleet.store.close()
    finally:
        server.kill()


@pytest.mark.parametrize('token', ['T' * (1 << 20), 'a token of its own', 'ab' * 12 + '\n', ''],
                         ids=['a-MiB', 'not-hex', 'hex-and-newline', 'empty'])
def test_an_epoch_token_a_host_wrote_is_never_taken_into_the_hosts_keys_or_replies(tmp_path, token):
    """The epoch is a plain key the ACL lets a host SET: a token the script could not have drawn
    (a MiB, not 24 hex digits) would be every host's key names and every reply's bytes from then
    on (a MiB read and three written per push, twice a second). The script draws its own instead;
    the sums go on exactly."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        acl_user(server)
        server.cli('CONFIG', 'SET', 'proto-max-bulk-len', str(8 << 20))
        settings = Settings(fleet_store='redis://bd@127.0.0.1:%d/0?cluster=no' % server.port, fleet_host='web1',
                            threshold=1000, fleet_store_password_file=str(tmp_path / 'password'))
        (tmp_path / 'password').write_text(PASSWORD + '\n')
        (tmp_path / 'password').chmod(0o600)
        store = fleet_store.Store(settings)
        start = windows_of()[0].start
        assert store.push(start, 7200, [(b'203.0.113.5', 600)], True, 1000)[0] is True
        client = hostile_client(fleet_store.import_redis(), server)
        client.set(fleet_store.window_keys('bot-detector', start, 'web2')[0], token, ex=7200)
        client.close()
        for dummy in range(2):
            store.push(start, 7200, [(b'203.0.113.5', 700)], True, 1000)
        held = store.tokens[start]
        assert len(held) == 24 and all(c in '0123456789abcdef' for c in held), (len(held), held[:40])
        epoch = server.cli('GET', fleet_store.window_keys('bot-detector', start, 'web1')[0]).strip()
        assert epoch == held
        sums = fleet_store.window_keys('bot-detector', start, 'web1', held, 'w')[2]
        assert server.cli('HGET', sums, '203.0.113.5').strip() == '700'
        store.close()
    finally:
        server.kill()
