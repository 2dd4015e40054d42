# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``--unblock ADDRESS`` (module: ``unblock``): take addresses off the blocklist, under the
run's lock, with the lists' removal step (lists/removal.py); then what follows a change."""

from __future__ import absolute_import, division, print_function

from ..base.messages import NOT_LISTED, UNBLOCK_HOST_BITS, UNBLOCK_REASON, unanswering, unblocking
from ..base.text import to_text
from ..decision.ranges import host_bits_network
from ..lists.answers import unanswer
from ..lists.removal import remove, wanted_addresses
from ..lists.writer import BlocklistWriter
from ..reporting.result import Result
from ..values.answer_settings import ANSWERS
from .after_change import recorded
from .answers import sync_answers

__metaclass__ = type


def unblock(settings, addresses, check_mode=False, emit=None, on_warning=None):
    """Remove ``addresses`` from the blocklist, under the run's lock: a line equal to one of
    them goes, every other line stays as it was. An address not listed is a message."""
    result = Result(check_mode, emit, on_warning)
    wanted = wanted_addresses(addresses)
    result.unblocked, result.not_listed = [], []
    answered = set()
    with recorded(settings, result):
        writer = BlocklistWriter(settings.blocklist, settings.activity_log, settings.lock_timeout)
        if not check_mode:
            writer.lock()
        try:
            removed = remove(writer, wanted, lambda address: UNBLOCK_REASON, result, check_mode)[0]
        finally:
            writer.unlock()
        for kind in ANSWERS:        # the softer answers' lists too: unblock means no answer at all
            if getattr(settings, kind + '_list'):
                for address, lines in unanswer(settings, kind, wanted, check_mode).items():
                    result.unblocked.append({'address': to_text(address), 'lines': lines, 'answer': kind})
                    result.say(unanswering(kind, to_text(address), check_mode))
                    answered.add(address)
        if (settings.throttle_list or settings.challenge_list) and not check_mode:
            sync_answers(settings, result.warn, bool(answered))     # a killed removal's finish too
        for address in wanted:
            if address in removed:
                result.unblocked.append({'address': to_text(address), 'lines': removed[address]})
    for address in wanted:
        text = to_text(address)
        if address in removed:
            result.say(unblocking(text, check_mode))
        elif address not in answered:
            result.say(NOT_LISTED % text)
            result.not_listed.append(text)
            network = host_bits_network(address)
            if network is not None:
                result.warn(UNBLOCK_HOST_BITS % (text, to_text(network)))
    return result
