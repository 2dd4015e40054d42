# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``trusted_proxies``: the client behind a trusted proxy, read from X-Forwarded-For as
nginx's realip module reads it (the JSON formats, which log the header)."""

from __future__ import absolute_import, division, print_function

import ipaddress

__metaclass__ = type


def forwarded_address(entry):
    """The address of one X-Forwarded-For element as realip reads it: '198.51.100.9:51234' and
    '[2001:db8::9]:443' without their ports and brackets, '::ffff:198.51.100.9' as IPv4; None
    for anything that is no address ('unknown', an obfuscated node name)."""
    if entry.startswith('['):
        entry = entry[1:].partition(']')[0]
    elif entry.count(':') == 1:
        entry = entry.partition(':')[0]
    try:
        address = ipaddress.ip_address(entry)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class TrustedProxies:
    """``trusted_proxies``: when the logged client is one of them, the client is the
    right-most X-Forwarded-For address that is not (nginx's real_ip_recursive); never the
    left-most, which the client writes. The elements are split at commas and blanks, empty
    ones skipped. When none is left that is not a trusted proxy (no header, only proxies, or
    an element that is no address, which ends the walk), the line comes from no one (None):
    a trusted proxy is never the client, for blocking it would cut off everyone behind it."""

    def __init__(self, networks):
        self.networks = [ipaddress.ip_network(n, strict=False) for n in networks]
        self.cache = {}

    def _address(self, text):
        """(address or None, trusted) of one element, cached: a busy log repeats them."""
        found = self.cache.get(text)
        if found is None:
            address = forwarded_address(text)
            trusted = address is not None and any(address in n for n in self.networks if n.version == address.version)
            if len(self.cache) > 65536:
                self.cache.clear()
            found = self.cache[text] = (address, trusted)
        return found

    def client(self, address, forwarded):
        if not self._address(address.strip())[1]:
            return address
        for entry in reversed(str(forwarded or '').replace(',', ' ').split()):
            found, trusted = self._address(entry)
            if found is None:
                return None
            if not trusted:
                return str(found)
        return None
