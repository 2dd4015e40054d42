"""``trusted_proxies`` reads X-Forwarded-For as nginx's realip module does (ports and brackets
stripped, blanks and empty elements skipped, an IPv4-mapped address read as IPv4), and a
trusted proxy is never the client (issue 38, item 3): when no untrusted address remains, the
line comes from no one and is counted as unparsed. Behind a balancer, blocking the proxy cuts
off every client."""
import json

import pytest

from conftest import run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats.proxies import TrustedProxies

NOW = '2025-11-21 04:13:43'
NOW_EPOCH = 1763698423
PROXY = '10.0.0.1'
TRUSTED = ['10.0.0.0/8', 'fd00::/8']

# (logged address, X-Forwarded-For) -> the client, or None: the line comes from no one.
CASES = [
    (PROXY, '198.51.100.9', '198.51.100.9'),
    (PROXY, '198.51.100.9:51234', '198.51.100.9'),
    (PROXY, '[2001:db8::9]:443', '2001:db8::9'),
    (PROXY, '[2001:db8::9]', '2001:db8::9'),
    (PROXY, '2001:db8::9', '2001:db8::9'),
    (PROXY, '203.0.113.200 198.51.100.9', '198.51.100.9'),
    (PROXY, '203.0.113.200,198.51.100.9, ,', '198.51.100.9'),
    (PROXY, '198.51.100.9,,10.0.0.2', '198.51.100.9'),
    (PROXY, '198.51.100.9, ::ffff:10.0.0.2', '198.51.100.9'),
    (PROXY, '::ffff:198.51.100.9', '198.51.100.9'),
    ('::ffff:10.0.0.1', '198.51.100.9', '198.51.100.9'),
    (PROXY, 'unknown', None),
    (PROXY, '198.51.100.9, unknown', None),
    (PROXY, '', None),
    (PROXY, None, None),
    (PROXY, ' , ,', None),
    (PROXY, '10.0.0.2, 10.0.0.3', None),
    (PROXY, 'fd00::1', None),
    (PROXY, '10.0.0.2:80', None),
    ('198.51.100.7', '203.0.113.200', '198.51.100.7'),        # not behind a proxy: as logged
]


@pytest.mark.parametrize('logged,forwarded,client', CASES)
def test_x_forwarded_for_is_read_as_nginx_realip_reads_it(logged, forwarded, client):
    assert TrustedProxies(TRUSTED).client(logged, forwarded) == client


def _line(address, forwarded, agent='curl'):
    doc = {'time_iso8601': '2025-11-21T04:10:00+00:00', 'remote_addr': address, 'request': 'GET /job/1 HTTP/1.1',
           'status': '200', 'body_bytes_sent': '10', 'http_referer': '', 'http_user_agent': agent}
    if forwarded is not None:
        doc['http_x_forwarded_for'] = forwarded
    return json.dumps(doc).encode() + b'\n'


def test_the_trusted_proxy_is_never_blocked_and_its_lines_of_no_one_are_unparsed(tmp_path, files):
    odd = [f for dummy, f, client in CASES if client is None]
    lines = [_line(PROXY, odd[i % len(odd)]) for i in range(1500)]
    lines += [_line(PROXY, '198.51.100.9:%d' % (40000 + i)) for i in range(1100)]
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(lines))
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.9.9.9', '--log-format', 'nginx_json', '--json',
                                      '--trusted-proxy', '10.0.0.0/8', '--trusted-proxy', 'fd00::/8', log])
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == ['198.51.100.9']
    assert out['scans'][0]['unparsed_lines'] == 1500
    assert PROXY.encode() not in (files.read('blocklist') or b'')
