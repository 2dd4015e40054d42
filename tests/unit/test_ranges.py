"""Precise-mode list membership (ranges.Networks) against ipaddress, the definition: random
lists of addresses and networks in every spelling (mapped IPv6, blanks around, comments),
random targets of every prefix length, both questions (contains, overlaps)."""
import ipaddress
import random

import pytest

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import ranges


def oracle_network(text):
    try:
        net = ipaddress.ip_network(text.strip().decode('ascii'), strict=False)
    except (ValueError, UnicodeDecodeError):
        return None
    if net.version == 6 and net.prefixlen >= 96 and int(net.network_address) >> 32 == 0xffff:
        net = ipaddress.ip_network((int(net.network_address) & 0xffffffff, net.prefixlen - 96))
    return net


def random_v4(rng):
    # A few busy /16s so that the targets meet the entries.
    return '%d.%d.%d.%d' % (rng.choice([10, 198, 203]), rng.choice([0, 51, 113]), rng.randrange(4), rng.randrange(256))


def random_entry(rng):
    kind = rng.randrange(8)
    v4 = random_v4(rng)
    if kind < 3:
        return v4
    if kind == 3:
        return '%s/%d' % (v4, rng.randrange(8, 33))
    if kind == 4:
        packed = ipaddress.IPv4Address(v4).packed
        return rng.choice(['::ffff:%s' % v4, '::FFFF:%x:%x' % (packed[0] << 8 | packed[1], packed[2] << 8 | packed[3]),
                           '::ffff:%s/%d' % (v4, rng.randrange(96, 129))])
    if kind == 5:
        return '2001:db8:%x::%x/%d' % (rng.randrange(4), rng.randrange(65536), rng.randrange(32, 129))
    if kind == 6:
        return '2001:db8:%x::%x' % (rng.randrange(4), rng.randrange(65536))
    return rng.choice(['# comment', 'not an address', '010.0.0.1', '', '1.2.3', v4 + ' # note'])


@pytest.mark.parametrize('seed', range(30))
def test_membership_is_that_of_ipaddress(seed):
    rng = random.Random(seed)
    entries = [random_entry(rng) for dummy in range(rng.randrange(1, 300))]
    content = '\n'.join(rng.choice(['', ' ', '\t']) + e + rng.choice(['', ' ', '\r']) for e in entries).encode()
    networks = [n for n in (oracle_network(line) for line in content.split(b'\n') if line.strip()) if n is not None]
    subject = ranges.Networks(content)
    for dummy in range(200):
        if rng.random() < 0.8:
            target = ipaddress.ip_network('%s/%d' % (random_v4(rng), rng.choice([8, 12, 16, 20, 24, 28, 31, 32])), strict=False)
        else:
            text = '2001:db8:%x::%x/%d' % (rng.randrange(4), rng.randrange(65536), rng.choice([32, 48, 64, 112, 128]))
            target = ipaddress.ip_network(text, strict=False)
        parsed = (target.version, target.prefixlen, int(target.network_address))
        contains = any(n.version == target.version and target.subnet_of(n) for n in networks)
        overlaps = any(n.version == target.version and target.overlaps(n) for n in networks)
        assert subject.contains(*parsed) == contains, (target, entries)
        assert subject.overlaps(*parsed) == overlaps, (target, entries)


@pytest.mark.parametrize('text,expected', [
    (b'198.51.100.8', (4, 0xc6336408)), (b'::ffff:198.51.100.8', (4, 0xc6336408)), (b'::FFFF:C633:6408', (4, 0xc6336408)),
    (b'0:0:0:0:0:ffff:c633:6408', (4, 0xc6336408)), (b'2001:db8::1', (6, 0x20010db8 << 96 | 1)),
    (b'0.0.0.0', None), (b'::', None), (b'::ffff:0.0.0.0', None), (b'010.0.0.1', None), (b'fe80::1%eth0', None),
    (b'example.org', None), (b'', None),
])
def test_client(text, expected):
    assert ranges.client(text) == expected


@pytest.mark.parametrize('length', [8, 12, 16, 20, 24, 31, 32])
def test_v4_groups_are_the_networks(length):
    rng = random.Random(length)
    fields = ['%d.%d.%d.%d' % (rng.randrange(1, 256), rng.randrange(256), rng.randrange(256), rng.randrange(256))
              for dummy in range(2000)] + ['1.0.0.0', '255.255.255.255', '10.0.0.1']
    expected = [ipaddress.ip_network('%s/%d' % (f, length), strict=False) for f in fields]
    expected = [(str(n.network_address) if length == 32 else str(n)).encode() for n in expected]
    identifiers, keys_of = ranges.v4_groups([f.encode() for f in fields], length)
    identifiers = list(identifiers)
    assert list(keys_of(identifiers) if keys_of else identifiers) == expected
