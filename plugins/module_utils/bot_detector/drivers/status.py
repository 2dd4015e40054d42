# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""--status (module ``mode: status``): what is blocked, since when, why and until when; with
logs, who is close to the threshold in the current windows. Reads, never writes."""

from __future__ import absolute_import, division, print_function

import json
import os
import time

from ..base import messages
from ..base.clock import date_default_format
from ..base.errors import BotDetectorError
from ..base.text import printable, to_text
from ..decision.rules import decide
from ..lists.answers import listed
from ..lists.content import read_list
from ..lists.expiry import bans
from ..lists.writer import lock_directory
from ..reading.spill import Session
from ..values.answer_settings import ANSWERS
from .follower_state import running
from .run import count_logs

__metaclass__ = type


class Status:
    """The blocklist's entries and, with logs, the windows' top records."""

    def __init__(self, blocklist):
        self.blocklist = blocklist
        self.entries = []
        self.windows = None
        self.warnings = []
        self.check_mode = False
        self.followers = []
        self.enforcement_state = None     # enforce/state.py (not 'enforcement': a sync's, whose exit status is 4)
        self.fleet_store = None     # with fleet_store: fleet_store_status()
        self.answers = {}           # {answer: [entry]} of each answer list set (lists/answers.py)

    def warn(self, line):
        self.warnings.append(line)

    def as_dict(self):
        output = {'changed': False, 'blocklist': self.blocklist, 'entries': self.entries, 'warnings': self.warnings}
        if self.windows is not None:
            output['windows'] = self.windows
        if self.followers:
            output['followers'] = self.followers
        if self.enforcement_state is not None:
            output['enforcement'] = self.enforcement_state
        if self.fleet_store is not None:
            output['fleet_store'] = self.fleet_store
        if self.answers:
            output['answers'] = self.answers
        return printable(output)

    def lines(self):
        """The text of --status."""
        out = [messages.status_heading(self.blocklist, len(self.entries))]
        for entry in self.entries:
            added = messages.STATUS_ADDED[entry['source']] % {'date': entry['added'], 'count': entry['count'] or 0}
            expires = messages.STATUS_EXPIRES[entry['state']] % dict(entry, date=entry['expires_date'])
            out.append(messages.STATUS_ENTRY % (entry['address'], added, expires))
        for window in self.windows or []:
            out.append(messages.STATUS_WINDOW % (messages.STATUS_WINDOW_NAMES[window['name']], window['hour_stamp'],
                                                 window['threshold']))
            for record in window['records']:
                verdict = messages.STATUS_VERDICTS[record['verdict']]
                out.append(messages.STATUS_RECORD % (record['count'], record['percent'], record['address'],
                                                     '  ' + verdict if verdict else ''))
        for kind, found in sorted(self.answers.items()):
            out.append(messages.STATUS_ANSWER_HEADING % (kind.capitalize(), found['list'], len(found['entries']),
                                                         'entry' if len(found['entries']) == 1 else 'entries'))
            for entry in found['entries']:
                expires = 'never expires' if entry['expires'] is None else 'expires %s' % date_default_format(entry['expires'])
                added = (messages.STATUS_ANSWER_ADDED % (entry['added'], entry['reason']) if entry['added']
                         else messages.STATUS_ADDED['hand'])      # written into the list by an editor: no line of it, no reason
                out.append(messages.STATUS_ENTRY % (entry['address'], added, expires))
        if self.enforcement_state is not None:
            out.append(messages.status_enforcement(self.enforcement_state, date_default_format))
        if self.fleet_store is not None:
            doc = self.fleet_store
            state = 'reachable, maxmemory_policy %s%s' % (doc['eviction_policy'], '' if doc['eviction_policy'] == 'noeviction'
                                                          else ' (may drop counts: noeviction is safe)')
            out.append(messages.STATUS_FLEET_STORE % dict(doc, state=state if doc['reachable'] else 'unreachable (%s)' % doc['error']))
        for doc in self.followers:
            out.append(messages.STATUS_FOLLOWER % dict(doc, logs=','.join(doc['logs']), when=date_default_format(doc['updated']),
                                                       state='running' if doc['running'] else 'not running'))
        return out


def entry_state(settings, ban, now):
    """Which of messages.STATUS_EXPIRES describes a ban."""
    if settings.ban_time is None:
        return 'no_ban_time'
    if ban.addition is None:
        return 'never'
    if ban.expires is None:
        return 'unknown_date'
    return 'due' if ban.due(now) else 'at'


def status(settings, logs=(), now=None, resolver=None):
    """The status of the blocklist (expiry judged on the wall clock, as the activity log's
    dates are) and, with ``logs``, of the windows as of ``now``."""
    report = Status(settings.blocklist)
    content = read_list(settings.blocklist, strict=True)
    found, history = bans(settings, content)
    report.warnings.extend(history.warnings)
    wall = time.time()
    for ban in found:
        addition = ban.addition
        entry = ban.as_dict()
        entry.update({
            'source': 'hand' if addition is None else (addition.note or 'own'),
            'count': addition.count if addition else None,
            'added_epoch': addition.epoch if addition else None,
            'expires_date': None if ban.expires is None else date_default_format(ban.expires),
            'state': entry_state(settings, ban, wall),
        })
        report.entries.append(entry)
    for kind in ANSWERS:
        if getattr(settings, kind + '_list'):
            report.answers[kind] = {'list': getattr(settings, kind + '_list'),
                                    'entries': [entry.as_dict() for entry in listed(settings, kind)]}
    if settings.enforcement != 'none':
        from ..enforce.state import enforcement_state     # with enforcement only
        report.enforcement_state = enforcement_state(settings, content)
    report.followers = [doc for doc in followers() if doc.get('blocklist') == os.path.realpath(settings.blocklist)]
    if settings.fleet_store:
        report.fleet_store = fleet_store_status(settings, report.warn)
    if logs:
        with Session(settings.count_budget, settings.state_dir, create=False, warn=report.warn) as session:
            _windows(report, settings, logs, now, resolver, content, session)
    return report


def _windows(report, settings, logs, now, resolver, content, session):
    """The windows' top records with their verdicts, into ``report``."""
    rules, counts, server_ips, dummy = count_logs(settings, logs, now, resolver, report, session)    # no state saved
    lists = rules.lists(content, read_list(settings.exclusions_file, strict=True))
    report.windows = []
    for window, counter in counts:
        records = []
        for count, key in rules.examined(counter, server_ips, settings.top):
            verdict = decide(count, key, settings.threshold, lists)
            records.append({'address': to_text(key), 'count': count, 'percent': count * 100 // settings.threshold,
                            'verdict': verdict})
        report.windows.append({'name': window.name, 'hour_stamp': to_text(window.stamp),
                               'threshold': settings.threshold, 'records': records})


def fleet_store_status(settings, warn=None):
    """The fleet store: its URL without the password, the fleet's and this host's names, and
    whether it answers a PING (within fleet_store.EXCHANGE_SECONDS, however slowly it answers),
    its eviction policy (INFO memory's maxmemory_policy: only noeviction keeps every count).
    ``warn`` gets what a run would warn about too (a password file others can read)."""
    from ..decision.fleet_store import Store     # a fleet store only: redis-py
    store = Store(settings, warn=warn)
    doc = {'store': store.describe(), 'name': store.name, 'host': store.host, 'reachable': False, 'error': None,
           'eviction_policy': None}
    try:
        store.ping()
        doc['reachable'], doc['eviction_policy'] = True, store.policy
    except Exception as exc:        # pylint: disable=broad-except  # redis-py's, the password file's (StoreDown): unreachable
        doc['error'] = (exc.message if isinstance(exc, BotDetectorError) else str(exc)).replace(settings.fleet_store, doc['store'])
    finally:
        store.close()
    return doc


def followers():
    """The followers (follow.py) of this user: the status file each
    keeps in the lock directory, and whether it runs (its pid file is locked):
    [{pid, logs, running, behind_seconds, behind_bytes, updated, decided}]."""
    found = []
    try:
        directory = lock_directory(create=False)      # --status writes nothing: not even this directory
        names = sorted(os.listdir(directory))
    except (OSError, BotDetectorError):
        return found
    for name in names:
        if not (name.startswith('follow-') and name.endswith('.json')):
            continue
        try:
            with open(os.path.join(directory, name), 'rb') as handle:
                doc = json.loads(handle.read().decode('utf-8'))
        except (OSError, IOError, ValueError, RecursionError):     # RecursionError: nested too deep
            continue
        if not isinstance(doc, dict):
            continue        # garbled into JSON that is no status
        doc['running'] = running(os.path.join(directory, name[:-len('.json')] + '.pid'))
        found.append(doc)
    return found
