# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ban expiry (opt-in, ``ban_time``): at the start of a run, under the lock, the entries whose
latest addition in the activity log is older than their ban are removed, and each removal
is logged as expired. The ban of an address whose earlier block expired is twice that
one's, up to ``ban_time_max``. An entry without an addition line, or whose addition's date
cannot be read, is kept."""

from __future__ import absolute_import, division, print_function

import time

from ..base.clock import format_duration
from ..base.messages import EXPIRED_REASON, unblocking
from ..base.text import to_text
from .content import entries
from .history import History
from .removal import finish_interrupted, remove

__metaclass__ = type


def ban_for(settings, history, address):
    """The ban of the current block of ``address``, in seconds: ``ban_time``, or with
    ``ban_time_max`` twice the ban of its last expiry, up to that maximum."""
    ban = settings.ban_time
    if settings.ban_time_max is not None:
        previous = history.previous_ban(address)
        if previous is not None:
            ban = min(max(2 * previous, settings.ban_time), settings.ban_time_max)
    return ban


class Ban:
    """What is known of one blocklist entry's block: its latest addition (or None: by hand),
    its ban and when it ends (None: never, or the addition's date cannot be read)."""

    def __init__(self, settings, history, address):
        self.address = address
        self.addition = history.latest_addition(address)
        self.ban = None
        if settings.ban_time is not None and self.addition is not None:
            self.ban = ban_for(settings, history, address)
        self.expires = None
        if self.ban is not None and self.addition is not None and self.addition.epoch is not None:
            self.expires = self.addition.epoch + self.ban

    def due(self, now):
        return self.expires is not None and self.expires <= now

    def as_dict(self):
        addition = self.addition
        return {
            'address': to_text(self.address),
            'added': to_text(addition.date) if addition else None,
            'ban': None if self.ban is None else format_duration(self.ban),
            'ban_seconds': self.ban,
            'expires': self.expires,
        }


def bans(settings, content, history=None):
    """A Ban for each entry of the blocklist ``content``, in order, once each."""
    history = history or History(settings.activity_log)
    return [Ban(settings, history, address) for address in entries(content)], history


def due_bans(settings, content, now=None):
    """The entries of ``content`` whose ban has run out (wall clock: the activity log's dates
    are the wall clock's, even with --now), and the history's warnings."""
    now = time.time() if now is None else now
    found, history = bans(settings, content)
    return [ban for ban in found if ban.due(now)], history.warnings


def expiry_reason(ban):
    """The activity log's note of an expiry: 'expired, ban 12h'."""
    return EXPIRED_REASON % format_duration(ban.ban)


def expire(settings, writer, result, content, check_mode):
    """Remove the entries of ``content`` (the blocklist, read under the lock) whose ban has
    run out, each logged as expired (in check mode: only reported). Returns the blocklist's
    content after it, for the run's verdicts."""
    due, warnings = due_bans(settings, content)
    for warning in warnings:
        result.warn(warning)
    if not due:     # an interrupted removal's entries are not due: their last event is it
        return finish_interrupted(writer, result, content, check_mode)
    reasons = dict((ban.address, expiry_reason(ban)) for ban in due)
    removed, content = remove(writer, [ban.address for ban in due], reasons.get, result, check_mode)
    for ban in due:
        if ban.address in removed:
            result.say(unblocking(to_text(ban.address), check_mode, format_duration(ban.ban)))
            result.expired.append(ban.as_dict())
    return content
