"""The replayed hour of issue 45 (tests/bench/job_board_hour.py) has the issue's actors with
the issue's parameters, and its ip2asn file covers every address it uses: the bench's figures
mean what they say only if these hold. Counted here from the files it writes, by plain loops."""
import collections
import ipaddress
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'bench'))
import job_board_hour  # noqa: E402


@pytest.fixture(scope='module', params=[1, 2])
def hour(request, tmp_path_factory):
    out = tmp_path_factory.mktemp('hour%d' % request.param)
    job_board_hour.generate(str(out), seed=request.param)
    actors = json.load(open(os.path.join(str(out), 'actors.json')))
    lines = open(os.path.join(str(out), 'access.log')).read().splitlines()
    rows = [row.split('\t') for row in open(os.path.join(str(out), 'ip2asn.tsv')).read().splitlines()]
    return actors, lines, rows


def job_views(lines, actors):
    views = collections.defaultdict(collections.Counter)
    for line in lines:
        address = line.split(' ', 1)[0]
        if '"GET /job/' in line:
            views[actors[address]][address] += 1
    return views


def test_the_hour_has_the_issues_actors(hour):
    actors, lines, dummy = hour
    views = job_views(lines, actors)
    kinds = collections.Counter(actors.values())
    assert kinds['seeker'] >= 3000
    assert kinds['naive'] == 1 and kinds['cloud'] > 100 and kinds['ipv6'] > 100
    assert 2 <= kinds['cgnat'] <= 5 and all(count > 1000 for count in views['cgnat'].values())
    assert max(views['seeker'].values()) < 10
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network('203.0.113.0/24') for a in views['cloud'])
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network('2001:db8:ffff:1::/64') for a in views['ipv6'])
    proxy = [a for a, actor in actors.items() if actor == 'proxy']
    assert len(proxy) >= 3000 and len(set(a.rsplit('.', 1)[0] for a in proxy)) >= 1000
    per_address = collections.Counter(line.split(' ', 1)[0] for line in lines if actors[line.split(' ', 1)[0]] == 'proxy')
    assert max(per_address.values()) < 10


def test_seekers_behave_as_browsers_and_scrapers_do_not(hour):
    actors, lines, dummy = hour
    assets, referred = collections.Counter(), collections.Counter()
    for line in lines:
        actor = actors[line.split(' ', 1)[0]]
        assets[actor] += '"GET /static/' in line
        referred[actor] += '"GET /job/' in line and '"https://jobs.example/' in line
    assert assets['seeker'] > 0 and assets['cgnat'] > 0 and referred['seeker'] > 0
    assert all(assets[actor] == 0 and referred[actor] == 0 for actor in ('naive', 'cloud', 'ipv6', 'proxy'))
    traps = [line for line in lines if job_board_hour.TRAP_PATH in line]
    assert traps and all(actors[line.split(' ', 1)[0]] == 'proxy' for line in traps)


def test_the_ip2asn_file_covers_every_address_and_puts_most_of_the_campaign_elsewhere(hour):
    actors, dummy, rows = hour
    ranges = [(ipaddress.ip_address(r[0]), ipaddress.ip_address(r[1]), int(r[2])) for r in rows]

    def asn(address):
        ip = ipaddress.ip_address(address)
        found = [n for start, end, n in ranges if start.version == ip.version and start <= ip <= end]
        assert len(found) == 1, address
        return found[0]
    by_actor = collections.defaultdict(collections.Counter)
    for address, actor in actors.items():
        by_actor[actor][asn(address)] += 1
    seeker_ases = set(by_actor['seeker'])
    proxy = by_actor['proxy']
    shared = sum(count for n, count in proxy.items() if n in seeker_ases)
    assert 0.15 <= shared / float(sum(proxy.values())) <= 0.35
