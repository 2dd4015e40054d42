# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client addresses: what may be appended, parsing for the precise rules, the host's own."""

from __future__ import absolute_import, division, print_function

import re

from ..base.errors import BotDetectorError
from ..base.text import printable, to_text

__metaclass__ = type

_IPV4 = re.compile(r'(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}'
                   r'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z')


def is_client_address(field):
    """True for a syntactically valid IPv4 or IPv6 address (not 0.0.0.0 or ::).

    Our own IPv4 pattern rather than ipaddress, whose acceptance of leading
    zeros changed between Python releases.
    """
    try:
        text = field.decode('ascii')
    except UnicodeDecodeError:
        return False
    if _IPV4.match(text):
        return text != '0.0.0.0'
    if ':' not in text or '%' in text:
        return False
    import ipaddress        # only where an address is parsed: not a spec run's top 20
    try:
        return not ipaddress.IPv6Address(text).is_unspecified
    except ValueError:
        return False


def parse_address(field):
    """An ipaddress object for a valid client address (see is_client_address), else None."""
    if not is_client_address(field):
        return None
    import ipaddress        # only where an address is parsed: not a spec run's top 20
    return ipaddress.ip_address(field.decode('ascii'))


def mapped_ipv4(field):
    """The IPv4 address (bytes) an IPv4-mapped IPv6 address stands for ('::ffff:192.0.2.20'
    -> '192.0.2.20', in any spelling), else None. A dual-stack server logs its IPv4 clients so."""
    if b'.' not in field or b':' not in field or b'ffff' not in field.lower():
        return None
    address = parse_address(field)
    mapped = address.ipv4_mapped if address is not None and address.version == 6 else None
    return None if mapped is None else str(mapped).encode('ascii')


def parse_network(text):
    """An ip_network for an address or a CIDR network (bytes), else None."""
    import ipaddress        # only where an address is parsed: not a spec run's top 20
    try:
        return ipaddress.ip_network(text.strip().decode('ascii'), strict=False)
    except (ValueError, UnicodeDecodeError):
        return None


def entry_key(text):
    """What an activity-log line names, as one key for every spelling of it: an unblock of
    2001:DB8::7 or 10.0.0.1/32 ends the record of 2001:db8::7 or 10.0.0.1 (lists/removal.py
    removes those lines). A network with host bits set (203.0.113.5/22) is its own, apart from
    the network it would be, as an unblock takes it (lists/removal.Matcher). Any other text is
    its own key."""
    if b':' in text or b'/' in text:        # a plain IPv4 address has one spelling
        network = parse_network(text)
        if network is not None:
            from .ranges import host_bits_network      # a network's text only: a cron run of addresses imports none
            if host_bits_network(text) is not None:        # as written, apart from its network
                return ('%s/%d' % (_address_of(text), network.prefixlen)).encode('ascii')
            return str(network.network_address if network.num_addresses == 1 else network).encode('ascii')
    return text


def _address_of(text):
    """The ipaddress object of the address part of a network's text, or None."""
    import ipaddress        # only where a network is parsed
    try:
        return ipaddress.ip_address(text.strip().split(b'/', 1)[0].decode('ascii'))
    except (ValueError, UnicodeDecodeError):
        return None


def server_addresses():
    """Each address ``hostname -i`` prints (spec: server_ip)."""
    import subprocess       # only runs without --server-ip pay for it
    try:
        # The core is also the host command, run without Ansible: no AnsibleModule.run_command.
        proc = subprocess.run(['hostname', '-i'],  # pylint: disable=ansible-bad-function
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('cannot determine the server address: hostname -i: %s (give it with --server-ip)' % exc)
    if proc.returncode != 0:
        detail = printable(to_text(proc.stderr)).strip() or 'exit status %d' % proc.returncode
        raise BotDetectorError('cannot determine the server address: hostname -i: %s (give it with --server-ip)' % detail)
    return proc.stdout.split()
