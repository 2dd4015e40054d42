# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The handle of an nftables table, asked of the kernel over netlink (one message).

nft itself is no cheap way to ask whether the table is there: nft 1.0.6 reads the whole
ruleset, every set element included, for any listing, even ``list tables`` (24 s of time
and 645 MB at 1,000,000 elements). The kernel answers one NFT_MSG_GETTABLE with the table's
attributes only. A table's handle is new each time it is made, so a handle equal to the one
recorded at the last load means the table was neither deleted (``nft flush ruleset``, what
``systemctl reload nftables`` does with Debian's configuration) nor made again since.
"""

from __future__ import absolute_import, division, print_function

import os
import socket
import struct

__metaclass__ = type

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_GETTABLE, NFT_MSG_NEWTABLE = 1, 0
NFTA_TABLE_NAME, NFTA_TABLE_HANDLE = 1, 4
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
FAMILIES = {'ip': 2, 'inet': 1, 'ip6': 10, 'arp': 3, 'bridge': 7, 'netdev': 5}
TIMEOUT = 5


def _attributes(data):
    found, pos = {}, 0
    while pos + 4 <= len(data):
        length, kind = struct.unpack_from('=HH', data, pos)
        if length < 4:
            break
        found[kind & 0x3fff] = data[pos + 4:pos + length]
        pos += (length + 3) & ~3
    return found


def table_handle(family, name):
    """The handle (an int) of table ``family name``; 0 when there is no such table; None
    when the kernel cannot be asked (no netlink, no permission): the caller loads then."""
    encoded = name.encode('ascii') + b'\0'
    attribute = struct.pack('=HH', 4 + len(encoded), NFTA_TABLE_NAME) + encoded + b'\0' * (-len(encoded) % 4)
    body = struct.pack('=BBH', FAMILIES[family], 0, 0) + attribute
    sequence = os.getpid() & 0xffff or 1
    message = struct.pack('=IHHII', 16 + len(body), NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETTABLE, NLM_F_REQUEST,
                          sequence, 0) + body
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    except (AttributeError, OSError):
        return None
    try:
        sock.settimeout(TIMEOUT)
        sock.bind((0, 0))
        sock.send(message)
        while True:
            data = sock.recv(65536)
            pos = 0
            while pos + 16 <= len(data):
                length, kind, dummy, seq, dummy = struct.unpack_from('=IHHII', data, pos)
                if length < 16:
                    return None
                if seq == sequence:
                    if kind == NLMSG_ERROR:
                        code = struct.unpack_from('=i', data, pos + 16)[0]
                        return 0 if code == -2 else None       # ENOENT: no such table
                    if kind == NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWTABLE:
                        handle = _attributes(data[pos + 20:pos + length]).get(NFTA_TABLE_HANDLE)
                        return struct.unpack('>Q', handle)[0] if handle and len(handle) == 8 else None
                pos += (length + 3) & ~3
    except (OSError, socket.timeout, struct.error):
        return None
    finally:
        sock.close()
