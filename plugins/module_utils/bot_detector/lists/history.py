# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The activity log read back as a history of additions and removals, across the rotated
files logrotate keeps beside it (LOG.1, LOG.2.gz, ...): when and why each blocklist entry
was added, for ban expiry and --status."""

from __future__ import absolute_import, division, print_function

import os
import re
import stat
import zlib

from ..base.clock import DateReader, parse_duration
from ..base.errors import BotDetectorError
from ..base.messages import ACTIVITY_ADDED_PATTERN, ACTIVITY_REMOVED_PATTERN, HISTORY_UNREADABLE
from ..decision.addresses import entry_key
from .content import read_list

__metaclass__ = type

ADDED, REMOVED = 'added', 'removed'
_ADDED = re.compile(ACTIVITY_ADDED_PATTERN)
_REMOVED = re.compile(ACTIVITY_REMOVED_PATTERN)


class Event:
    """One line of the activity log about an address: an addition (with its count and note:
    None for this host's own run, 'fleet', 'sync') or a removal (reason 'unblock' or
    'expired', with the ban that expired)."""

    def __init__(self, kind, address, date, dates, count=0, note=None, reason=None, ban=None):
        self.kind = kind
        self.address = address      # bytes, as the line holds it
        self.date = date            # bytes, as `date` printed it
        self._dates = dates         # the DateReader that reads it, when first asked
        self._epoch = False
        self.count = count
        self.note = note
        self.reason = reason
        self.ban = ban

    @property
    def epoch(self):
        """Seconds since the epoch of its date; None when it cannot be read (DateReader)."""
        if self._epoch is False:
            self._epoch = self._dates.epoch(self.date)
        return self._epoch


def rotated_files(path):
    """The activity log's rotated files, oldest first: LOG.12.gz ... LOG.2.gz, LOG.1 (the
    numbered names logrotate gives, compressed or not)."""
    directory, base = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    numbered = []
    for name in names:
        if not name.startswith(base + '.'):
            continue
        number = name[len(base) + 1:]
        number = number[:-3] if number.endswith('.gz') else number
        if number.isdigit():
            numbered.append((int(number), name.endswith('.gz'), name))
    return [os.path.join(directory, name) for dummy, dummy, name in sorted(numbered, reverse=True)]


def read_rotated(path):
    """A rotated file's content, gzip or plain; a file that is not regular counts as empty.
    Raises OSError, EOFError or zlib.error when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, 'rb') as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b''
        data = handle.read()
    if data[:2] == b'\x1f\x8b':
        import gzip     # rotated .gz activity logs only
        return gzip.decompress(data)
    return data


class History:
    """Every addition and removal in the activity log and its rotated files, per address,
    in the order they were written. ``warnings`` names the rotated files that could not be read."""

    def __init__(self, activity_log):
        self.events = {}
        self.warnings = []
        self.dates = DateReader()
        for path in rotated_files(activity_log):
            try:
                content = read_rotated(path)
            except (OSError, EOFError, zlib.error) as exc:
                self.warnings.append(HISTORY_UNREADABLE % (path, getattr(exc, 'strerror', None) or exc))
                continue
            self._read(content)
        self._read(read_list(activity_log))

    def _read(self, content):
        for line in content.split(b'\n'):
            line = line.rstrip(b'\r')
            match = _ADDED.search(line)
            if match is not None:
                address, count, note = match.groups()
                event = Event(ADDED, address, line[:match.start()], self.dates, count=int(count), note=note and note.decode('ascii'))
            else:
                match = _REMOVED.search(line)
                if match is None:
                    continue
                address, reason, ban = match.groups()
                event = Event(REMOVED, address, line[:match.start()], self.dates, reason=reason.decode('ascii'), ban=_ban(ban))
            self.events.setdefault(entry_key(address), []).append(event)

    def latest_addition(self, address):
        """The addition that put ``address`` on the list as it is now: its last event when that
        is an addition. None when it has no event, or when its last event is a removal (it
        was put back by hand since)."""
        events = self.events.get(entry_key(address))
        if events and events[-1].kind == ADDED:
            return events[-1]
        return None

    def previous_ban(self, address):
        """The ban of the last expiry of ``address`` before its latest addition, or None."""
        for event in reversed(self.events.get(entry_key(address), [])[:-1]):
            if event.kind == REMOVED and event.reason == 'expired':
                return event.ban or 0
        return None


def _ban(text):
    if text is None:
        return None
    try:
        return parse_duration(text.decode('ascii'), 'ban')
    except (BotDetectorError, UnicodeDecodeError):
        return None
