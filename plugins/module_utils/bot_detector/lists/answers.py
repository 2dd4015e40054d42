# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lists of the answers softer than a block (``throttle_list``, ``challenge_list``): one
address or CIDR network a line, as the blocklist, with its guarantees: appended to under the
blocklist writer's lock (one lock per list file), never rewritten except by a removal
(removal.py: unblock, expiry), each addition and removal one activity log line of its own
wording (base/messages.py: the blocklist's history does not read them), the exempt addresses
and the width guards refused. An entry lasts ``answer_time`` after its latest addition.

``answer(settings, kind, decisions)`` is the one way in: the command's hand-written
decisions (``--throttle ADDR``, ``--challenge ADDR``) and the detection's call it."""

from __future__ import absolute_import, division, print_function

import re
import time

from ..base.clock import date_default_format, format_duration
from ..base.errors import bad_option
from ..base.messages import (ACTIVITY_ANSWERED, ACTIVITY_ANSWERED_PATTERN, ACTIVITY_UNANSWERED,
                             ACTIVITY_UNANSWERED_PATTERN, ANSWER_REFUSED, ANSWERING)
from ..base.text import to_bytes, to_text
from ..decision.addresses import entry_key
from ..decision.never_blocked import never_blocked
from ..decision.ranges import BITS, host_bits_network, network, spelling
from ..values.answer_settings import ANSWERS, VERBS
from .content import entries, read_list
from .history import ADDED, REMOVED, Event, History
from .removal import remove
from .writer import BlocklistWriter, removal_pending

__metaclass__ = type

_ADDED = re.compile(ACTIVITY_ANSWERED_PATTERN)
_REMOVED = re.compile(ACTIVITY_UNANSWERED_PATTERN)
_UNSAFE = re.compile(r'[^\x20-\x27\x2a-\x7e]')       # anything but printable ASCII without ( and )
_BRACKETS = {ord('('): '[', ord(')'): ']'}     # a reason's own parentheses, kept readable inside the line's
VERIFIED_CRAWLER = 'it holds a crawler verified by reverse DNS'
NEVER_ANSWERED = 'it is or holds an address never blocked (the server, loopback, the allow-list or a trusted proxy)'
HAND_REASON = 'by hand'
EXPIRED_REASON = 'expired after %s'


def list_path(settings, kind):
    """The path of the ``kind`` answer's list; a bad option when it is not set."""
    if kind not in ANSWERS:
        raise bad_option('unknown answer %r: one of %s' % (kind, ', '.join(ANSWERS)))
    path = getattr(settings, kind + '_list')
    if not path:
        raise bad_option('%s_list: not set; the %s answer needs its list' % (kind, kind))
    return path


def span(text):
    """(version, prefix length, first address) of an entry's text, None when it is not one."""
    return network(to_bytes(text))


def holds(found, client):
    """Whether the entry ``found`` (version, length, first) holds the address or network ``client``."""
    if found[0] != client[0] or found[1] > client[1]:
        return False
    shift = BITS[found[0]] - found[1]
    return found[2] >> shift == client[2] >> shift


def _first_last(found):
    version, length, first = found
    return first, first + (1 << (BITS[version] - length)) - 1


class AnswerHistory(History):
    """The activity log's additions to and removals from the answer lists (its rotated files
    too), per list and address."""

    def _read(self, content):
        for line in content.split(b'\n'):
            line = line.rstrip(b'\r')
            for kind, pattern in ((ADDED, _ADDED), (REMOVED, _REMOVED)):
                match = pattern.search(line)
                if match is not None:
                    address, answer, reason = match.groups()
                    event = Event(kind, address, line[:match.start()], self.dates, reason=reason.decode('ascii', 'replace'))
                    self.events.setdefault((answer.decode('ascii'), entry_key(address)), []).append(event)
                    break

    def latest(self, kind, address):
        """The addition that put ``address`` on ``kind``'s list as it is now, or None."""
        events = self.events.get((kind, entry_key(address)))
        if events and events[-1].kind == ADDED:
            return events[-1]
        return None


class Entry:
    """One entry of an answer list: its address or network, its latest addition, when it expires
    (None: never, added by hand to the file or its date unreadable)."""

    def __init__(self, kind, address, addition, answer_time):
        self.kind, self.address, self.addition = kind, address, addition
        epoch = addition.epoch if addition is not None else None
        self.expires = None if epoch is None else epoch + answer_time

    def due(self, now):
        return self.expires is not None and self.expires <= now

    def as_dict(self):
        return {'address': to_text(self.address), 'answer': self.kind, 'expires': self.expires,
                'added': to_text(self.addition.date) if self.addition else None,
                'reason': self.addition.reason if self.addition else None}


def listed(settings, kind, history=None):
    """The entries of ``kind``'s list, in order, each an Entry."""
    history = history or AnswerHistory(settings.activity_log)
    content = read_list(list_path(settings, kind), strict=True)
    return [Entry(kind, address, history.latest(kind, address), settings.answer_time) for address in entries(content)]


def _refusal(settings, exempt, text):
    found = span(text)
    if found is None:
        return None, 'not an address or CIDR network'
    version, length, first = found
    widened = host_bits_network(to_bytes(text))
    if widened is not None:
        return None, 'host bits set (its network is %s)' % to_text(widened)
    least = settings.enforcement_min_prefix_v4 if version == 4 else settings.enforcement_min_prefix_v6
    if length < least:
        return found, 'wider than a /%d (enforcement_min_prefix_v%d)' % (least, version)
    if exempt.network(version, *_first_last(found)):
        return found, NEVER_ANSWERED
    return found, None


def answer(settings, kind, decisions, check_mode=False, emit=None, on_warning=None, now=None, spared=()):
    """Put each of ``decisions`` [(address or network, reason)] on ``kind``'s list, under its lock:
    expired entries taken off first, then a new entry appended with its activity line; one
    already listed gets only the activity line (its expiry starts again); the whole batch is one
    append to each file, the list's taken back when the activity log's fails. An entry refused
    (not an address, exempt, too wide, or holding one of ``spared``: the addresses of crawlers
    the run verified by reverse DNS) is a warning naming it. Returns
    {'added': [...], 'renewed': [...], 'refused': [...], 'expired': [...]}."""
    path = list_path(settings, kind)
    say = emit or (lambda line: None)
    warn = on_warning or (lambda line: None)
    exempt = never_blocked(settings)
    if exempt.too_wide_warning('answers'):
        warn(exempt.too_wide_warning('answers'))
    done = {'added': [], 'renewed': [], 'refused': [], 'expired': []}
    crawlers = [found for found in (span(client) for client in spared) if found is not None]
    writer = BlocklistWriter(path, settings.activity_log, settings.lock_timeout)
    if not check_mode:
        writer.lock()
    try:
        if not check_mode:
            finish_interrupted(settings, kind, writer)
        done['expired'] = expire(settings, kind, writer, check_mode, now)
        present = set(entry_key(line) for line in entries(read_list(path, strict=True)))
        new, lines = [], []
        for address, reason in decisions:
            found, why = _refusal(settings, exempt, address)
            if not why and any(holds(found, client) for client in crawlers):
                why = VERIFIED_CRAWLER
            if why:
                warn(ANSWER_REFUSED % (kind, to_text(address), why))
                done['refused'].append(to_text(address))
                continue
            key = spelling(*found)
            reason = _UNSAFE.sub('_', reason.translate(_BRACKETS)) if reason else reason     # one line, read back by its pattern
            line = to_bytes(ACTIVITY_ANSWERED % {'date': date_default_format(), 'address': to_text(key),
                                                 'answer': kind, 'reason': reason or HAND_REASON}) + b'\n'
            renewed = entry_key(key) in present
            say(ANSWERING % ('Would %s' % kind if check_mode else VERBS[kind], to_text(key), reason or HAND_REASON))
            lines.append(line)
            if not renewed:
                new.append(key)
            present.add(entry_key(key))
            done['renewed' if renewed else 'added'].append(to_text(key))
        if check_mode or not lines:
            return done
        if new:     # one write and one fsync each for the whole batch: the entries, then their lines
            writer.append(b'\n'.join(new), b''.join(lines))
        else:
            writer.append_line(settings.activity_log, b''.join(lines), fsync=True)
    finally:
        writer.unlock()
    return done


class _Removal:
    """What removal.remove files its lines with (a run's Result has more)."""

    def __init__(self):
        self.blocklist_before, self.removed_indexes, self.blocklist_lines = None, [], 0


def _unanswered(kind):
    def line(date, address, reason):
        return ACTIVITY_UNANSWERED % {'date': date, 'address': address, 'answer': kind, 'reason': reason}
    return line


def _removed_last(kind):
    """For removal.remove: whether an address's last activity line on ``kind``'s list is its removal."""
    def read(activity_log):
        history = AnswerHistory(activity_log)

        def last(address):
            events = history.events.get((kind, entry_key(address)))
            return bool(events) and events[-1].kind == REMOVED
        return last
    return read


def finish_interrupted(settings, kind, writer):
    """Finish a removal from ``kind``'s list that a killed unblock or expiry logged but did not
    make (its journal is there; the caller holds the lock), as the blocklist's are
    (removal.finish_interrupted): else an entry logged as removed would stay listed with no
    addition to expire from. Returns the addresses taken off."""
    if not removal_pending(writer.blocklist):
        return []
    return list(remove(writer, [], lambda address: None, _Removal(), False, line_of=_unanswered(kind),
                       removed_last=_removed_last(kind))[0])


def expire(settings, kind, writer, check_mode=False, now=None):
    """Take the entries of ``kind``'s list whose time ran out off it (the caller holds the lock),
    each with its activity line. Returns their texts."""
    now = time.time() if now is None else now
    due = [entry for entry in listed(settings, kind) if entry.due(now)]
    if not due or check_mode:
        return [to_text(entry.address) for entry in due]
    reason = EXPIRED_REASON % format_duration(settings.answer_time)
    removed = remove(writer, [entry.address for entry in due], lambda address: reason, _Removal(), False,
                     line_of=_unanswered(kind), removed_last=_removed_last(kind))[0]
    return [to_text(entry.address) for entry in due if entry.address in removed]


def unanswer(settings, kind, addresses, check_mode=False):
    """``--unblock`` for ``kind``'s list: the lines equal to one of ``addresses`` (bytes) removed,
    under its lock. Returns {address: lines removed}."""
    writer = BlocklistWriter(list_path(settings, kind), settings.activity_log, settings.lock_timeout)
    if not check_mode:
        writer.lock()
    try:
        removed = remove(writer, addresses, lambda address: 'unblock', _Removal(), check_mode,
                         line_of=_unanswered(kind), removed_last=_removed_last(kind))[0]
        return dict((address, lines) for address, lines in removed.items() if address in addresses)     # a killed one's finish: not said
    finally:
        writer.unlock()
