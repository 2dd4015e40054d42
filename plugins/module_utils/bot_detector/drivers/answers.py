# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``--throttle ADDR`` and ``--challenge ADDR``: decisions written by hand, put on the answer
lists (lists/answers.py), then the answers' directory that nginx reads made equal to the
lists (enforce/answer_files.py); and ``--nginx-snippet``: the nginx configuration they need."""

from __future__ import absolute_import, division, print_function

import errno
import os

from ..base.errors import BotDetectorError
from ..base.messages import ANSWERING, ANSWERS_UNLISTED
from ..base.text import printable, to_bytes, to_text
from ..decision.rules import BLOCK
from ..values.answer_settings import ANSWERS, VERBS, answer_for

__metaclass__ = type


class AnswerResult:
    """What a hand-written answer run did, for --json and the exit status."""

    def __init__(self, kind, done):
        self.kind, self.done = kind, done
        self.enforcement = None

    def as_dict(self):
        changed = bool(self.done['added'] or self.done['renewed'] or self.done['expired'])
        return printable(dict(self.done, answer=self.kind, changed=changed))


def answer_by_hand(settings, kind, addresses, check_mode=False, emit=None, on_warning=None):
    """Put ``addresses`` on ``kind``'s list as decisions by hand; then sync the answers' directory."""
    from ..lists.answers import answer      # an answer's runs only: a detection run without a list needs none
    done = answer(settings, kind, [(address, None) for address in addresses], check_mode, emit, on_warning)
    result = AnswerResult(kind, done)
    if not check_mode:
        sync_answers(settings, on_warning)
    return result


def answer_decisions(result, settings, decisions, block=None):
    """A run's step for the answer lists: ``decisions`` {answer: [(key, reason)]} put on each
    answer's list, and each list's expired entries taken off (the run's Result says them and
    files them); a decision whose answer has no list is only said, with one warning. Then the
    escalation: a listed client whose throttled or challenged job-page requests in a window
    (read back from the log: result.answered) reach ``answer_escalation`` is blocked,
    ``block(key, count)``, its activity line noted 'escalated'. A person without JavaScript
    behind a NAT address loads a few pages, never that many. Then the answers' directory
    made equal to the lists, whether they changed or not: a run killed between a list's change
    and its sync (or a killed removal finished here) left it behind; nftables's throttle table
    is loaded again only when something changed (a load starts its meters afresh)."""
    result.answers = {}
    for kind in ANSWERS:
        mine = decisions.get(kind, [])
        if getattr(settings, kind + '_list'):
            from ..lists.answers import answer      # a list set only: a run without one only says its decisions
            result.answers[kind] = answer(settings, kind, mine, result.check_mode, result.say, result.warn)
        elif mine:
            for key, reason in mine:
                result.say(ANSWERING % ('Would %s' % kind if result.check_mode else VERBS[kind], to_text(key), reason))
            result.warn(ANSWERS_UNLISTED % (len(mine), kind, kind))
    found = getattr(result, 'answered', None)
    if found is not None:
        result.escalated = escalate(settings, found, block)
    changed = any(done['added'] or done['expired'] or done['renewed'] for done in result.answers.values())
    if result.answers and not result.check_mode:
        sync_answers(settings, result.warn, changed)


def answers_writable(settings):
    """What the answer lists' step of a run would fail on, found before the run appends anything
    (to the blocklist first), in check mode too: each list set opened for appending as its append
    opens it (neither created), and the answers' directory, when absent, one that can be made.
    Raises BotDetectorError, as that step would."""
    from ..lists.answers import list_path     # an answer list's runs only
    from ..lists.writer import BlocklistWriter, creation_problem      # likewise (the module loads for --nginx-snippet too)
    for kind in ANSWERS:
        if getattr(settings, kind + '_list'):
            BlocklistWriter(list_path(settings, kind), settings.activity_log, settings.lock_timeout).check(appending=True)
    directory = os.path.abspath(settings.answer_dir)
    if os.path.isdir(directory):
        return
    probe = directory
    while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    problem = creation_problem(probe) if os.path.isdir(probe) else os.strerror(errno.ENOTDIR)
    if problem:
        raise BotDetectorError('cannot create %s: %s' % (settings.answer_dir, problem))


def lists_due(settings, ranked):
    """Whether a step's decisions (``ranked``: [(window, records, fleet records, (judged, others))])
    hold one for an answer list: one answered softer than a block, or a record over the threshold
    with a softer ``answer_address``."""
    softer_address = answer_for(settings, 'address') != BLOCK
    for window, records, fleet_records, (judged, others) in ranked:
        if any(decision.answer not in (BLOCK, None) for decision in list(judged.values()) + list(others)):
            return True
        if softer_address and any(count >= settings.threshold for count, key in records + fleet_records):
            return True
    return False


def softer_decisions(settings, softer, filed, blocked=()):
    """{answer: [(key, reason)]}: the address rule's ``softer`` decisions (answered by
    ``answer_address``), none that the run ``blocked`` (a window's block over another window's),
    and those the campaign profile ``filed`` (Result.softer, which drop_softer keeps apart from
    the blocked), each key once."""
    blocked = set(blocked)
    decisions = {answer_for(settings, 'address'): [decision for decision in softer if decision[0] not in blocked]} if softer else {}
    for kind, entries in (filed or {}).items():
        decisions.setdefault(kind, []).extend(
            (to_bytes(entry['address']), 'RPH=%d, %s' % (entry['count'], entry['reason'])) for entry in entries)
    return decisions


def escalate(settings, found, block):
    """The listed keys over ``answer_escalation`` blocked (``block``), each once: [address]."""
    from ..lists.answers import holds, listed, span     # an answer list's runs only
    entries = set()
    for kind in ANSWERS:
        if getattr(settings, kind + '_list'):
            entries.update(span(entry.address) for entry in listed(settings, kind))
    entries.discard(None)
    escalated = []
    for stamp in found.stamps:
        for key, count in found.keys[stamp].most_common():
            if count < settings.answer_escalation:
                break
            client = span(key)
            if key in escalated or client is None or not any(holds(entry, client) for entry in entries):
                continue
            if block is not None:
                block(key, count)
            escalated.append(key)
    return [to_text(key) for key in escalated]


def sync_answers(settings, warn=None, changed=True):
    """The answers' directory made equal to the lists (nginx's njs reads it); with nftables
    enforcement, the throttle's table too when the lists ``changed`` or the directory was behind
    them (a failure there is a warning: the lists keep their changes, nginx's answers hold)."""
    from ..enforce.answer_files import sync     # with an answer list only
    report = sync(settings)
    if settings.enforcement == 'nftables' and (changed or report['changed']):
        from ..enforce.answers_nftables import sync as sync_nftables      # nftables enforcement only
        try:
            sync_nftables(settings)
        except BotDetectorError as exc:
            (warn or (lambda line: None))(exc.message)
    return report
