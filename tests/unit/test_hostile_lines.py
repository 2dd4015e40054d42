"""Lines a client can shape never stop detection (issue 38, item 5): in every JSON format, a
line nested past the parser's depth, or a time field holding a value of another type than the
format's, is at worst an unparsed line; the run goes on, blocks the scraper beside it and
exits 0. Run as the command, a real process."""
import json
import ipaddress
import os
import time

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from conftest import run_core

NOW = '2025-11-21 04:13:43'
NOW_EPOCH = 1763698423
SCRAPER = '203.0.113.7'
# Values of another type than a time, for any time field (what a JSON log can hold there).
ODD_TIMES = [[], ['21/Nov/2025:04:00:00 +0000'], {}, {'t': 1763697600}, True, False, None, 10 ** 400, -1e308, 1e308,
             float('nan'), '', ' ', '\u0000', 'x' * 3000, [[[[[]]]]]]
DEEP = 100000


def good_line(fmt, epoch, address=SCRAPER, time_key='time_iso8601'):
    """One job-page request in ``fmt``, at ``epoch``."""
    if fmt == 'caddy':
        doc = {'level': 'info', 'ts': epoch + 0.25, 'request': {'client_ip': address, 'method': 'GET', 'uri': '/job/1',
                                                                'proto': 'HTTP/1.1', 'headers': {'User-Agent': ['curl']}},
               'size': 5, 'status': 200}
    elif fmt == 'traefik_json':
        doc = {'ClientHost': address, 'DownstreamContentSize': 5, 'DownstreamStatus': 200, 'RequestMethod': 'GET',
               'RequestPath': '/job/1', 'RequestProtocol': 'HTTP/1.1',
               'StartLocal': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch)), 'request_User-Agent': 'curl'}
    else:
        when = {'time_iso8601': time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(epoch)),
                'time_local': time.strftime('%d/%b/%Y:%H:%M:%S +0000', time.gmtime(epoch)),
                'msec': '%d.000' % epoch}[time_key]
        doc = {time_key: when, 'remote_addr': address, 'request': 'GET /job/1 HTTP/1.1', 'status': '200',
               'body_bytes_sent': '5', 'http_referer': '', 'http_user_agent': 'curl'}
    return doc


def time_key_of(fmt, time_key):
    return {'caddy': 'ts', 'traefik_json': 'StartLocal'}.get(fmt, time_key)


def dumps(doc):
    return json.dumps(doc, allow_nan=True).encode()


CASES = [('nginx_json', 'time_iso8601'), ('nginx_json', 'time_local'), ('nginx_json', 'msec'), ('caddy', None),
         ('traefik_json', None)]


@pytest.mark.parametrize('fmt,time_key', CASES)
def test_a_time_field_of_another_type_is_an_unparsed_line(tmp_path, files, fmt, time_key):
    lines = [dumps(good_line(fmt, NOW_EPOCH - 60 - i % 600, time_key=time_key or 'time_iso8601')) for i in range(1000)]
    odd = []
    for value in ODD_TIMES:
        doc = good_line(fmt, NOW_EPOCH - 30, address='198.51.100.9', time_key=time_key or 'time_iso8601')
        doc[time_key_of(fmt, time_key)] = value
        odd.append(dumps(doc))
    log = tmp_path / 'access.log'
    log.write_bytes(b'\n'.join(odd + lines + odd) + b'\n')
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', fmt, '--json', '--threshold',
                                      '1000', log])
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == [SCRAPER]
    assert out['scans'][0]['unparsed_lines'] == 2 * len(ODD_TIMES)


@pytest.mark.parametrize('fmt,time_key', CASES)
@pytest.mark.parametrize('where', ['whole', 'agent', 'time'])
def test_a_line_nested_past_the_parser_depth_is_an_unparsed_line(tmp_path, files, fmt, time_key, where):
    """Nested 100,000 deep: the whole line, the user agent, or the time value."""
    nested = b'[' * DEEP + b']' * DEEP
    doc = good_line(fmt, NOW_EPOCH - 30, address='198.51.100.9', time_key=time_key or 'time_iso8601')
    if where == 'whole':
        hostile = nested
    elif where == 'agent':
        key = {'caddy': None, 'traefik_json': 'request_User-Agent'}.get(fmt, 'http_user_agent')
        if key is None:
            doc['request']['headers']['User-Agent'] = ['@@']
        else:
            doc[key] = '@@'
        hostile = dumps(doc).replace(b'"@@"', nested).replace(b'/job/1', b'/job/2')
    else:
        doc[time_key_of(fmt, time_key)] = '@@'
        hostile = dumps(doc).replace(b'"@@"', nested)
    lines = [dumps(good_line(fmt, NOW_EPOCH - 60 - i % 600, time_key=time_key or 'time_iso8601')) for i in range(1000)]
    log = tmp_path / 'access.log'
    log.write_bytes(b'\n'.join([hostile] + lines + [hostile]) + b'\n')
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', fmt, '--json', '--threshold',
                                      '1000', log])
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == [SCRAPER]
    assert out['scans'][0]['unparsed_lines'] == 2


# A follower never crash-loops on its own state file: whatever a damaged or edited file holds
# where the positions are, it warns and reads the log cold, once.
DAMAGED_POSITIONS = [None, [{}], [{'old': [{'dev': 'a', 'ino': 1, 'offset': 0, 'head': ''}], 'current': None}],
                     [{'old': [], 'current': {'dev': 1, 'ino': 1, 'offset': -5, 'head': '%%%'}}],
                     [{'old': [], 'current': {'dev': 1, 'ino': 1, 'offset': 0, 'head': ''}}] * 2]


@pytest.mark.parametrize('positions', DAMAGED_POSITIONS, ids=range(len(DAMAGED_POSITIONS)))
def test_a_follower_reads_cold_past_damaged_positions_in_its_state_file(tmp_path, files, positions):
    from test_follow import Following, lines, THRESHOLD
    log = tmp_path / 'access.log'
    log.write_bytes(lines('203.0.113.7', THRESHOLD + 5))
    follower = Following(tmp_path, files, log)
    with follower:
        wait_for_blocked(files, b'203.0.113.7')
        follower.stop()         # SIGTERM: its state saved
    name = next(n for n in os.listdir(str(follower.state_dir)) if n.startswith('follow-'))
    path = follower.state_dir / name
    header, rest = path.read_bytes().split(b'\n', 1)
    doc = json.loads(header)
    doc['positions'] = positions
    path.write_bytes(json.dumps(doc).encode() + b'\n' + rest)
    files.blocklist.write_bytes(b'')
    with Following(tmp_path, files, log) as again:
        wait_for_blocked(files, b'203.0.113.7')
        assert again.proc.poll() is None
        again.stop()
        err = again.proc.stderr.read().decode()
    assert 'state file %s ignored' % path in err, err


def wait_for_blocked(files, address, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if address in (files.read('blocklist') or b'').split(b'\n'):
            return
        time.sleep(0.05)
    raise AssertionError('%s not blocked within %s s' % (address, timeout))


def test_a_follower_goes_on_when_its_log_becomes_a_directory(tmp_path, files):
    """Renamed away and a directory made at its path: a warning, not a death (a follower that
    dies is restarted by systemd and dies again); a file there again is read."""
    from test_follow import Following, lines, THRESHOLD
    log = tmp_path / 'access.log'
    log.write_bytes(lines('203.0.113.7', THRESHOLD + 5))
    with Following(tmp_path, files, log) as follower:
        wait_for_blocked(files, b'203.0.113.7')
        os.rename(str(log), str(tmp_path / 'access.log.1'))
        os.mkdir(str(log))
        time.sleep(3)
        assert follower.proc.poll() is None, follower.proc.communicate()[1][-2000:]
        os.rmdir(str(log))
        log.write_bytes(lines('203.0.113.8', THRESHOLD + 5))
        wait_for_blocked(files, b'203.0.113.8')
        assert follower.proc.poll() is None
        follower.stop()
        err = follower.proc.stderr.read().decode()
    assert err.count('%s is not a regular file' % log) == 1, err


def test_a_long_blocklist_line_is_named_by_its_start(tmp_path):
    """A 10 MB line that is no address gave a 10 MB warning at every sync (issue 38, item 12)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    long_line = b'x' * (10 * 1024 * 1024)
    entries = sync.parse_entries(b'198.51.100.1\n' + long_line + b'\n' + b'\xff' * 300 + b'\n2001:db8::1\n')
    assert len(entries) == 2
    assert [len(name) for name in entries.skipped] == [83, 83]
    assert entries.skipped[0] == 'x' * 80 + '...'
    warning = entries.skipped_warning()
    assert len(warning) < 600 and warning.startswith('enforcement: 2 blocklist lines are not an address')


@pytest.mark.parametrize('kind', ['link', 'fifo', 'directory'])
def test_the_nginx_geo_file_must_be_a_regular_file(tmp_path, files, kind):
    """A link there was replaced by a 0644 copy of its (0600) target when the test failed, and a
    FIFO hung the sync forever while it held the blocklist's lock (issue 38, item 10): anything
    but a regular file is refused, exit status 4, and left as it is."""
    import subprocess
    import sys
    from conftest import CORE
    geo = tmp_path / 'geo.conf'
    target = tmp_path / 'secret.conf'
    if kind == 'link':
        target.write_bytes(b'# private\n')
        os.chmod(str(target), 0o600)
        os.symlink(str(target), str(geo))
    elif kind == 'fifo':
        os.mkfifo(str(geo))
    else:
        geo.mkdir()
    files.blocklist.write_bytes(b'198.51.100.1\n')
    args = [sys.executable, str(CORE)] + [str(a) for a in files.options()] + [
        '--enforcement', 'nginx', '--nginx-geo-file', str(geo), '--nginx-test-command', 'false',
        '--nginx-reload-command', 'true', '--enforce-now']
    got = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False,
                         env=dict(os.environ, TZ='UTC'))
    assert got.returncode == 4, got.stderr
    assert str(geo).encode() in got.stderr and b'not a regular file' in got.stderr
    if kind == 'link':
        assert os.path.islink(str(geo)) and target.read_bytes() == b'# private\n'
        assert os.stat(str(target)).st_mode & 0o777 == 0o600


# Lines that alone or together cover too much of the address space (issue 38, item 1), and
# which of them are refused: the two /1 halves merge into 0.0.0.0/0; of a block too wide, the
# widest lines go until the rest is not (three /9 side by side: one goes, a /8 is left, and with
# the other lines a /8 is too much in all: a second goes); fifteen /12 and the rest stay under.
TOO_BROAD = [([b'0.0.0.0/1', b'128.0.0.0/1'], [b'0.0.0.0/1', b'128.0.0.0/1']), ([b'::/1', b'8000::/1'], [b'::/1', b'8000::/1']),
             ([b'::ffff:0:0/97'], [b'::ffff:0:0/97']), ([b'64.0.0.0/4'], [b'64.0.0.0/4']), ([b'2001::/16'], [b'2001::/16']),
             ([b'10.0.0.0/9', b'10.128.0.0/9', b'11.0.0.0/9'], [b'10.0.0.0/9', b'10.128.0.0/9']),
             ([b'10.%d.0.0/12' % (16 * i) for i in range(15)], [])]
KEPT = [b'198.51.100.7', b'192.0.2.0/24', b'2001:db8::/48', b'100.0.0.0/16', b'0.0.0.0/1.5']


@pytest.mark.parametrize('lines,refused', TOO_BROAD, ids=range(len(TOO_BROAD)))
def test_lines_covering_too_much_of_the_address_space_are_refused(lines, refused):
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    entries = sync.parse_entries(b'\n'.join(lines + KEPT) + b'\n')
    assert sorted(entries.refused) == sorted(line.decode() for line in refused)
    for line in (b'198.51.100.7', b'192.0.2.0/24', b'2001:db8::/48', b'100.0.0.0/16'):
        assert line.decode() in entries.v4 + entries.v6
    if refused:
        assert entries.refused_warning().startswith('enforcement: %d blocklist line' % len(refused))
    else:
        assert entries.refused_warning() is None and '10.0.0.0/9' in entries.v4
    wider = sync.Entries(b'\n'.join(lines) + b'\n', {4: 1, 6: 1})       # settable: up to a /1 allowed
    assert len(wider.refused) == (1 if lines[0] in (b'0.0.0.0/1', b'::/1') else 0)     # the halves: one goes, a /1 stays


def _covered(elements):
    return sum(ipaddress.ip_network(text).num_addresses for text in elements)


@pytest.mark.parametrize('version,shares', [(4, 256), (4, 3), (6, 64), (6, 2)])
def test_blocks_each_narrower_than_the_share_refused_when_together_they_cover_more(version, shares):
    """Blocks apart from each other, each one address short of the share (a /8 of IPv4, a /32
    of IPv6): each passes alone, together they cover ``shares`` times it (256 of IPv4: almost
    everyone). The widest lines go until what stays covers at most one share; the server and
    the other version's lines stay blocked."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    bits, share_bits = (32, 8) if version == 4 else (128, 32)
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    step = 1 << (bits - share_bits)         # each block: the share's size, less its last address
    lines = []
    for block in range(shares):
        first = (block + 1) * step * 2 if version == 6 else block * step
        last = kind((first + step - 2, bits)).network_address
        lines += [str(net).encode() for net in ipaddress.summarize_address_range(kind((first, bits)).network_address, last)]
    singles = [b'2001:db8::7'] if version == 4 else [b'198.51.100.7']      # the other version's: never refused
    entries = sync.parse_entries(b'\n'.join(lines + singles) + b'\n')
    kept = entries.v4 if version == 4 else entries.v6
    assert _covered(kept) <= step, 'what stays covers more than a share'
    assert entries.refused and set(entries.refused) <= set(line.decode() for line in lines)
    assert _covered(kept) > step // 2, 'refused more than needed'
    assert ('2001:db8::7' in entries.v6) if version == 4 else ('198.51.100.7' in entries.v4)     # the other version's untouched
    assert entries.refused_warning().startswith('enforcement: %d blocklist line' % len(entries.refused))


@hsettings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=9, max_value=12), min_size=1, max_size=40),
       st.lists(st.integers(min_value=0, max_value=(1 << 32) - 1), max_size=60))
def test_an_address_appended_never_changes_which_network_lines_are_refused(prefixes, addresses):
    """The backends add appended single addresses alone (nftables.add, nginx.append), without a
    whole load: that is exact only if no address, anywhere, changes the refusals of a load."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    networks = [str(ipaddress.IPv4Network(((index << 24) + (1 << 23 if index % 2 else 0), prefix))).encode()
                for index, prefix in enumerate(prefixes)]     # apart from each other, about a /8 in all or more
    before = sync.parse_entries(b'\n'.join(networks) + b'\n')
    after = sync.parse_entries(b'\n'.join(networks + [str(ipaddress.IPv4Address(a)).encode() for a in addresses]) + b'\n')
    assert sorted(after.refused) == sorted(before.refused)


@hsettings(max_examples=80, deadline=None)
@given(st.integers(min_value=8, max_value=28), st.lists(st.tuples(st.integers(min_value=0, max_value=2),
                                                                  st.integers(min_value=0, max_value=(1 << 32) - 1)),
                                                        min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(min_value=0, max_value=11), st.sampled_from([-1, 0, 1, 'last+1'])), min_size=1, max_size=8))
def test_an_address_at_a_network_edge_never_changes_what_a_load_refuses(limit, networks, picks):
    """Issue 44, item 5: with the limit a /24 and 203.0.113.0/24 listed, 203.0.114.0 appended
    refused the /24 (its span merged with the address's); at the default limit, 11.0.0.0 did the
    same to 10.0.0.0/8. Networks as wide as the limit or a little narrower, anywhere, and
    addresses right next to their edges (and on them): the refusals never change."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    nets = [ipaddress.IPv4Network((value >> (32 - limit - extra) << (32 - limit - extra), limit + extra))
            for extra, value in networks]
    lines = [str(net).encode() for net in nets]
    before = sync.parse_entries(b'\n'.join(lines) + b'\n', Limits(limit))
    added = []
    for index, where in picks:
        net = nets[index % len(nets)]
        value = int(net.broadcast_address) + 1 if where == 'last+1' else int(net.network_address) + where
        if 0 < value < 1 << 32:
            added.append(str(ipaddress.IPv4Address(value)).encode())
    after = sync.parse_entries(b'\n'.join(lines + added) + b'\n', Limits(limit))
    assert sorted(after.refused) == sorted(before.refused), added


def test_the_issue_s_two_cases_refuse_nothing():
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync
    assert sync.parse_entries(b'203.0.113.0/24\n203.0.114.0\n', Limits(24)).refused == []
    assert sync.parse_entries(b'10.0.0.0/8\n11.0.0.0\n', Limits(8)).refused == []
    assert '10.0.0.0/8' in sync.parse_entries(b'10.0.0.0/8\n11.0.0.0\n', Limits(8)).v4


class Limits:
    """Settings with an IPv4 limit (the enforcement's minimum prefix)."""

    def __init__(self, v4):
        self.enforcement_min_prefix_v4, self.enforcement_min_prefix_v6 = v4, 32
