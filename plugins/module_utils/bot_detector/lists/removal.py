# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Removing entries from the blocklist: the unblock entry point (``--unblock ADDR``, module
``mode: unblock``), and the removal that ban expiry uses too.

The only rewrite of an operator's file the detector ever makes, so: under the run's lock;
every other line kept byte for byte and in order; the file replaced atomically with the
owner and mode it had (replace.py), after one activity-log line per address removed
(see remove for what a kill or a writer that takes no lock leaves).
"""

from __future__ import absolute_import, division, print_function

import os
import re
import socket
from functools import partial

from ..base.clock import date_default_format
from ..base.errors import bad_option
from ..base.messages import activity_removed
from ..base.text import to_bytes, to_text, write_all
from ..decision.addresses import entry_key, parse_network
from ..decision.ranges import host_bits_network
from .content import count_lines, read_list
from .replace import open_for_rewrite, replace_file
from .writer import removal_journal, removal_pending, rewrite_target

__metaclass__ = type

_IPV4 = re.compile(br'(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z')
REWRITE_ATTEMPTS = 8    # then the file is replaced even if it changed (what was appended is carried over)


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
    2001:db8:0::bad; 10.0.0.1 and 10.0.0.1/32). A network with host bits set (203.0.113.0/22)
    is that address and prefix only, in any spelling: it may as well be a typo for a /24 as for
    the wider 203.0.112.0/22."""

    def __init__(self, wanted):
        self.by_text = dict((address, address) for address in wanted)
        self.by_network = {}
        for address in wanted:
            key = _network_key(address)
            if key is not None and host_bits_network(address) is not None:
                # Its own spelling's key (2001:DB8::5/48 is 2001:db8::5/48), not the network's.
                self.by_network.setdefault(('host bits', entry_key(address)), address)
            elif key is not None:
                self.by_network.setdefault(key, address)
                if key[0] == 4 and key[1] == 32:
                    # A plain IPv4 line is looked up by its text only (below): its one spelling.
                    self.by_text.setdefault(socket.inet_ntoa(key[2].to_bytes(4, 'big')).encode('ascii'), address)

    def __call__(self, line):
        key = line.strip()
        found = self.by_text.get(key)
        if found is None and self.by_network and (b':' in key or b'/' in key):
            # Only such lines can spell an address another way: a plain IPv4 address has
            # one spelling, so a long blocklist is not parsed line by line.
            found = self.by_network.get(_network_key(key))
            if found is None and b'/' in key and host_bits_network(key) is not None:
                found = self.by_network.get(('host bits', entry_key(key)))
        return found


def _network_key(text):
    """(version, prefix length, first address) of an address or network as parse_network
    reads it, None for other text; a plain IPv4 address without the ipaddress module (an
    expiry may name a million)."""
    text = text.strip()
    if _IPV4.match(text):
        return 4, 32, int.from_bytes(socket.inet_aton(text.decode('ascii')), 'big')
    network = parse_network(text)
    return None if network is None else (network.version, network.prefixlen, int(network.network_address))


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


def remove(writer, wanted, reason_of, result, check_mode, line_of=activity_removed, removed_last=None):
    """Remove the lines that are one of ``wanted`` from the writer's blocklist (the caller
    holds the lock unless ``check_mode``), each address removed logged first, its reason
    ``reason_of(address)``. Returns ({address: lines removed}, the content after); files
    the removed lines with ``result``. In check mode nothing is written.

    The activity lines go first, in one write and one fsync: a removal that cannot be
    recorded is not made, and a kill at any point leaves no entry removed without its line
    (at worst lines for entries still listed, which the next run takes out: finish_interrupted). Writers
    that take no lock may append meanwhile: the file is replaced only if it is as it was
    read (inode, size, mtime), else the removal is done again on what it holds now; what
    reaches the old file between that test and the rename is appended to the new one.
    ``removed_last(activity_log)``: {address: whether its last activity line is its removal}
    for a killed removal's finish (another list's wording than the blocklist's: lists/answers.py)."""
    target = rewrite_target(writer.blocklist)       # the file the appends go to
    journal = Journal(target)
    logged = set() if check_mode else journal.unfinished(writer.activity_log, removed_last)
    wanted = list(wanted) + sorted(logged - set(wanted))
    activity_fd, fds = None, []

    def before_rename(new, lines, removed, last, size, info):
        """The new file is written: note the removal in the journal, log it, then rename
        only over the file read (the last attempt: over what it has become)."""
        try:
            journal.write(info, new, removed)
            if lines:
                fd = activity_fd if activity_fd is not None else (fds or [None])[-1]
                if fd is None:      # an absent log, created only now, with lines to write
                    fd = writer.open_for_append(writer.activity_log)
                    fds.append(fd)
                writer.write_line(fd, writer.activity_log, b''.join(lines), fsync=True)
                logged.update(removed)
        except BaseException:
            journal.clear()     # nothing logged: nothing to finish
            raise
        return last or _unchanged(target, info, size)

    try:
        for attempt in range(REWRITE_ATTEMPTS):
            content, info, old_fd = open_for_rewrite(target)
            try:
                new_content, removed, indexes = without(content, wanted)
                if check_mode or not removed:
                    if not check_mode:
                        journal.clear()     # what an earlier attempt logged is gone from the file too
                    break
                if activity_fd is None:     # checked before anything is written, as for an addition
                    activity_fd = writer.open_for_append(writer.activity_log, create=False)
                date = date_default_format()
                lines = [to_bytes(line_of(date, to_text(address), reason_of(address))) + b'\n'
                         for address in wanted if address in removed and address not in logged]

                last = attempt == REWRITE_ATTEMPTS - 1
                if replace_file(target, new_content, info, partial(before_rename, lines=lines, removed=removed, last=last,
                                                                   size=len(content), info=info)):
                    journal.clear()
                    new_content += _carry_appended(old_fd, len(content), target)
                    break
            finally:
                if old_fd is not None:
                    os.close(old_fd)
    finally:
        for fd in fds + ([activity_fd] if activity_fd is not None else []):
            os.close(fd)
    if result.blocklist_before is None:
        result.blocklist_before = content
    result.removed_indexes.extend(indexes)
    result.blocklist_lines = count_lines(new_content)
    return removed, new_content


def finish_interrupted(writer, result, content, check_mode):
    """Finish a removal that a killed unblock or expiry logged but did not make (its journal
    is there): every run that takes the lock calls this, so that entries whose removal is
    logged do not stay listed until the next unblock. Returns the blocklist's content after it."""
    if check_mode or not removal_pending(writer.blocklist):
        return content
    return remove(writer, [], lambda address: None, result, check_mode)[1]


class Journal:
    """The removal under way, beside the blocklist ('.ipblocklist.txt.bot-detector-removing'):
    the old and new file's inodes, then the addresses removed. Written before the activity
    lines, removed after the rename: a run killed between them leaves it, and the next run
    that takes the lock finishes the entries whose last activity line is that removal
    (silently: the line is there) unless the rename was made."""

    def __init__(self, target):
        self.path, self.target = removal_journal(target), target

    def unfinished(self, activity_log, removed_last=None):
        """The addresses whose removal was logged but not made; clears a stale journal.
        ``removed_last``: see remove (None: the blocklist's history)."""
        content = read_list(self.path)
        if not content:
            return set()
        lines = content.split(b'\n')
        try:
            new_inode = int(lines[0].split()[1])
            current = os.lstat(self.target).st_ino
        except (IndexError, ValueError, OSError):
            current = new_inode = None
        if current is not None and current == new_inode:
            self.clear()        # renamed: only the journal's removal was missed
            return set()
        addresses = [address for address in (line.strip() for line in lines[1:]) if address]
        if removed_last is not None:
            last = removed_last(activity_log)
            return set(address for address in addresses if last(address))
        from .history import History, REMOVED      # a killed removal's finish only
        history = History(activity_log)
        return set(address for address in addresses
                   if (history.events.get(entry_key(address)) or [None])[-1] is not None
                   and history.events[entry_key(address)][-1].kind == REMOVED)

    def write(self, old, new, addresses):
        data = b'%d %d\n' % (old.st_ino if old is not None else 0, new.st_ino) + b''.join(a + b'\n' for a in addresses)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def clear(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _unchanged(path, info, size):
    """Whether ``path`` is still the file read: same inode, its ``size`` bytes, same mtime."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return ((now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns)
            == (info.st_dev, info.st_ino, size, info.st_mtime_ns))


def _carry_appended(old_fd, size, path):
    """What others appended to the replaced file (still open as ``old_fd``) past ``size``
    between the last test and the rename, appended to the new file; returns it."""
    end = os.fstat(old_fd).st_size
    if end <= size:
        return b''
    tail = os.pread(old_fd, end - size, size)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        write_all(fd, tail)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tail
