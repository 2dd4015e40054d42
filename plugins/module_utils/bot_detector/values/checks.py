# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of settings' values that need more than their row (settings.py calls them), and the
nearest known name to a mistyped one, which the config file and the role both suggest."""

from __future__ import absolute_import, division, print_function

import socket

from ..base.errors import bad_option

__metaclass__ = type


def check_server_ips(items):
    """Each server address is an IPv4 or IPv6 address: a typo would leave the server's own
    busy address to be blocked. Raises a bad option (exit 2) naming the first that is not."""
    for item in items or ():
        for family in (socket.AF_INET, socket.AF_INET6):
            try:
                socket.inet_pton(family, item.strip())
                break
            except (OSError, ValueError):
                continue
        else:
            raise bad_option('server_ips: %r is not an IP address' % (item,))


def nearest(name, known):
    """The known name nearest to ``name`` (a typo's intended one), or None."""
    import difflib      # only a mistyped name pays for it
    near = difflib.get_close_matches(name, sorted(known), 1, 0.7)
    return near[0] if near else None
