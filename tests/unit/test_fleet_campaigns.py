"""The campaign keys summed fleet-wide (issue 45 §6), against a real redis-server (valkey-server
where Debian has it) and the session's 3-master cluster: a network's requests summed across
hosts as addresses are, its distinct addresses a union (the same address seen by two hosts
counted once), an AS's likewise; a follower deciding the fleet's crossing, killed with -9 and
restarted with the store emptied; a hostile host with the fleet's password writing junk,
huge and wrong-typed campaign fields. The expected decisions are written out by hand from
the profile's rules and the hosts' logs."""
import calendar
import hashlib
import json
import signal
import time
from collections import Counter

import pytest

import fleetstore
from conftest import Files, in_timezone, run_core
from test_asn_database import write_tsv
from test_campaigns import NOW, browser, scraper, walking_browser
from test_follow import Following, wait_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import messages
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.campaigns import CampaignRules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

START = calendar.timegm((2026, 11, 21, 10, 0, 0))      # NOW's window, the current hour
FOLLOW_NOW = calendar.timegm((2026, 11, 21, 10, 50, 0))
SERVER = '198.51.100.1'
PASSWORD = 'Fl33t-Campaign-Passw0rd'


@pytest.fixture(params=fleetstore.SERVERS + ['cluster'])
def store(request, tmp_path):
    """(url, fleet name, cli): a server of this test's own, or the session's cluster under a
    fleet name of this test's own."""
    name = 'fc-%s' % hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]      # each case its own keys
    yield from fleetstore.store_under(request, tmp_path, name)


def host_run(base, store, host, text, *extra):
    """One run (cron) of ``host`` with the profile and the store, its own files and lists."""
    url, name, dummy = store
    files = Files(base / host)
    log = base / host / 'access.log'
    log.write_text(text)
    got = run_core(files.options() + ['--server-ip', SERVER, '--now', NOW, '--campaigns', '--json', '--fleet-store', url,
                                      '--fleet-host', host, '--fleet-name', name, '--challenge-list', base / host / 'challenge.txt',
                                      '--answer-dir', base / host / 'answers'] + list(extra) + [log])
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout), files


def challenged(result):
    return sorted((entry['address'], entry['count'], entry['reason']) for entry in result['challenged'])


def campaign_fields(cli, name, start=START):
    """{field: value} of the campaign sums of the window under the token the store names now."""
    tag = '{%s:v2c:%d}' % (name, start)
    token = cli('get', tag + ':epoch').strip()
    raw = cli('hgetall', '%s:%s:sum' % (tag, token)).split('\n')
    return dict((key, value) for key, value in zip(raw[::2], raw[1::2]) if key and not key.startswith(' '))


def rotating(prefix, numbers, each):
    return ''.join(scraper(prefix % i, each) for i in numbers)


@pytest.mark.parametrize('short', [False, True])
def test_a_networks_requests_are_summed_across_hosts_to_a_threshold_no_host_reaches(tmp_path, store, short):
    """100 + 70 + 30 requests of 12 addresses of 203.0.113.0/24 on three hosts: 200, the
    network's threshold (none alone reaches it, nor 16 addresses); one request fewer: 199."""
    url, name, cli = store
    third = rotating('203.0.113.%d', (11, 12), 15)
    if short:
        third = third[:third.rindex('\n', 0, len(third) - 1) + 1]
    first, dummy = host_run(tmp_path, store, 'web0', rotating('203.0.113.%d', range(1, 6), 20))
    second, dummy = host_run(tmp_path, store, 'web1', rotating('203.0.113.%d', range(6, 11), 14))
    last, files = host_run(tmp_path, store, 'web2', third)
    assert challenged(first) == challenged(second) == []
    total = 199 if short else 200
    assert campaign_fields(cli, name)['n 203.0.113.0/24'] == str(total)
    assert campaign_fields(cli, name)['d n 203.0.113.0/24'] == '12'
    expected = [] if short else [('203.0.113.0/24', 200, 'network 203.0.113.0/24, 12 addresses fleet-wide')]
    assert challenged(last) == expected
    again, dummy = host_run(tmp_path, store, 'web0', rotating('203.0.113.%d', range(1, 6), 20))      # the same writer again
    assert challenged(again) == expected and campaign_fields(cli, name)['n 203.0.113.0/24'] == str(total)
    assert last['blocked'] == again['blocked'] == [] and files.read('blocklist') is None


def test_the_fleets_sums_alone_never_block_a_network_whatever_answer_network_says(tmp_path, store):
    """answer_network block: a network over the thresholds in this host's own counts is blocked,
    one over them only in the fleet's sums (what any host with the password can write) is
    challenged: its own log vouches for nothing."""
    host_run(tmp_path, store, 'web0', rotating('203.0.113.%d', range(1, 6), 20), '--answer-network', 'block')
    host_run(tmp_path, store, 'web1', rotating('203.0.113.%d', range(6, 11), 14), '--answer-network', 'block')
    last, files = host_run(tmp_path, store, 'web2', rotating('203.0.113.%d', (11, 12), 15), '--answer-network', 'block')
    assert challenged(last) == [('203.0.113.0/24', 200, 'network 203.0.113.0/24, 12 addresses fleet-wide')]
    assert last['blocked'] == [] and files.read('blocklist') is None
    own, files = host_run(tmp_path / 'own', store, 'web3', rotating('192.0.2.%d', range(1, 17), 13), '--answer-network', 'block')
    assert [entry['address'] for entry in own['blocked']] == ['192.0.2.0/24'], own
    assert files.read('blocklist') == b'192.0.2.0/24\n'


def test_the_fleets_sum_of_an_address_that_behaves_as_a_browser_here_is_answered_as_the_hosts_own_count(tmp_path, store):
    """A NAT address of people on two hosts, under the threshold (20 here) on each and over it
    summed: a host that sees its browser behaviour spares it, as a shared address under
    campaign_shared_threshold of its own; a scraper summed so is the fleet's block. (A hostile
    host's pushes get an address of people blocked nowhere it behaves as a browser.)"""
    text = browser('192.0.2.50', 12) + scraper('192.0.2.60', 12)
    host_run(tmp_path, store, 'web0', text, '--threshold', '20')
    for host in ('web1', 'web0'):       # the crossing's host, then the other at its next run
        result, files = host_run(tmp_path / host, store, host, text, '--threshold', '20')
        assert [(entry['address'], entry['count']) for entry in result['blocked']] == [('192.0.2.60', 24)], result
        assert any(line.startswith('IP address 192.0.2.50 behaves as a browser and will not be blocked (24 requests')
                   for line in result['messages']), result['messages']
        assert files.read('blocklist') == b'192.0.2.60\n'


@pytest.mark.parametrize('third,union', [((15, 16), 16), ((15,), 15)])
def test_distinct_addresses_are_a_union_across_hosts_not_a_sum(tmp_path, store, third, union):
    """203.0.113.1-10 on one host, .5-.14 on another (one request each): 14 addresses, not 20;
    a third host's .15 and .16 make 16, the network's distinct-address threshold; .15 alone 15,
    though the hosts' own distinct counts add up to 21."""
    url, name, cli = store
    host_run(tmp_path, store, 'web0', rotating('203.0.113.%d', range(1, 11), 1))
    second, dummy = host_run(tmp_path, store, 'web1', rotating('203.0.113.%d', range(5, 15), 1))
    assert challenged(second) == [] and campaign_fields(cli, name)['d n 203.0.113.0/24'] == '14'
    last, dummy = host_run(tmp_path, store, 'web2', rotating('203.0.113.%d', third, 1))
    assert campaign_fields(cli, name)['d n 203.0.113.0/24'] == str(union)
    assert campaign_fields(cli, name)['n 203.0.113.0/24'] == str(20 + len(third))
    expected = [('203.0.113.0/24', 22, 'network 203.0.113.0/24, 16 addresses fleet-wide')] if union == 16 else []
    assert challenged(last) == expected


@pytest.mark.parametrize('spread,expected', [
    (False, [('2001:db8:1:2::/64', 16, 'network 2001:db8:1:2::/64, 16 addresses fleet-wide')]),
    (True, [('2001:db8:1::/48', 16, 'network 2001:db8:1::/48, 16 addresses fleet-wide')]),
])
def test_ipv6_networks_are_summed_fleet_wide_the_narrower_first(tmp_path, store, spread, expected):
    """16 addresses of one /64 over two hosts: the /64 is challenged, not its /48 (a host's own
    wider network is judged on what the narrower decided leave); 16 addresses in 16 /64s of one
    /48: the /48."""
    def address(i):
        return '2001:db8:1:%x::%x' % ((i, 1) if spread else (2, i))
    host_run(tmp_path, store, 'web0', ''.join(scraper(address(i), 1) for i in range(1, 9)))
    last, files = host_run(tmp_path, store, 'web1', ''.join(scraper(address(i), 1) for i in range(9, 17)))
    assert challenged(last) == expected
    assert last['blocked'] == [] and files.read('blocklist') is None


@pytest.mark.parametrize('proxies', [10, 9])
def test_an_as_is_summed_fleet_wide_and_each_host_lists_its_own_ranges_without_seekers(tmp_path, store, proxies):
    """AS65536's addresses without browser behaviour, one request each, 10 on one host and 10
    (or 9) on another: 20 distinct addresses, the AS's threshold (19: nothing). Each host lists
    the range that carried them in its own log, where it saw no job seekers; the seekers' ISP
    (AS64500), as many proxy addresses in it, seekers in its range on both hosts: never its
    range, only the /24s of its proxies that carried no seeker, as a host's own judgement does."""
    database = write_tsv(tmp_path / 'ip2asn.tsv')

    def log(third, count):
        text = ''.join(scraper('10.%d.%d.9' % (third, i), 1) for i in range(count))       # one /24 each: no network
        text += ''.join(scraper('10.%d.%d.9' % (third - 127, i), 1) for i in range(count))      # in the seekers' ISP
        return text + ''.join(browser('10.2.%d.7' % (i + third), 2) for i in range(5))
    first, dummy = host_run(tmp_path, store, 'web0', log(128, 10), '--asn-database', database)
    last, files = host_run(tmp_path, store, 'web1', log(129, proxies), '--asn-database', database)
    again, dummy = host_run(tmp_path, store, 'web0', log(128, 10), '--asn-database', database)
    assert challenged(first) == []
    if proxies == 9:
        assert challenged(last) == challenged(again) == []
        return
    reason = 'AS65536 ELSEWHERE, 20 addresses fleet-wide, 10 in range 10.128.0.0-10.143.255.255 here, no job seekers there'

    def isp(third):
        return [('10.%d.%d.0/24' % (third, i), 1, 'AS64500 RESIDENTIAL-ISP, 20 addresses fleet-wide, 1 in network 10.%d.%d.0/24 '
                 'here, no job seekers there, though range 10.0.0.0-10.31.255.255 carries some' % (third, i)) for i in range(10)]
    assert challenged(last) == sorted([('10.128.0.0/12', 10, reason)] + isp(2))     # web1: proxies 10.2.0-9.9, seekers 10.2.129-133.7
    assert challenged(again) == sorted([('10.128.0.0/12', 10, reason)] + isp(1))
    assert last['blocked'] == [] and files.read('blocklist') is None


def test_an_as_crossing_lists_nothing_inside_a_network_the_host_decided(tmp_path, store):
    """AS64511 (a /48 of IPv6) crosses fleet-wide with 26 addresses; the second host's 16 are in
    one /48, which its own network rule decides, and a job seeker there makes the AS's range a
    seekers' one: its /64s without seekers are inside that /48, so not listed again (one entry,
    and an --unblock of the /48 leaves none of them behind)."""
    database = write_tsv(tmp_path / 'ip2asn.tsv')
    first, dummy = host_run(tmp_path, store, 'web0', ''.join(scraper('2001:db8:ffff:%x::9' % i, 1) for i in range(1, 11)),
                            '--asn-database', database)
    text = ''.join(scraper('2001:db8:ffff:%x::9' % i, 1) for i in range(0x10, 0x20)) + browser('2001:db8:ffff:ff::7', 2)
    last, dummy = host_run(tmp_path, store, 'web1', text, '--asn-database', database)
    assert challenged(first) == []
    assert [entry[0] for entry in challenged(last)] == ['2001:db8:ffff::/48']


def test_a_walker_is_campaign_traffic_for_the_fleet_as_for_the_host(tmp_path, store):
    """A harvester faking a browser but walking job ids (walk_ids 4) counts as the host's own
    verdicts count it, with the campaign: in the fleet's sums and in the networks an AS crossing
    lists, the /24 it shares with a scraper included; the real seeker's /24 never."""
    database = write_tsv(tmp_path / 'ip2asn.tsv')
    host_run(tmp_path, store, 'web0', ''.join(scraper('10.1.%d.9' % i, 1) for i in range(9)), '--asn-database', database,
             '--campaign-walk-ids', '4')
    text = ''.join(scraper('10.3.%d.9' % i, 1) for i in range(10)) + walking_browser('10.3.5.7', range(100, 104))
    last, dummy = host_run(tmp_path, store, 'web1', text + browser('10.2.1.7', 2), '--asn-database', database,
                           '--campaign-walk-ids', '4')     # 9 + 10 + the walker: 20 addresses fleet-wide
    assert [entry[0] for entry in challenged(last)] == sorted('10.3.%d.0/24' % i for i in range(10))
    assert [entry[1] for entry in challenged(last)] == [1, 1, 1, 1, 1, 5, 1, 1, 1, 1]


def test_the_campaign_keys_are_exact_under_lost_replies(tmp_path):
    """Every second script call's reply dropped (the connection closed after forwarding it):
    each host's batch is sent again, and the sums are those of the logs, once."""
    server = fleetstore.StoreServer(tmp_path).start()
    proxy = fleetstore.DroppingProxy(server.port, every=2)
    try:
        store = (proxy.url, 'fc-lost', server.cli)
        for host, numbers in (('web0', range(1, 9)), ('web1', range(5, 13)), ('web0', range(1, 9))):
            host_run(tmp_path, store, host, rotating('203.0.113.%d', numbers, 10))
        fields = campaign_fields(server.cli, 'fc-lost')
        assert (fields['n 203.0.113.0/24'], fields['d n 203.0.113.0/24']) == ('160', '12')
    finally:
        proxy.close()
        server.kill()


def follower(tmp_path, url, files, log, *extra):
    return Following(tmp_path / 'follower', files, log, now=FOLLOW_NOW, extra=[
        '--campaigns', '--fleet-store', url, '--fleet-host', 'web-f', '--fleet-name', 'fc-follow',
        '--challenge-list', tmp_path / 'follower' / 'challenge.txt', '--answer-dir', tmp_path / 'follower' / 'answers'] + list(extra))


def test_a_follower_decides_the_fleets_crossing_and_after_kill_9_and_an_emptied_store_the_sums_are_exact(tmp_path):
    """A follower holds 100 requests of 203.0.113.1-5; a cron run of another host 100 of
    .6-.10: 200 fleet-wide, challenged on the follower too. The follower killed with -9 and the
    store restarted empty: the restarted follower sends its keys again (100, not 0 or 200), the
    other host's next run its own: 200 again, decided on both."""
    server = fleetstore.StoreServer(tmp_path).start()
    store = (server.url, 'fc-follow', server.cli)
    files = Files(tmp_path / 'follower' / 'files')
    log = tmp_path / 'follower' / 'access.log'
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(rotating('203.0.113.%d', range(1, 6), 20))
    listed = tmp_path / 'follower' / 'challenge.txt'
    try:
        with follower(tmp_path, server.url, files, log) as first:
            wait_for(lambda: campaign_fields(server.cli, 'fc-follow').get('n 203.0.113.0/24') == '100', 15, 'the push')
            other, dummy = host_run(tmp_path, store, 'web-c', rotating('203.0.113.%d', range(6, 11), 20))
            assert challenged(other) == [('203.0.113.0/24', 200, 'network 203.0.113.0/24, 10 addresses fleet-wide')]
            wait_for(lambda: listed.exists() and b'203.0.113.0/24\n' in listed.read_bytes(), 15, "the fleet's crossing")
            first.stop(signal.SIGKILL)
        server.kill()
        server.start()      # empty
        listed.unlink()
        with follower(tmp_path, server.url, files, log) as second:
            wait_for(lambda: campaign_fields(server.cli, 'fc-follow').get('n 203.0.113.0/24') == '100', 15, 'sent again')
            assert campaign_fields(server.cli, 'fc-follow')['d n 203.0.113.0/24'] == '5'
            other, dummy = host_run(tmp_path, store, 'web-c', rotating('203.0.113.%d', range(6, 11), 20))
            assert campaign_fields(server.cli, 'fc-follow')['n 203.0.113.0/24'] == '200'
            assert challenged(other) == [('203.0.113.0/24', 200, 'network 203.0.113.0/24, 10 addresses fleet-wide')]
            wait_for(lambda: listed.exists() and b'203.0.113.0/24\n' in listed.read_bytes(), 15, "the fleet's crossing again")
            assert second.proc.poll() is None
        assert files.read('blocklist') is None
    finally:
        server.kill()


def test_a_fleet_crossing_of_an_address_that_browses_here_is_judged_whatever_step_takes_it(tmp_path):
    """A NAT address of people here (30 pages, browser behaviour), 100 requests fleet-wide: the
    fleet hands the crossing to one decision step, which judges it (challenged: over the shared
    threshold), even when the last judgement waited for the blocklist's lock (a step between two
    judgements spared it for good)."""
    from test_follow_campaigns import LockHeld
    server = fleetstore.StoreServer(tmp_path).start()
    files = Files(tmp_path / 'follower' / 'files')
    log = tmp_path / 'follower' / 'access.log'
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(browser('192.0.2.40', 30))
    listed = tmp_path / 'follower' / 'challenge.txt'
    try:
        with follower(tmp_path, server.url, files, log, '--campaign-shared-threshold', '60'):
            time.sleep(2.5)     # its first judgement 2 s ago at least: the next step is one
            with LockHeld(files):
                with open(str(log), 'a') as out:
                    out.write(scraper('192.0.2.10', 1, minute=12))
                time.sleep(4)
            time.sleep(0.5)
            tag = '{fc-follow:v2:%d}' % START
            wait_for(lambda: server.cli('get', tag + ':epoch').strip(), 15, "the follower's push")
            server.cli('rpush', '%s:%s:crossed' % (tag, server.cli('get', tag + ':epoch').strip()), '192.0.2.40 100')
            wait_for(lambda: listed.exists() and b'192.0.2.40\n' in listed.read_bytes(), 15, "the fleet's crossing judged")
        assert files.read('blocklist') in (None, b'')
    finally:
        server.kill()


@pytest.fixture(params=['server', 'cluster'])
def guarded(request, tmp_path):
    """(target, url, password file, cli): a redis-server or a 3-master cluster of this test's own
    whose hosts and attacker are the fleet's ACL user exactly as the guide grants it (ACL_RULES)."""
    if request.param == 'cluster':
        target = fleetstore.Cluster(tmp_path / 'cluster').start()
        nodes = target.nodes

        def cli(*args):
            return target.nodes[0].cli('-c', *args)
    else:
        target = fleetstore.StoreServer(tmp_path / 'server').start()
        nodes, cli = [target], target.cli
    try:
        for node in nodes:
            node.cli('ACL', 'SETUSER', 'bd', 'on', '>' + PASSWORD, '~{fc-hostile:*', *fleet_store.ACL_RULES)
            node.cli('CONFIG', 'SET', 'proto-max-bulk-len', str(8 << 20))
        password = tmp_path / 'password'
        password.write_text(PASSWORD + '\n')
        password.chmod(0o600)
        url = 'redis://bd@127.0.0.1:%d/0?cluster=%s' % (nodes[0].port, 'yes' if request.param == 'cluster' else 'no')
        yield target, url, password, cli
    finally:
        target.kill()


def hostile_client(target):
    """What a compromised host holds: a client of the fleet's ACL user."""
    if isinstance(target, fleetstore.Cluster):
        from redis.cluster import RedisCluster
        return RedisCluster(host='127.0.0.1', port=target.nodes[0].port, username='bd', password=PASSWORD)
    return fleet_store.import_redis().Redis(host='127.0.0.1', port=target.port, username='bd', password=PASSWORD)


def test_a_hostile_host_gets_at_most_a_seeker_heavy_network_challenged_and_junk_fields_are_said(tmp_path, guarded):
    """With the fleet's ACL user (the hosts too): crossings of networks of other lengths, other
    spellings, under the thresholds, holding the server's address, huge, of an AS the host carries
    nothing of, and one plausible entry for the host's network of job seekers: only that network
    is challenged, nothing blocked. Then the sums' fields made non-numbers: said, and the window's
    campaign keys sent again under a new token, exact; the sums' key made a string: the store is
    away for the run, whose own counts decide."""
    target, url, password, cli = guarded
    hostile = hostile_client(target)
    tag = '{fc-hostile:v2c:%d}' % START
    token = 'b1a7ed' * 4
    hostile.set(tag + ':epoch', token, nx=True)
    hostile.rpush('%s:%s:crossed' % (tag, token), *[
        'n 10.0.0.0/8 999999 999999', 'n 203.0.113.5/24 999 999', 'n 2001:DB8::/64 999 999', 'n 192.0.2.7 999 999',
        'n 198.51.100.0/24 999 999', 'n 203.0.113.0/24 5 1', 'n 203.0.113.0/24 -5 99', 'a 65536 999 999',
        'a 0 999 999', 'a 065536 999 999', 'n 203.0.113.0/24 ' + '9' * 40 + ' 99', 'A' * (1 << 20), 'x 1 2 3', '',
        'n 192.0.2.0/24 500 40'])
    store = (url, 'fc-hostile', cli)
    extra = ('--fleet-store-password-file', password)
    seekers = ''.join(browser('192.0.2.%d' % i, 3) for i in range(100, 140))
    result, files = host_run(tmp_path, store, 'web0', seekers + rotating('203.0.113.%d', range(1, 4), 5), *extra)
    assert challenged(result) == [('192.0.2.0/24', 500, 'network 192.0.2.0/24, 40 addresses fleet-wide')]
    assert result['blocked'] == [] and files.read('blocklist') is None and result['warnings'] == []
    fields = campaign_fields(cli, 'fc-hostile')
    assert (fields['n 203.0.113.0/24'], fields['d n 203.0.113.0/24']) == ('15', '3')
    hostile.hset('%s:%s:sum' % (tag, token), mapping={'n 203.0.113.0/24': 'not a number', 'd n 203.0.113.0/24': 'x' * (1 << 20)})
    result, files = host_run(tmp_path, store, 'web1', rotating('203.0.113.%d', range(4, 7), 5), *extra)
    said = [line for line in result['warnings'] if line.startswith('fleet store redis://') and line.endswith(
        messages.FLEET_JUNK.split('%s', 1)[1] % '2026-11-21 10:00 UTC')]
    assert len(said) == 1, result['warnings']
    fields = campaign_fields(cli, 'fc-hostile')
    assert (fields['n 203.0.113.0/24'], fields['d n 203.0.113.0/24']) == ('15', '3')      # web1's; web0's at its next push
    host_run(tmp_path, store, 'web0', seekers + rotating('203.0.113.%d', range(1, 4), 5), *extra)
    fields = campaign_fields(cli, 'fc-hostile')
    assert (fields['n 203.0.113.0/24'], fields['d n 203.0.113.0/24']) == ('30', '6')
    new_token = cli('get', tag + ':epoch').strip()
    assert new_token != token
    hostile.set('%s:%s:sum' % (tag, new_token), 'a string')        # the ACL grants no DEL: a wrong type by SET
    result, files = host_run(tmp_path, store, 'web2', rotating('203.0.113.%d', range(1, 17), 1), *extra)
    assert any('unreachable' in line for line in result['warnings']), result['warnings']
    assert challenged(result) == [('203.0.113.0/24', 16, 'network 203.0.113.0/24, 16 addresses')]      # its own counts
    assert files.read('blocklist') is None
    hostile.close()


def test_with_a_store_and_no_profile_no_campaign_key_is_written(tmp_path):
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        files = Files(tmp_path / 'web0')
        log = tmp_path / 'access.log'
        log.write_text(rotating('203.0.113.%d', range(1, 17), 1) + browser('192.0.2.9', 3))
        got = run_core(files.options() + ['--server-ip', SERVER, '--now', NOW, '--fleet-store', server.url, '--fleet-host', 'web0', log])
        assert got.returncode == 0, got.stderr
        assert server.cli('--scan', '--pattern', '*v2c*').split() == []
        assert sorted(server.cli('--scan', '--pattern', '{bot-detector:v2:%d}:*:sum' % START).split()) != []
    finally:
        server.kill()


def test_an_idle_follower_works_its_campaign_keys_out_once_and_again_only_after_lines(tmp_path):
    """A pass over the windows' addresses a round costs the follower: at its first round (a
    restarted follower's keys go again), then only after lines were read."""
    settings = Settings(fleet_store='redis://127.0.0.1:1/0', fleet_host='web0', campaigns=True)
    fleet = Fleet(settings, [].append, rules=CampaignRules(settings))
    windows = in_timezone('UTC', lambda: hour_windows(FOLLOW_NOW))
    counters = dict((window.stamp, Counter({b'203.0.113.1': 3})) for window in windows)
    offered, offer = [], fleet.campaigns.offer

    def counted(*args):
        done = offer(*args)
        offered.append(done)
        return done
    fleet.campaigns.offer = counted
    for read in (0, 0, 0, 120, 0, 0):
        fleet.campaigns.offered_at = 0.0        # the pacing aside: each round may offer
        fleet.tick(counters, windows, read)
    assert offered == [True, True]
    fleet.store.close()


def test_a_hostile_hosts_as_crossings_list_only_ranges_of_the_hosts_own_traffic_without_seekers(tmp_path, guarded):
    """Crossings of three ASes planted with the fleet's ACL user: the host carries AS65536's
    addresses without browser behaviour and no seekers there (its range challenged), AS64500's
    with its job seekers there (never the range, never the seekers' networks: only the /24s of
    its own addresses without browser behaviour), nothing of AS65537 (nothing listed)."""
    target, url, password, cli = guarded
    hostile = hostile_client(target)
    tag = '{fc-hostile:v2c:%d}' % START
    token = 'b1a7ed' * 4
    hostile.set(tag + ':epoch', token, nx=True)
    hostile.rpush('%s:%s:crossed' % (tag, token), 'a 65536 999 999', 'a 64500 999 999', 'a 65537 999 999')
    text = ''.join(scraper('10.128.%d.9' % i, 1) for i in range(3)) + ''.join(scraper('10.1.%d.9' % i, 1) for i in range(3))
    text += ''.join(browser('10.2.%d.7' % i, 2) for i in range(3)) + scraper('10.2.1.9', 1)     # that one beside a seeker
    result, files = host_run(tmp_path, (url, 'fc-hostile', cli), 'web0', text, '--fleet-store-password-file', password,
                             '--asn-database', write_tsv(tmp_path / 'ip2asn.tsv'), '--hosting-asn', '65536')
    assert challenged(result) == sorted([('10.128.0.0/12', 3, 'AS65536 ELSEWHERE (hosting), 999 addresses fleet-wide, 3 in range '
                                          '10.128.0.0-10.143.255.255 here, no job seekers there')] + [
        ('10.1.%d.0/24' % i, 1, 'AS64500 RESIDENTIAL-ISP, 999 addresses fleet-wide, 1 in network 10.1.%d.0/24 here, no job '
         'seekers there, though range 10.0.0.0-10.31.255.255 carries some' % i) for i in range(3)])
    assert result['blocked'] == [] and files.read('blocklist') is None
    hostile.close()
