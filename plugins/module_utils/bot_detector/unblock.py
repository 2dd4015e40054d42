# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removing entries from the blocklist: the unblock entry point (``--unblock ADDR``, module
``mode: unblock``), and the removal that ban expiry uses too.

The only rewrite of an operator's file the detector ever makes, so: under the run's lock;
every other line kept byte for byte and in order; the file replaced atomically with the
owner and mode it had (replace.py); then one activity-log line per address removed.
"""

from __future__ import absolute_import, division, print_function

import os

from .addresses import parse_network
from .clock import date_default_format
from .errors import bad_option
from .lists import count_lines
from .messages import NOT_LISTED, UNBLOCK_REASON, activity_removed, unblocking
from .metrics import recorded
from .replace import read_for_rewrite, replace_file
from .result import Result
from .text import to_bytes, to_text
from .writer import BlocklistWriter, rewrite_target

__metaclass__ = type


def split_lines(content):
    """``content`` as its lines, each with its newline (the last one may lack it):
    b''.join(split_lines(c)) == c."""
    pieces = content.split(b'\n')
    last = pieces.pop()
    return [piece + b'\n' for piece in pieces] + ([last] if last else [])


def wanted_addresses(addresses):
    """The addresses to remove as bytes, in order, once each: each one non-empty line."""
    wanted = []
    for address in addresses:
        data = to_bytes(address).strip() if isinstance(address, (str, bytes)) else None
        if not data or b'\n' in data or b'\r' in data:
            raise bad_option('unblock: each address must be one non-empty line of text, got %r' % (address,))
        if data not in wanted:
            wanted.append(data)
    return wanted


class Matcher:
    """Which wanted address a blocklist line is: the same text (blanks around the line
    ignored), or the same address or network written another way (2001:db8::BAD and
    2001:db8:0::bad; 10.0.0.1 and 10.0.0.1/32)."""

    def __init__(self, wanted):
        self.by_text = dict((address, address) for address in wanted)
        self.by_network = {}
        for address in wanted:
            network = parse_network(address)
            if network is not None:
                self.by_network.setdefault(network, address)
                if network.version == 4 and network.prefixlen == 32:
                    # A plain IPv4 line is looked up by its text only (below): its one spelling.
                    self.by_text.setdefault(str(network.network_address).encode('ascii'), address)

    def __call__(self, line):
        key = line.strip()
        found = self.by_text.get(key)
        if found is None and self.by_network and (b':' in key or b'/' in key):
            # Only such lines can spell an address another way: a plain IPv4 address has
            # one spelling, so a long blocklist is not parsed line by line.
            network = parse_network(key)
            found = self.by_network.get(network) if network is not None else None
        return found


def without(content, wanted):
    """``content`` without the lines that are one of ``wanted``: (new content, {address:
    lines removed}, the indexes of the removed lines). Every other byte is kept, in order."""
    match = Matcher(wanted)
    kept, removed, indexes = [], {}, []
    for index, piece in enumerate(split_lines(content)):
        address = match(piece.rstrip(b'\n'))
        if address is None:
            kept.append(piece)
        else:
            removed[address] = removed.get(address, 0) + 1
            indexes.append(index)
    return b''.join(kept), removed, indexes


def remove(writer, wanted, reason_of, result, check_mode):
    """Remove the lines that are one of ``wanted`` from the writer's blocklist (the caller
    holds the lock unless ``check_mode``), then log one activity line per address removed,
    its reason ``reason_of(address)``. Returns {address: lines removed}; files the removed
    lines with ``result``. In check mode nothing is written."""
    target = rewrite_target(writer.blocklist)       # the file the appends go to
    content, info = read_for_rewrite(target)
    if result.blocklist_before is None:
        result.blocklist_before = content
    new_content, removed, indexes = without(content, wanted)
    if removed and not check_mode:
        # The activity log checked first, as an addition does: a removal it cannot record
        # is not made (an absent log whose directory takes it is created below).
        activity_fd = writer.open_for_append(writer.activity_log, create=False)
        try:
            replace_file(target, new_content, info)
            for address in wanted:
                if address in removed:
                    if activity_fd is None:
                        activity_fd = writer.open_for_append(writer.activity_log)
                    line = activity_removed(date_default_format(), to_text(address), reason_of(address))
                    writer.write_line(activity_fd, writer.activity_log, to_bytes(line) + b'\n', fsync=True)
        finally:
            if activity_fd is not None:
                os.close(activity_fd)
    result.removed_indexes.extend(indexes)
    result.blocklist_lines = count_lines(new_content)
    return removed, new_content


def unblock(settings, addresses, check_mode=False, emit=None, on_warning=None):
    """Remove ``addresses`` from the blocklist, under the run's lock: a line equal to one of
    them goes, every other line stays as it was. An address not listed is a message."""
    result = Result(check_mode, emit, on_warning)
    wanted = wanted_addresses(addresses)
    result.unblocked, result.not_listed = [], []
    with recorded(settings, result):
        writer = BlocklistWriter(settings.blocklist, settings.activity_log, settings.lock_timeout)
        if not check_mode:
            writer.lock()
        try:
            removed = remove(writer, wanted, lambda address: UNBLOCK_REASON, result, check_mode)[0]
        finally:
            writer.unlock()
        for address in wanted:
            if address in removed:
                result.unblocked.append({'address': to_text(address), 'lines': removed[address]})
    for address in wanted:
        text = to_text(address)
        if address in removed:
            result.say(unblocking(text, check_mode))
        else:
            result.say(NOT_LISTED % text)
            result.not_listed.append(text)
    return result
