"""What a client writes never decides ``log_format: auto`` (issue 44, items 2 and 3): a property
test over the 8 formats fills up to all of a log's first lines, and a follower's last 50, with
a scraper's requests whose client-written fields (Basic-auth user, request target, Referer,
User-Agent) are random: blanks, brackets, quotes, escapes, bytes outside ASCII and other
formats' whole lines, each written as that format's server writes it (its own escaping). The
chosen format never changes, nor does any line's counted address; a follower's watch never
finds the format astray. The formats' own logs (tests/formats, and their combined twins) are
still told as theirs."""
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

import loggen
import logformats
from conftest import ROOT, in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.log_formats import combined_address
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

FIXTURES = ROOT / 'tests' / 'formats'
FORMATS = ('combined',) + logformats.FORMATS
EPOCH = 1795230000          # 2026-11-21 03:00:00 UTC
SCRAPERS = ('203.0.113.66', '2001:db8::66')
VISITORS = ['198.51.100.%d' % i for i in range(1, 10)]
PROXY = '10.0.0.2'


def _other_lines():
    """Whole lines of every format, and an HAProxy-shaped fragment, naming the trusted proxy."""
    combined = in_timezone('UTC', lambda: loggen.line(PROXY, EPOCH, path='/job/7'))
    entry = logformats.parse(combined.rstrip(b'\n'))
    lines = [combined.rstrip(b'\n')]
    for fmt in logformats.FORMATS:
        for style in (0, 1):
            line = in_timezone('UTC', lambda: logformats.render(fmt, entry, style)[0])
            if line is not None:
                lines.append(line)
    lines.append(b'#Fields: date time c-ip cs-method cs-uri-stem sc-status')
    lines.append(b'http://x/ %s:41342 [21/Nov/2026:03:10:00.123] fe be/srv1 0/0/0/1/1 200 512 - - ---- 1/1/1/1/0 0/0'
                 % PROXY.encode())
    return lines


PIECES = [b' ', b'  ', b'[', b']', b'"', b"'", b'{', b'}', b'|', b'\\', b':', b'-', b'#', b'%', b'a', b'b c', b'\t',
          b'\x01', b'\xc3\xa9', b'\xff', b'GET /job/9 HTTP/1.1', b'[21/Nov/2026:03:10:00 +0000]', b' "GET / HTTP/1.1" 200 1 "',
          b'10.0.0.2', b'10.0.0.2:41342 ', b' 7 "web@docker" "http://x" 3ms', b'} "GET /job/1 HTTP/1.1'] + _other_lines()
FIELD = st.lists(st.sampled_from(PIECES), max_size=5).map(b''.join)
CLIENT = st.fixed_dictionaries({'user': st.one_of(st.none(), FIELD), 'path': FIELD, 'referer': FIELD, 'agent': FIELD})
PLAIN = {'user': None, 'path': b'', 'referer': b'', 'agent': loggen.BROWSERS[0].encode()}


def _hex_escape(data, escape, form):
    return b''.join(form % byte if byte < 0x20 or byte >= 0x7f or bytes([byte]) in escape else bytes([byte]) for byte in data)


def nginx(data):
    """nginx's default escaping of a variable in a log line."""
    return _hex_escape(data, (b'"', b'\\'), b'\\x%02X') or b'-'


def apache(data):
    """Apache's ap_escape_logitem."""
    return _hex_escape(data, (), b'\\x%02x').replace(b'\\', b'\\\\').replace(b'"', b'\\"') if data else b'-'


def go_quote(data):
    """Go's %q of a header (Traefik's common log format), '"-"' when empty."""
    return b'"' + (_hex_escape(data, (), b'\\x%02x').replace(b'\\', b'\\\\').replace(b'"', b'\\"') if data else b'-') + b'"'


def haproxy(data, extra=b''):
    """HAProxy's encoding of a logged request or capture (#XX)."""
    return _hex_escape(data, (b'"', b'#') + tuple(bytes([c]) for c in extra), b'#%02X')


def url(data):
    """A request target as Go and IIS write it: escaped where it would break the line."""
    return _hex_escape(data, (b'"', b' ', b'%', b'\\', b'{', b'}', b'|', b'#', b'[', b']'), b'%%%02X')


def text(data):
    return data.decode('utf-8', 'replace')


def write(fmt, address, epoch, client, style=0):
    """The line the server of ``fmt`` writes for one request of ``address`` with ``client``'s fields."""
    clf = loggen.clf_time(epoch).encode()
    user, path, referer, agent = client['user'], b'/job/' + client['path'], client['referer'], client['agent']
    addr = address.encode()
    if fmt == 'combined':
        return b'%s - %s [%s] "%s" 200 512 "%s" "%s"' % (
            addr, nginx(user or b''), clf, nginx(b'GET ' + path + b' HTTP/1.1'), nginx(referer), nginx(agent))
    if fmt == 'vhost_combined':
        who = b'-' if user is None else (b'""' if not user else apache(user))
        return b'jobs.example.com:443 %s - %s [%s] "%s" 200 512 "%s" "%s"' % (
            addr, who, clf, apache(b'GET ' + path + b' HTTP/1.1'), apache(referer), apache(agent))
    if fmt == 'traefik':
        who = (user or b'-').replace(b'\n', b' ').replace(b'\r', b' ')
        return b'%s - %s [%s] "GET %s HTTP/1.1" 200 512 %s %s 7 "web@docker" "http://10.0.0.2:80" 3ms' % (
            addr, who, clf, url(path), go_quote(referer), go_quote(agent))
    if fmt == 'haproxy':
        prefix = b'Nov 21 03:00:00 lb haproxy[4242]: ' if style % 2 else b''
        stamp = time.strftime('%d/%b/%Y:%H:%M:%S', time.localtime(epoch)).encode()
        return b'%s%s:41342 [%s.123] fe be/srv1 10/0/30/69/109 200 512 - - ---- 1/1/1/1/0 0/0 {%s|%s} "%s"' % (
            prefix, addr, stamp, haproxy(agent, b'{|}'), haproxy(referer, b'{|}'), haproxy(b'GET ' + path + b' HTTP/1.1'))
    if fmt == 'w3c':
        def iis(data):
            return _hex_escape(data.replace(b' ', b'+'), (), b'%%%02X') or b'-'
        stamp = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(epoch)).encode()
        return b'%s 10.0.0.1 GET %s - 443 %s %s %s %s 200 0 0 15' % (stamp, url(path), iis(user or b''), addr, iis(agent), iis(referer))
    if fmt == 'nginx_json':       # escape=json: a quote, a backslash and controls escaped, other bytes as they came
        def js(data):
            return json.dumps(data.decode('latin-1'), ensure_ascii=False)[1:-1].encode('latin-1')
        return (b'{"time_local":"%s","remote_addr":"%s","remote_user":"%s","request":"%s","status":"200",'
                b'"body_bytes_sent":"512","http_referrer":"%s","http_user_agent":"%s"}'
                % (clf, addr, js(user or b''), js(b'GET ' + path + b' HTTP/1.1'), js(referer), js(agent)))
    if fmt == 'caddy':
        doc = {'level': 'info', 'ts': epoch + 0.5, 'logger': 'http.log.access', 'msg': 'handled request',
               'request': {'remote_ip': address, 'remote_port': '41342', 'client_ip': address, 'proto': 'HTTP/1.1',
                           'method': 'GET', 'host': 'jobs.example', 'uri': text(path),
                           'headers': {'User-Agent': [text(agent)], 'Referer': [text(referer)]}},
               'user_id': text(user or b''), 'duration': 0.0009, 'size': 512, 'status': 200}
        return json.dumps(doc, ensure_ascii=False, separators=(',', ':')).encode('utf-8')
    if fmt == 'traefik_json':
        iso = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch))
        doc = {'ClientAddr': '%s:53944' % address, 'ClientHost': address, 'ClientUsername': text(user or b'-'),
               'DownstreamContentSize': 512, 'DownstreamStatus': 200, 'RequestMethod': 'GET', 'RequestPath': text(path),
               'RequestProtocol': 'HTTP/1.1', 'StartUTC': iso, 'StartLocal': iso, 'request_User-Agent': text(agent),
               'request_Referer': text(referer), 'RouterName': 'web@docker', 'level': 'info', 'msg': ''}
        return json.dumps(doc, ensure_ascii=False, separators=(',', ':')).encode('utf-8')
    raise ValueError(fmt)


def counted_address(fmt, head, line):
    """The address ``line`` counts for, read as ``fmt`` (combined: its first field, as the reference's awk)."""
    if fmt == 'combined':
        assert combined_address(line) is not None, line
        return line.split(b' ', 1)[0]
    reader = choice.reader_of(Settings(log_format=fmt, haproxy_user_agent_capture=1), fmt, 'x.log', head)
    twin = reader.parse(line)
    assert twin is not None, line
    twin = twin if isinstance(twin, bytes) else twin.encode('utf-8', 'surrogateescape')
    return twin.split(b' ', 1)[0]


def build(fmt, scraped, style):
    """(the log's head, [(line, its address)]): the scraper's requests first where ``scraped``
    says (up to all of the first 50 lines), the visitors' around them."""
    rows = []
    for at, client in enumerate(scraped):
        if client is not None:
            scraper = SCRAPERS[1 if at % 3 == 2 else 0]
            rows.append((write(fmt, scraper, EPOCH + at, client, style), scraper))
        else:
            visitor = VISITORS[at % len(VISITORS)]
            rows.append((write(fmt, visitor, EPOCH + at, PLAIN, style), visitor))
    header = logformats.W3C_HEADER if fmt == 'w3c' else b''
    return header + b''.join(line + b'\n' for line, dummy in rows), rows


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fmt=st.sampled_from(FORMATS), style=st.integers(0, 1),
       scraped=st.lists(st.one_of(st.none(), CLIENT), min_size=1, max_size=60))
def test_client_fields_never_choose_the_format_nor_the_counted_addresses(fmt, style, scraped):
    head, rows = in_timezone('UTC', lambda: build(fmt, scraped, style))
    assert choice.detect(head, 'x.log') == fmt
    for line, address in rows:
        assert in_timezone('UTC', lambda: counted_address(fmt, head, line)) == address.encode(), line


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fmt=st.sampled_from(FORMATS), style=st.integers(0, 1),
       burst=st.lists(st.one_of(st.none(), CLIENT), min_size=choice.SAMPLE_LINES, max_size=choice.SAMPLE_LINES))
def test_a_followers_last_lines_written_by_clients_never_set_its_watch_astray(fmt, style, burst):
    """The log's format, then 50 new lines, any of them (up to all) a scraper's with random fields:
    the watch finds the format still fits, so the follower never decides again."""
    head, dummy = in_timezone('UTC', lambda: build(fmt, [None] * 20, style))
    watch = choice.Watch(choice.detect(head, 'x.log'))
    assert watch.name == fmt
    watch.see(head, True)
    new, dummy = in_timezone('UTC', lambda: build(fmt, burst, style))
    watch.see(new if fmt != 'w3c' else new[len(logformats.W3C_HEADER):], True)
    assert not watch.astray()


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_the_formats_own_logs_and_their_twins_are_still_told_as_theirs(fmt):
    assert choice.detect((FIXTURES / ('%s.log' % fmt)).read_bytes(), 'x.log') == fmt
    assert choice.detect((FIXTURES / ('%s.twin' % fmt)).read_bytes(), 'x.log') == 'combined'
