# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``trusted_proxies``: the client behind a trusted proxy, read from X-Forwarded-For as
nginx's realip module reads it (the JSON formats, which log the header)."""

from __future__ import absolute_import, division, print_function

import ipaddress

__metaclass__ = type


class TrustedProxies:
    """``trusted_proxies``: when the logged client is one of them, the client is the
    right-most X-Forwarded-For address that is not (nginx's real_ip_recursive); never the
    left-most, which the client writes. An entry that is no address ends the walk: the
    client is then the trusted proxy that passed it on."""

    def __init__(self, networks):
        self._address = ipaddress.ip_address
        self.networks = [ipaddress.ip_network(n, strict=False) for n in networks]
        self.cache = {}

    def trusted(self, text):
        found = self.cache.get(text)
        if found is None:
            try:
                address = self._address(text.strip())
            except ValueError:
                found = 'invalid'
            else:
                found = 'yes' if any(address in n for n in self.networks if n.version == address.version) else 'no'
            if len(self.cache) > 65536:
                self.cache.clear()
            self.cache[text] = found
        return found

    def client(self, address, forwarded):
        if self.trusted(address) != 'yes':
            return address
        for entry in reversed(str(forwarded).split(',')):
            entry = entry.strip()
            verdict = self.trusted(entry)
            if verdict == 'invalid':
                return address
            address = entry
            if verdict == 'no':
                return address
        return address
