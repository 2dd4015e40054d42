"""The replayed hour of issue 45 through a real nginx (issue 46), in small: the campaign profile
decides on the generated hour (tests/bench/job_board_hour.py) and writes the lists and the
answers' directory; Debian's nginx with the printed snippets (tests/answers_lab.py) then answers
a few hundred of the hour's own requests: the scrapers rotating through a /24 and a /64 get the
challenge, the job seekers and the NAT addresses' people their pages. The whole hour, its
timing and the shares are tests/bench/nginx_replay_bench.py's (make bench)."""
import json
import os
import re
import sys

import pytest

from answers_lab import AnswersLab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'bench'))
import job_board_hour  # noqa: E402  pylint: disable=wrong-import-position

LINE = re.compile(r'(\S+) - - \[[^]]+\] "GET (\S+) HTTP/1\.1" \d+ \d+ "([^"]*)" "([^"]*)"')
PER_ACTOR = 120


@pytest.fixture(scope='module')
def hour(tmp_path_factory):
    out = tmp_path_factory.mktemp('hour')
    job_board_hour.generate(str(out), seed=3)
    with open(str(out / 'actors.json')) as f:
        actors = json.load(f)
    return out, actors


def last_requests(out, actors, actor, jobs_only):
    """The actor's last PER_ACTOR requests of the hour: [(address, path, referer, agent)]."""
    found = []
    with open(str(out / 'access.log')) as f:
        for line in f:
            match = LINE.match(line)
            if match and actors[match.group(1)] == actor and (not jobs_only or match.group(2).startswith('/job')):
                found.append(match.groups())
    assert len(found) >= PER_ACTOR
    return found[-PER_ACTOR:]


def browser_headers(path, referer, agent):
    if path.startswith('/static/'):
        sent = {'Accept': '*/*', 'Sec-Fetch-Mode': 'no-cors', 'Sec-Fetch-Dest': 'image'}
    else:
        sent = {'Sec-Fetch-Mode': 'navigate', 'Sec-Fetch-Dest': 'document'}
    sent['User-Agent'] = agent
    if referer != '-':
        sent['Referer'] = referer
    return sent


def test_the_hours_scrapers_get_the_challenge_and_its_people_their_pages(tmp_path, files, hour):
    out, actors = hour
    lab = AnswersLab(tmp_path / 'nginx', files, '--campaigns', '--trap-path', job_board_hour.TRAP_PATH,
                     '--asn-database', out / 'ip2asn.tsv')
    try:
        got = lab.command('--now', '2026-11-21 10:59:59', out / 'access.log')
        challenged = (lab.d / 'challenge.txt').read_text().split()
        assert '203.0.113.0/24' in challenged and '2001:db8:ffff:1::/64' in challenged, got.stdout
        connection = lab.connection()
        statuses = {}
        for actor, jobs_only in (('cloud', True), ('ipv6', True), ('seeker', False), ('cgnat', False)):
            statuses[actor] = []
            for address, path, referer, agent in last_requests(out, actors, actor, jobs_only):
                headers = browser_headers(path, referer, agent) if actor in ('seeker', 'cgnat') else {'User-Agent': agent}
                statuses[actor].append(lab.get(path, address, headers=headers, connection=connection)[0])
        connection.close()
    finally:
        lab.close()
    # the scrapers: every job page answered with the challenge, none served
    assert set(statuses['cloud']) == {428} and set(statuses['ipv6']) == {428}
    # the people: nothing answered by the detector (the site itself has only some of the pages: 404)
    for actor in ('seeker', 'cgnat'):
        assert set(statuses[actor]) <= {200, 404}, (actor, statuses[actor])
