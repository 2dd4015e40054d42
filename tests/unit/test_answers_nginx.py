"""The answers in a real nginx (issue 46): Debian's nginx and njs module on loopback ports, with
the configuration the command prints, the lists written by the command."""
import re
import time

import pytest

from answers_lab import AnswersLab


@pytest.fixture
def lab(tmp_path, files):
    made = AnswersLab(tmp_path / 'nginx', files, '--throttle-rate', '60r/m', '--throttle-burst', '3',
                      '--throttle-retry-after', '2')
    yield made
    made.close()


def fnv_work(text):
    h = 0x811c9dc5
    for byte in text.encode():
        h = ((h ^ byte) * 16777619) & 0xffffffff
    return h >> 20


def challenge_value(set_cookies):
    for cookie in set_cookies:
        found = re.match(r'bot_detector_challenge=([0-9]+\.[0-9a-f]+);', cookie)
        if found:
            return found.group(1)
    return None


def test_a_throttled_address_gets_429_with_retry_after_then_its_pages_again(lab):
    lab.command('--throttle', '203.0.113.7')
    statuses = []
    for dummy in range(8):
        status, headers, body = lab.get('/job/1', '203.0.113.7')
        statuses.append(status)
        if status == 429:
            assert headers['retry-after'] == '2' and headers['cache-control'] == 'no-store'
            assert b'Please wait 2 seconds' in body
    assert statuses[:4] == [200] * 4 and 429 in statuses[4:]        # burst 3 at 1 a second
    assert all(lab.get('/job/1', '203.0.113.8')[0] == 200 for dummy in range(8))        # another client: never
    assert lab.get('/healthz', '203.0.113.7')[0] == 200         # a page the operator named: never
    time.sleep(2.2)         # the Retry-After: the rate lets it through again
    assert lab.get('/job/2', '203.0.113.7')[0] == 200


def test_a_scraper_on_one_keep_alive_connection_is_throttled(lab):
    lab.command('--throttle', '203.0.113.0/24')
    connection = lab.connection()
    statuses = [lab.get('/job/%d' % (i % 2 + 1), '203.0.113.77', connection=connection)[0] for i in range(20)]
    connection.close()
    assert statuses.count(429) >= 15, statuses


def test_a_challenged_address_gets_the_challenge_page_others_their_pages(lab):
    lab.command('--challenge', '203.0.113.9')
    status, headers, body = lab.get('/job/1', '203.0.113.9')
    assert status == 428
    assert headers['cache-control'] == 'no-store'
    assert b'checking your browser' in body and b'<noscript>' in body and b'role="status"' in body
    assert challenge_value(headers['set-cookie'])
    assert len(body) < 4096
    assert lab.get('/job/1', '203.0.113.10')[0] == 200
    # never a POST, an XHR or a JSON call, a health check, an asset, the challenge's own URLs
    assert lab.get('/job/1', '203.0.113.9', method='POST', body=b'apply=1')[0] == 405      # the static page's own answer to a POST
    assert lab.get('/job/1', '203.0.113.9', headers={'Sec-Fetch-Mode': 'cors', 'Sec-Fetch-Dest': 'empty'})[0] == 200
    assert lab.get('/job/1', '203.0.113.9', headers={'Accept': 'application/json'})[0] == 200
    assert lab.get('/job/1', '203.0.113.9', headers={'X-Requested-With': 'XMLHttpRequest'})[0] == 200
    assert lab.get('/healthz', '203.0.113.9')[0] == 200
    assert lab.get('/static/app.css', '203.0.113.9')[0] == 200
    assert lab.get('/robots.txt', '203.0.113.9')[0] == 200
    # a page load as a browser says it is one
    assert lab.get('/job/1', '203.0.113.9', headers={'Sec-Fetch-Mode': 'navigate', 'Sec-Fetch-Dest': 'document'})[0] == 428


def replay_everything(lab, client, path='/job/1'):
    """A client without JavaScript that replays every cookie, token and URL of the challenge:
    returns the statuses of its every try at the job page."""
    status, headers, body = lab.get(path, client)
    assert status == 428
    value = challenge_value(headers['set-cookie'])
    tokens = set(re.findall(rb'[A-Za-z0-9_./?=%-]{6,}', body)) | {value.encode(), value.split('.')[1].encode()}
    urls = set(re.findall(rb"'(/\.bot-detector/[^']*)'", body)) | {b'/.bot-detector/pass?to=' + path.encode()}
    tries = []
    for token in sorted(tokens):
        token = token.decode()
        for cookie in ('bot_detector_challenge=%s' % value, 'bot_detector_pass=%s' % token,
                       'bot_detector_pass=%s.0' % token, 'bot_detector_pass=%s; bot_detector_challenge=%s' % (value, value)):
            for url in sorted(urls) + [path.encode()]:
                url = url.decode()
                if '?to=' in url and not url.endswith(path):
                    url += path
                tries.append(lab.get(url, client, headers={'Cookie': cookie})[0])
    return tries


def test_a_client_without_javascript_never_passes_even_replaying_every_token(lab):
    lab.command('--challenge', '203.0.113.11')
    tries = replay_everything(lab, '203.0.113.11')
    assert len(tries) > 20
    assert set(tries) <= {428, 403}, tries


def passing_cookie(lab, client):
    """What the page's script does, done here: the pass of ``client``."""
    status, headers, dummy = lab.get('/job/1', client)
    assert status == 428
    value = challenge_value(headers['set-cookie'])
    n = 0
    while fnv_work('%s.%d' % (value, n)):
        n += 1
    return 'bot_detector_pass=%s.%d' % (value, n)


def test_a_pass_holds_for_its_address_only_and_a_forged_one_never(lab):
    lab.command('--challenge', '203.0.113.0/24', '--challenge', '2001:db8:7::/48')
    cookie = passing_cookie(lab, '203.0.113.12')
    status, headers, dummy = lab.get('/.bot-detector/pass?to=/job/2%3Fq%3D1', '203.0.113.12', headers={'Cookie': cookie})
    assert status == 303 and headers['location'].endswith('/job/2?q=1') and headers['cache-control'] == 'no-store'
    assert lab.get('/job/1', '203.0.113.12', headers={'Cookie': cookie})[0] == 200
    assert lab.get('/job/1', '203.0.113.13', headers={'Cookie': cookie})[0] == 428        # another address
    assert lab.get('/.bot-detector/pass?to=/job/1', '203.0.113.13', headers={'Cookie': cookie})[0] == 403
    expiry, signature, n = cookie.split('=')[1].split('.')
    forged = ['%d.%s.%s' % (int(expiry) + 600, signature, n), '%s.%s.%s' % (expiry, '0' * 64, n),
              '%s.%s.%s' % (expiry, signature, int(n) + 1), '%s.%s' % (expiry, signature)]
    for value in forged:
        assert lab.get('/job/1', '203.0.113.12', headers={'Cookie': 'bot_detector_pass=' + value})[0] == 428, value
    assert lab.get('/.bot-detector/pass?to=//evil.example/', '203.0.113.12', headers={'Cookie': cookie})[1]['location'] \
        .endswith('127.0.0.1:%d/' % lab.port)        # never an open redirect
    # IPv6: bound to the client's /64
    six = passing_cookie(lab, '2001:db8:7:1::5')
    assert lab.get('/job/1', '2001:db8:7:1::99', headers={'Cookie': six})[0] == 200
    assert lab.get('/job/1', '2001:db8:7:2::5', headers={'Cookie': six})[0] == 428


def test_a_second_secret_still_accepts_passes_during_a_rotation(lab):
    lab.command('--challenge', '203.0.113.14')
    cookie = passing_cookie(lab, '203.0.113.14')
    old = lab.secret.read_text().strip()
    lab.secret.write_text('%s\n%s\n' % ('f' * 64, old))        # the new secret signs, the old one still holds
    assert lab.get('/job/1', '203.0.113.14', headers={'Cookie': cookie})[0] == 200
    lab.secret.write_text('%s\n' % ('f' * 64))          # the overlap over: the old pass fails
    assert lab.get('/job/1', '203.0.113.14', headers={'Cookie': cookie})[0] == 428


def test_an_entry_ends_at_its_expiry_and_on_unblock_without_a_reload(lab):
    lab.command('--challenge', '203.0.113.15', '--challenge', '203.0.113.16')
    workers = lab.workers()
    assert lab.get('/job/1', '203.0.113.15')[0] == 428
    lab.command('--unblock', '203.0.113.15')
    assert lab.get('/job/1', '203.0.113.15')[0] == 200
    import os
    past = time.time() - 1      # its expiry in the answers' directory: nginx stops answering at it
    os.utime(lab.d / 'answers' / 'challenge' / '4-cb007110', (past, past))
    assert lab.get('/job/1', '203.0.113.16')[0] == 200
    assert lab.crashes() == []
    assert lab.workers() == workers


def test_the_allow_list_and_the_health_check_are_never_answered(lab):
    lab.files.exclusions.write_text('198.51.100.7\n')
    got = lab.command('--challenge', '198.51.100.7', '--challenge', '198.51.100.0/24')
    assert got.stdout == b''
    assert lab.get('/job/1', '198.51.100.7')[0] == 200
    assert lab.get('/job/1', '198.51.100.8')[0] == 200


def test_ten_thousand_challenged_addresses_cost_nginx_no_reload(lab, tmp_path):
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import answer_files
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import answers
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    lab.files.exclusions.write_text('')
    settings = Settings(blocklist=str(lab.files.blocklist), exclusions_file=str(lab.files.exclusions),
                        activity_log=str(lab.files.activity_log), server_ips=['10.9.9.9'],
                        challenge_list=str(lab.d / 'challenge.txt'), answer_dir=str(lab.d / 'answers'))
    workers, started = lab.workers(), (lab.d / 'error.log').read_text().count('reconfiguring')
    batch = []
    for i in range(10000):      # arriving in 20 runs, as a follower's decisions would
        batch.append(('10.%d.%d.%d' % (i >> 16, (i >> 8) & 255, i & 255), 'campaign'))
        if len(batch) == 500:
            answers.answer(settings, 'challenge', batch)
            answer_files.sync(settings)
            assert lab.get('/job/1', batch[-1][0])[0] == 428        # in effect at once
            batch = []
    assert len(list((lab.d / 'answers' / 'challenge').iterdir())) == 10000
    assert lab.get('/job/1', '10.0.0.0')[0] == 428 and lab.get('/job/1', '10.1.0.0')[0] == 200
    assert lab.crashes() == []
    assert lab.workers() == workers         # the same worker: no reload
    assert (lab.d / 'error.log').read_text().count('reconfiguring') == started
