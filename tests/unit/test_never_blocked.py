"""What is never blocked (decision/never_blocked.py), the one predicate of the enforcement, the
fleet and the answers: the server's addresses, loopback, the allow-list and the trusted proxies,
each found in every spelling of every address, whatever spelling the setting or the list used;
and never more than they hold. The spellings are written here from the address's integer (not
by the code under test): upper case, leading zeros, each run of zero groups compressed or
none, a /32 or /128, IPv4-mapped IPv6 with a dotted quad or in hex (::ffff:a09:909)."""
import ipaddress
import os

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.never_blocked import (
    NeverBlocked, never_blocked)
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import never_blocked as never_blocked_module
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

V4 = st.integers(min_value=1, max_value=(1 << 32) - 1)
V6 = st.integers(min_value=1, max_value=(1 << 128) - 1).filter(lambda value: value >> 32 != 0xffff)


def _groups_spelled(groups, compress, upper, leading):
    """Eight 16-bit groups as text: the run of zero groups from ``compress`` (a (start, end)
    pair, or None) written as '::', each group in upper case or with leading zeros or not."""
    texts = [('%04x' if leading else '%x') % group for group in groups]
    if upper:
        texts = [text.upper() for text in texts]
    if compress is None:
        return ':'.join(texts)
    start, end = compress
    return ':'.join(texts[:start]) + '::' + ':'.join(texts[end:])


def _zero_runs(groups):
    """Every run of consecutive zero groups, as (start, end), the one-group runs included."""
    runs = []
    for start in range(8):
        for end in range(start + 1, 9):
            if all(group == 0 for group in groups[start:end]):
                runs.append((start, end))
    return runs


def spellings_v6(value):
    """Every way of writing the IPv6 address ``value`` that an operator or a log might use."""
    groups = [(value >> (16 * (7 - i))) & 0xffff for i in range(8)]
    found = set()
    for compress in [None] + _zero_runs(groups):
        for upper in (False, True):
            for leading in (False, True):
                found.add(_groups_spelled(groups, compress, upper, leading))
    found.update([text + '/128' for text in list(found)[:4]])
    return sorted(found)


def spellings_v4(value):
    """Every way of writing the IPv4 address ``value``: dotted, /32, and IPv4-mapped IPv6 in
    its dotted and hex forms, in any case and compression."""
    dotted = '.'.join(str((value >> shift) & 0xff) for shift in (24, 16, 8, 0))
    mapped = (0xffff << 32) | value
    found = {dotted, dotted + '/32', '::ffff:' + dotted, '::FFFF:' + dotted, '0:0:0:0:0:ffff:' + dotted,
             '0::ffff:' + dotted, '::ffff:%s/128' % dotted}
    found.update(spellings_v6(mapped))       # the hex forms: ::ffff:a09:909, ::FFFF:0A09:0909, ...
    return sorted(found)


def spellings(version, value):
    return spellings_v4(value) if version == 4 else spellings_v6(value)


def test_the_spellings_written_here_are_the_address():
    """The test's own spellings checked against ipaddress, so a wrong one cannot pass unseen."""
    for text in spellings_v6(0x20010db8000000000000000000000005):
        assert ipaddress.ip_network(text).network_address == ipaddress.ip_address('2001:db8::5'), text
    assert '2001:db8:0::5' in spellings_v6(0x20010db8000000000000000000000005)
    for text in spellings_v4(0x0a090909):
        address = ipaddress.ip_network(text).network_address
        assert getattr(address, 'ipv4_mapped', None) or address == ipaddress.ip_address('10.9.9.9'), text
    assert '::ffff:a09:909' in spellings_v4(0x0a090909)


ADDRESS = st.one_of(st.tuples(st.just(4), V4), st.tuples(st.just(6), V6))


def _settings(tmp_path, servers=None, allowed=(), proxies=None, **more):
    allow = tmp_path / 'allow'
    allow.write_text(''.join('%s\n' % line for line in allowed))
    return Settings(server_ips=servers, exclusions_file=str(allow), trusted_proxies=proxies, **more)


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(listed=ADDRESS, other=ADDRESS, where=st.sampled_from(['server', 'allow', 'proxy']), data=st.data())
def test_every_spelling_of_a_never_blocked_address_is_never_blocked(tmp_path, listed, other, where, data):
    """Listed in one spelling (server_ips, an allow-list line, a trusted proxy), asked in any
    other: never blocked; another address in any spelling: not (unless it is the same)."""
    version, value = listed
    written = data.draw(st.sampled_from(spellings(version, value)), label='written')
    chosen = {'server': {'servers': [written.split('/')[0]]},      # server_ips are addresses
              'allow': {'allowed': ['  %s  ' % written], 'servers': ['192.0.2.1']},
              'proxy': {'proxies': [written], 'servers': ['192.0.2.1']}}[where]
    exempt = never_blocked(_settings(tmp_path, **chosen))
    for asked in spellings(version, value):
        assert exempt.address(asked.encode('ascii')), (written, asked)
        assert exempt.address(asked), (written, asked)       # text as bytes
    assert exempt.network(version, value, value) and exempt.covers(version, value, value)
    other_version, other_value = other
    same = (other_version, other_value) == (version, value) or (where != 'server' and other == (4, 0xc0000201)) \
        or (other_version == 4 and other_value >> 24 == 127) or (other_version, other_value) == (6, 1)
    for asked in spellings(other_version, other_value)[:6]:
        assert exempt.address(asked) == same, (written, asked)


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(listed=ADDRESS, length=st.integers(min_value=0, max_value=24), probe=st.integers(min_value=0))
def test_an_allowed_network_spares_every_address_inside_and_a_span_touching_it(tmp_path, listed, length, probe):
    """An allow-list network: every address in it in any spelling; a span holds a never-blocked
    address exactly when it overlaps it (``network``), and lies in it exactly when inside (``covers``)."""
    version, value = listed
    bits = 32 if version == 4 else 128
    length = bits - length
    first = value >> (bits - length) << (bits - length)
    last = first | ((1 << (bits - length)) - 1)
    if first == 0:
        return
    kind = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
    exempt = never_blocked(_settings(tmp_path, servers=['192.0.2.1'], allowed=['%s' % kind((first, length))]))
    inside = first + probe % (last - first + 1)
    for asked in spellings(version, inside)[:8]:
        assert exempt.address(asked), asked
    outside = last + 1
    if outside < (1 << bits) and not (version == 4 and (outside >> 24 == 127 or outside == 0xc0000201)) \
            and not (version == 6 and (outside >> 32 == 0xffff or outside == 1)):
        assert not exempt.address(spellings(version, last + 1)[0])
        assert exempt.network(version, last, last + 1) and not exempt.covers(version, last, last + 1)
        assert not exempt.network(version, last + 1, last + 1)


def test_loopback_and_the_server_are_never_blocked_and_junk_is_not_an_address(tmp_path):
    exempt = never_blocked(_settings(tmp_path, servers=['2001:DB8::1', '198.51.100.4']))
    for text in (b'127.0.0.1', b'127.255.0.9', b'::1', b'0::1', b'::ffff:127.0.0.1', b'::ffff:7f00:1', b'2001:db8:0::1',
                 b'2001:db8::1/128', b'198.51.100.4/32', b'::ffff:c633:6404', b'198.51.100.0/24'):
        assert exempt.address(text), text
    for text in (b'', b'x', b'198.51.100.5', b'10.0.0.1', b'0.0.0.0', b'::', b'fe80::1%eth0', b'2001:db8::2', b'::2',
                 b'198.51.100.4 ', b'198.51.100.04', b'::ffff:198.51.100.5', b'2001:db8::1/0', b'198.51.100.4,x'):
        assert exempt.address(text) == (text == b'198.51.100.4 '), text      # blanks around: the address


def test_the_server_from_hostname_when_no_server_ips(tmp_path):
    """Without server_ips, each address `hostname -i` prints is never blocked."""
    import subprocess
    printed = subprocess.run(['hostname', '-i'], stdout=subprocess.PIPE, check=True).stdout.split()
    exempt = never_blocked(_settings(tmp_path))
    assert printed and all(exempt.address(address) for address in printed)


@pytest.mark.parametrize('line, spared', [
    ('192.0.2.20/0', False), ('192.0.2.20/3', False), ('10.0.0.0/7', False), ('10.0.0.0/8', True),
    ('2001:db8::/31', False), ('2001:db8::/32', True), ('::/0', False), ('::ffff:0:0/96', False), ('::ffff:10.0.0.0/104', True),
])
def test_an_allow_list_line_or_proxy_wider_than_the_limits_spares_no_one(tmp_path, line, spared):
    """A typo (192.0.2.20/0) or a line wider than enforcement_min_prefix_v4/_v6 spares no one, and is named."""
    for where in ('allowed', 'proxies'):
        exempt = never_blocked(_settings(tmp_path, servers=['198.51.100.1'], **{where: [line]}))
        probe = '10.1.2.3' if '10.' in line or '::ffff' in line else ('2001:db8::9' if ':' in line else '192.0.2.20')
        assert exempt.address(probe) == spared, (where, line)
        assert exempt.too_wide == ([] if spared else [line.encode('ascii')]), (where, line)
    narrow = never_blocked(_settings(tmp_path, servers=['198.51.100.1'], allowed=['10.0.0.0/8'],
                                     enforcement_min_prefix_v4=16))
    assert not narrow.address('10.1.2.3') and narrow.too_wide == [b'10.0.0.0/8']


@pytest.mark.parametrize('line', ['::ffff:0:0/80', '::ffff:0:0/95', '::/64', '0::/33', '::ffff:1.2.3.4/81'])
def test_an_ipv6_line_holding_every_ipv4_mapped_address_is_as_wide_as_ipv4_slash_0(tmp_path, line):
    """A line holding all of ::ffff:0:0/96 (every IPv4 client, spelled as IPv6) is as wide as an
    IPv4 /0, however narrow as IPv6: too wide, named, and left out, as ::ffff:0:0/96 is."""
    for where in ('allowed', 'proxies'):
        exempt = never_blocked(_settings(tmp_path, servers=['198.51.100.1'], **{where: [line, '2001:db8::/48']}))
        assert exempt.too_wide == [line.encode('ascii')], (where, line)
        assert not exempt.address('10.1.2.3') and not exempt.address('::ffff:10.1.2.3') and not exempt.address('::2')
        assert exempt.address('2001:db8::9')      # the narrow line beside it still spares
        assert 'spares no one: %r' % line in exempt.too_wide_warning('enforcement')


@pytest.mark.parametrize('line', ['::fffe:0:0/96', '::1:0:0:0/80', '::ffff:10.0.0.0/104', '64:ff9b::/96'])
def test_an_ipv6_line_beside_the_ipv4_mapped_range_is_no_wider_than_it_is(tmp_path, line):
    exempt = never_blocked(_settings(tmp_path, servers=['198.51.100.1'], allowed=[line]))
    assert exempt.too_wide == [], line


def test_the_server_and_loopback_are_never_bounded():
    exempt = NeverBlocked([b'127.0.0.0/8', b'::1', b'192.0.2.0/24'], [], min_prefix={4: 30, 6: 120})
    assert exempt.address('127.9.9.9') and exempt.address('192.0.2.200') and exempt.too_wide == []


def test_the_null_device_is_an_empty_allow_list_and_a_directory_fails(tmp_path):
    assert never_blocked(Settings(server_ips=['192.0.2.1'], exclusions_file=os.devnull)).spans[4] == [
        (0x7f000000, 0x7fffffff), (0xc0000201, 0xc0000201)]
    assert never_blocked(Settings(server_ips=['192.0.2.1'], exclusions_file=str(tmp_path / 'missing'))).address('127.0.0.1')
    with pytest.raises(BotDetectorError) as raised:
        never_blocked(Settings(server_ips=['192.0.2.1'], exclusions_file=str(tmp_path)))
    assert raised.value.message == 'cannot read %s: not a regular file: the allow-list is needed to exempt its clients' % tmp_path


@pytest.mark.parametrize('typo', ['192.0.2.20/0', '192.0.2.20/3', '::ffff:0:0/96', '::ffff:0:0/80'])
def test_an_allow_list_typo_spares_no_one_in_the_enforcement_with_a_warning_and_a_metric(tmp_path, typo):
    """Issue 44, item 6: a typo /0 loaded allowed_v4 { 0.0.0.0/0 }, exit 0, in_sync 1, no word."""
    from conftest import run_core
    (tmp_path / 'blocklist').write_text('192.0.2.20\n')
    (tmp_path / 'allow').write_text('198.51.100.9\n%s\n' % typo)
    geo = tmp_path / 'blocked.conf'
    run = run_core(['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions',
                    tmp_path / 'allow', '--server-ip', '203.0.113.1', '--enforcement', 'nginx', '--nginx-geo-file', geo,
                    '--nginx-test-command', 'true', '--nginx-reload-command', 'true', '--metrics-file', tmp_path / 'metrics',
                    '--enforce-now'])
    assert run.returncode == 0, run
    assert geo.read_text().splitlines()[2:] == ['192.0.2.20 1;']
    assert run.stderr.decode().splitlines() == [
        "bot-detector: warning: enforcement: 1 allow-list line or trusted proxy is wider than a /8 of IPv4 or a /32 of "
        "IPv6 and spares no one: '%s'" % typo]
    assert 'bot_detector_enforcement_never_blocked_too_wide{backend="nginx"} 1' in (tmp_path / 'metrics').read_text()


def test_an_allow_list_typo_spares_no_one_in_the_precise_detection(tmp_path):
    """The same rule for the precise rules' allow-list: a /0 line allow-listed every client."""
    import time
    import loggen
    from conftest import run_core
    now = time.time()
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(loggen.line('192.0.2.20', now, path='/job/%d' % i) for i in range(1100)))
    (tmp_path / 'allow').write_text('192.0.2.20/0\n')
    run = run_core(['--blocklist', tmp_path / 'blocklist', '--activity-log', tmp_path / 'activity', '--exclusions',
                    tmp_path / 'allow', '--server-ip', '203.0.113.1', '--rules', 'precise', log])
    assert run.returncode == 0, run
    assert (tmp_path / 'blocklist').read_text() == '192.0.2.20\n'
    assert "allow-list line or trusted proxy is wider than a /8 of IPv4 or a /32 of IPv6 and spares no one: '192.0.2.20/0'" \
        in run.stderr.decode()


def test_an_unchanged_allow_list_is_parsed_once_per_process_and_a_changed_one_again():
    """A follower syncs every few seconds beside a large allow-list: the spans of the same lines are
    kept (issue 44 item 9), and a change to any line is parsed again."""
    calls = []

    def counting_span(line):
        calls.append(line)
        return never_blocked_module.span(line)
    content = b'\n'.join(b'198.51.%d.%d' % (i // 256, i % 256) for i in range(2000)) + b'\n'
    first = NeverBlocked([b'192.0.2.1'], content, counting_span).spans
    parsed = len(calls)
    assert parsed >= 2000
    again = NeverBlocked([b'192.0.2.1'], content, counting_span)
    assert again.spans == first and len(calls) == parsed
    assert again.address(b'198.51.7.207') and not again.address(b'198.51.8.0')
    changed = NeverBlocked([b'192.0.2.1'], content + b'198.51.8.0\n', counting_span)
    assert changed.address(b'198.51.8.0') and len(calls) > parsed
    # The enforcement asks for the digest first; its spans are kept by it, and found by it again.
    digested = NeverBlocked([b'192.0.2.1'], content, counting_span)
    assert digested.key and digested.spans == first
    parsed = len(calls)
    again = NeverBlocked([b'192.0.2.1'], bytes(bytearray(content)), counting_span)
    assert again.key == digested.key and again.spans == first and len(calls) == parsed
