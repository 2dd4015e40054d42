# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run found and did. It only receives: run.py decides and acts."""

from __future__ import absolute_import, division, print_function

from ..base import messages
from ..base.text import printable, to_text
from ..decision.rules import ALLOW_LISTED, ALREADY_BLOCKED, BLOCK, INVALID

__metaclass__ = type

# The console line of each verdict that is not a block.
_VERDICT_LINES = {
    ALREADY_BLOCKED: lambda entry: messages.ALREADY_BLOCKED % entry['address'],
    ALLOW_LISTED: lambda entry: messages.ALLOW_LISTED % entry['address'],
    INVALID: lambda entry: messages.INVALID % (entry['address'], entry['count']),
}


class Result:
    """``as_dict`` is what the module and --json return."""

    def __init__(self, check_mode=False, emit=None, on_warning=None):
        self.check_mode = check_mode
        self.emit = emit             # gets each console line as it happens (the command prints it)
        self.on_warning = on_warning  # gets each warning as it happens (the command: standard error)
        self.warnings = []           # the run went on: a rotated file left out, a log it cannot read (module.warn)
        self.by_verdict = {BLOCK: [], ALREADY_BLOCKED: [], ALLOW_LISTED: [], INVALID: []}
        self.windows = []
        self.messages = []
        self.appended = []           # keys (bytes) appended, or to append in check mode
        self.block_lines = []        # their console lines (a follower prints only these)
        self.additions = {}          # appended per reason: own (this host's count), fleet, sync
        self.blocklist_lines = 0     # lines in the blocklist when the run read it
        self.scans = []
        self.formats = {}            # log_format auto: {log: the format detected}
        self.rules = 'spec'
        self.verifications = []
        self.counts = None           # report: {window: {key: count}}
        self.local_blocks = None     # report with a floor: this host's own additions, from its activity log
        self.report_floor = None     # report with a floor: the floor
        self.now = None              # report: the instant evaluated, whole seconds since the epoch
        self.duration = 0
        self.blocklist_before = None     # the blocklist's content before any change (the diff)
        self.removed_indexes = []    # its lines removed (unblock, expiry), by index
        self.expired = []            # ban expiry: the entries removed (to remove in check mode)
        self.unblocked = None        # unblock: [{address, lines}] removed; addresses not listed
        self.not_listed = None
        self.enforcement = None      # with enforcement: the last sync's status (enforce/sync.Status.as_dict)
        self.unreadable_lists = None     # once the lists are read: {list: why} of those that could not be (allow.py)
        self.softer = None           # campaigns: {answer: [entry]} of the decisions softer than a block
        self._softer_keys = {}       # {answer: set of the addresses in softer[answer]}
        self.answers = None          # with an answer list: {answer: {added, renewed, refused, expired}}
        self.answered = None         # with an answer list: the answers read back from the log (reading/answered.py)
        self.escalated = None        # with an answer list: the clients escalated to a block
        self.campaign_counts = None  # report with the campaign profile: fleet_campaigns.reported_campaigns
        self.fleet = None            # with fleet_store: {store (no password), host, up, decisions_received} (drivers/fleet.py)

    @property
    def changed(self):
        softer = (self.answers or {}).values()
        return bool(self.appended or self.removed_indexes or any(done['added'] or done['renewed'] or done['expired'] for done in softer))

    def say(self, line):
        self.messages.append(line)
        if self.emit is not None:
            self.emit(line)

    def warn(self, line):
        self.warnings.append(line)
        if self.on_warning is not None:
            self.on_warning(line)

    def verdict(self, verdict, key, entry, note=None):
        """File one record's verdict and say its console line."""
        if verdict == BLOCK:
            self.block_lines.append(messages.blocking(entry['address'], entry['count'], self.check_mode, note))
            self.say(self.block_lines[-1])
            self.appended.append(key)
            reason = note if note in ('fleet', 'sync', 'escalated') else 'own'     # a campaign's block is this host's own
            self.additions[reason] = self.additions.get(reason, 0) + 1
        else:
            self.say(_VERDICT_LINES[verdict](entry))
        self.by_verdict[verdict].append(entry)

    def answer(self, answer, entry):
        """File a decision softer than a block (campaigns: a challenge), once a run per key; the
        drivers list it (drivers/answers.answer_decisions)."""
        found = self.softer.setdefault(answer, [])
        filed = self._softer_keys.setdefault(answer, set())     # a campaign files hundreds: no scan of the list
        if entry['address'] not in filed:
            filed.add(entry['address'])
            found.append(entry)

    def drop_softer(self, keys):
        """Take ``keys`` (bytes: those the run blocked) off the softer decisions filed: a key is on
        one list (a window's block over another window's challenge)."""
        keys = set(map(to_text, keys))
        for answer, entries in (self.softer or {}).items():
            if not keys.isdisjoint(self._softer_keys.get(answer, ())):
                self.softer[answer] = [entry for entry in entries if entry['address'] not in keys]
                self._softer_keys[answer].difference_update(keys)

    def window(self, window, records):
        self.windows.append({
            'name': window.name,
            'hour_stamp': to_text(window.stamp),
            'records': [{'count': c, 'address': to_text(a)} for c, a in records],
        })

    def blocklist_diff(self, path):
        """A unified diff, without context, of the lines the run removes from and appends to
        the blocklist (or would, in check mode)."""
        # Written from what the run did, not computed by difflib: a matcher may pair an
        # appended line with a removed one of the same text and show other lines moved.
        before = to_text(self.blocklist_before or b'').split('\n')
        if before[-1] == '':
            before.pop()
        removed = sorted(set(self.removed_indexes))
        diff = ['--- %s' % path, '+++ %s' % path]
        gone = 0                # lines removed before the hunk
        while gone < len(removed):
            start = end = removed[gone]
            while gone + (end - start) + 1 < len(removed) and removed[gone + end - start + 1] == end + 1:
                end += 1
            diff.append('@@ -%s +%s @@' % (_unified_range(start, end + 1 - start), _unified_range(start - gone, 0)))
            diff.extend('-' + before[i] for i in range(start, end + 1))
            gone += end + 1 - start
        if self.appended:
            kept = len(before) - len(removed)
            diff.append('@@ -%s +%s @@' % (_unified_range(len(before), 0), _unified_range(kept, len(self.appended))))
            diff.extend('+' + to_text(a) for a in self.appended)
        return printable(''.join(line + '\n' for line in diff)) if len(diff) > 2 else ''

    def as_dict(self):
        extra = {} if self.enforcement is None else {'enforcement': self.enforcement}
        if self.formats:
            extra['formats'] = self.formats     # log_format auto: {log: the format detected}
        if self.fleet is not None:
            extra['fleet'] = self.fleet
        if self.campaign_counts is not None:
            extra['campaign_counts'] = self.campaign_counts
        if self.answers is not None:
            extra['answers'] = self.answers     # with an answer list: each list's changes
            extra['escalated'] = self.escalated or []
            if self.answered is not None:
                extra['answered'] = self.answered.totals_by_window()
        if self.softer is not None:
            extra['challenged'] = self.softer.get('challenge', [])
            extra['throttled'] = self.softer.get('throttle', [])
        return printable(dict(extra, **{
            'changed': self.changed,
            'check_mode': self.check_mode,
            'blocked': self.by_verdict[BLOCK],
            'already_blocked': self.by_verdict[ALREADY_BLOCKED],
            'allow_listed': self.by_verdict[ALLOW_LISTED],
            'skipped_invalid': self.by_verdict[INVALID],
            'windows': self.windows,
            'messages': self.messages,
            'execution_time': self.duration,
            'scans': self.scans,
            'rules': self.rules,
            'verifications': self.verifications,
            'counts': self.counts,
            'local_blocks': self.local_blocks,
            'warnings': self.warnings,
            'report_floor': self.report_floor,
            'now': self.now,
            'expired': self.expired,
            'unblocked': self.unblocked,
            'not_listed': self.not_listed,
        }))


def _unified_range(start, length):
    """A hunk's range in a unified diff, as difflib writes it: lines from index ``start``."""
    if length == 1:
        return '%d' % (start + 1)
    return '%d,%d' % (start + 1 if length else start, length)
