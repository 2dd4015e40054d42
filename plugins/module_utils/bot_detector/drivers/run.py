# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three entry points, each the spec's stages in order:

detect   logs -> WindowCounts (tally) -> ranked records (rules) -> verdicts -> appended lines
report   logs -> WindowCounts -> every key at or over a floor; no list read or written
apply    decisions taken elsewhere (the fleet) -> verdicts -> appended lines

With a ban time, detect removes the expired entries first (lists/expiry.py). unblock.py and
status.py hold the other two: unblock (remove entries) and status (read only). With a
metrics file, detect, apply and unblock write metrics after the run (after_change.py, then
reporting/metrics.py).
"""

from __future__ import absolute_import, division, print_function

import re
import sys
import time

from ..base.clock import hour_windows
from ..base.errors import bad_option
from ..base.messages import (ACTIVITY_ADDED_PATTERN, ACTIVITY_REMOVED_PATTERN, BROWSER_SPARED, EXECUTION_TIME,
                             FORMAT_DETECTED, NO_USER_AGENT, UNPARSED_LINES, NOT_COMBINED, READ_AS, UNREADABLE_FORMAT)
from ..base.text import printable, to_bytes, to_text
from ..decision.addresses import entry_key, server_addresses
from ..decision.choice import rules_for
from ..decision.rules import ALLOW_LISTED, BELOW_THRESHOLD, BLOCK, INVALID, counts_at_least, counts_of, decide
from ..lists.allow import read_exclusions
from ..lists.content import count_lines, read_list
from ..lists.writer import BlocklistWriter, removal_pending
from ..reading.logfile import check_readable
from ..reading.spill import Session
from ..reading.tally import count_windows, whole
from ..reporting.result import Result
from ..values.answer_settings import answer_for
from ..values.log_formats import format_of
from .after_change import recorded

__metaclass__ = type


def server_ips_of(settings):
    """The server's own addresses (rule 5.3.8), as bytes."""
    return [to_bytes(ip) for ip in (server_addresses() if settings.server_ips is None else settings.server_ips)]


def count_logs(settings, logs, now, resolver, result, session=None):
    """Rules 2 to 5.3: check the logs, then count them (with ``state_dir``, on from what
    earlier runs counted); with ``session`` (spill.Session), in bounded memory. Returns
    (rules, counts, server_ips, states to save)."""
    for path in logs:       # rule 2, before anything else happens
        check_readable(path)
    now = time.time() if now is None else now
    server_ips = server_ips_of(settings)
    rules = rules_for(settings, resolver)
    readers = log_readers(settings, logs, result)
    states = []
    if settings.state_dir:
        from ..reading.incremental import count_with_state      # state_dir runs only
        counts, states = count_with_state(logs, hour_windows(now), rules.line_filter, settings, now, session, readers)
    else:
        counts = count_windows(logs, hour_windows(now), rules.line_filter, seek=settings.seek,
                               margin=settings.seek_margin, rotated=settings.rotated,
                               count_lines=settings.metrics_file is not None, session=session, readers=readers)
    for line in counts.warnings:
        result.warn(line)
    for scan in counts.scans:
        if scan.format is not None:
            if scan.unparsed:
                result.warn(UNPARSED_LINES % (scan.path, scan.unparsed, scan.format, printable(to_text(scan.unparsed_example or b''))))
        elif scan.unreadable:     # lines, none with a date and hour dd/Mon/yyyy:HH: nothing counted
            fits = read_as(settings, scan.path)
            result.warn(UNREADABLE_FORMAT % scan.path + ('; ' + READ_AS % (fits, fits) if fits else ''))
    unreadable = set(scan.path for scan in counts.scans if scan.format is None and scan.unreadable)
    for path in logs:       # a log read as combined whose first lines mostly are another format
        fits = None if path in unreadable else read_as(settings, path)
        if fits:
            result.warn(NOT_COMBINED % (path, fits, fits))
    return rules, counts, server_ips, states


def read_as(settings, path):
    """The format that reads ``path`` when it is read as combined and most of its first lines
    are that format (hint.py); None else."""
    if format_of(settings, path) != 'combined':
        return None
    from .format_hint import not_combined      # its head only: 64 KiB a log, no format's code
    return not_combined(path)


def log_readers(settings, logs, result):
    """{log: readers.Reader} of the logs in another format than combined (none: the combined
    path, untouched). ``auto`` is decided here, before anything is counted, and said."""
    if settings.log_format == 'combined' and not settings.log_formats:
        return None
    from ..formats.choice import reader_for      # logs in other formats only: a combined run loads no format's code
    readers = {}
    for path in logs:
        name, reader = reader_for(settings, path)
        if format_of(settings, path) == 'auto':
            result.say(FORMAT_DETECTED % (path, name))
            result.formats[path] = name
        if reader is not None:
            readers[path] = reader
            if name == 'haproxy' and settings.haproxy_user_agent_capture is None:
                result.warn(NO_USER_AGENT % path)
    return readers


def _locked_lists(settings, rules, result, check_mode, expire_bans=False):
    """The writer, locked (unless check mode), and the rules' view of both lists read under
    the lock; a run adds its own additions to that view, so the current-hour pass sees
    what the previous-hour pass appended. With ``expire_bans`` and a ban time, the expired
    entries are removed first (expiry.py)."""
    writer = BlocklistWriter(settings.blocklist, settings.activity_log, settings.lock_timeout)
    if not check_mode:
        writer.lock()
    else:
        writer.check()      # what the lock would fail on, without taking it
    try:
        # first: precise rules stop here, nothing changed; their parsed list is kept while the file is unchanged
        exclusions = read_exclusions(settings, result, getattr(rules, 'parse_exclusions', None))
        content = read_list(settings.blocklist)
        result.blocklist_before = content
        if expire_bans and settings.ban_time is not None:
            from ..lists.expiry import expire      # only runs with a ban time pay for it
            content = expire(settings, writer, result, content, check_mode)
        elif not check_mode and removal_pending(settings.blocklist):
            from ..lists.removal import finish_interrupted     # a killed unblock's: rare, so imported then
            content = finish_interrupted(writer, result, content, check_mode)
        result.blocklist_lines = count_lines(content)
        lists = rules.lists(content, exclusions)
        if getattr(lists, 'too_wide_warning', None):        # the precise rules' allow-list lines wider than the limits
            result.warn(lists.too_wide_warning)
        return writer, lists
    except BaseException:
        writer.unlock()
        raise


def _act(result, writer, lists, verdict, key, entry, note=None, batch=None):
    """File the verdict; on BLOCK, append (unless check mode), or add it to ``batch`` (a list)
    for BlocklistWriter.block_all."""
    result.verdict(verdict, key, entry, note)
    if verdict == BLOCK:
        if result.check_mode:
            writer.check(appending=True)    # what the append would fail on, nothing written
        elif batch is not None:
            batch.append((key, entry['count'], note))
        else:
            writer.block(key, entry['count'], note=note)
        lists.add(key)


def _escalation(result, writer, lists, threshold):
    """How a run blocks a client the answers escalate: as the rule's block, noted 'escalated';
    one already blocked or allow-listed is left as it is."""
    def block(key, count):
        if decide(max(count, threshold), key, threshold, lists) == BLOCK:
            _act(result, writer, lists, BLOCK, key, {'address': to_text(key), 'count': count, 'window': 'escalated'},
                 'escalated')
    return block


def detect(settings, logs, now=None, check_mode=False, emit=None, resolver=None, report_floor=None, on_warning=None):
    """The detector's run (spec rules 3 to 6). ``emit(line)`` gets each console line as it
    happens, ``on_warning(line)`` each warning. With ``report_floor``, also return the
    counts a fleet run sums. With a ban time, expired entries are removed first; with a
    metrics file, metrics are written after. Raises BotDetectorError (see
    BlocklistWriter.block for what an append failure leaves)."""
    result = Result(check_mode, emit, on_warning)
    with recorded(settings, result, logs), Session(settings.count_budget, settings.state_dir, create=not check_mode,
                                                   warn=result.warn) as session:
        _detect(result, settings, logs, now, resolver, report_floor, session)
    return result


def _detect(result, settings, logs, now, resolver, report_floor, session):
    check_mode = result.check_mode
    start = int(time.time())
    rules, counts, server_ips, states = count_logs(settings, logs, now, resolver, result, session)
    result.scans = [scan.as_dict() for scan in counts.scans]
    if report_floor is not None:
        result.counts = reported_counts(rules, counts, server_ips, report_floor)
    if settings.fleet_store and not check_mode:
        from .fleet import fleet_run      # a fleet store only: redis-py
        counts, result.fleet = fleet_run(settings, counts, result.warn, logs, getattr(rules, 'campaigns', None), server_ips)

    def save_states():
        if states and not check_mode:
            from ..reading.saves import save      # state_dir runs only
            problem = save(settings.state_dir, states, settings.state_budget)
            for line in problem.split('\n') if problem else ():
                result.warn(line)
    if settings.throttle_list or settings.challenge_list:
        from ..reading.answered import answered      # with an answer list only
        result.answered = answered(logs, [window.stamp for window in counts.windows], settings.job_prefixes)
    decide_and_append(result, settings, rules, counts, server_ips, after=save_states, now=now)
    result.rules = rules.name
    result.verifications = rules.verifications
    result.duration = int(time.time()) - start
    result.say(EXECUTION_TIME % result.duration)


def decide_and_append(result, settings, rules, counts, server_ips, expire_bans=True, after=None, records_under=True, now=None,
                      judge=True):
    """The one decision step (rules 5.3.7 to 6), a run's and a follower's (follow.py): under
    the lock, the lists read (expired bans removed first, with ``expire_bans``), each
    window's ranked records judged, each block appended; then ``after()``, still under the
    lock, after the appends: a state saved there by a process killed before it keeps the
    old one, which costs a cold start or a re-read, never a count. Without
    ``records_under`` (a follower, which shows no record), the records under the threshold
    may be left out of the ranking: they get no verdict, and leaving them out changes none.
    With the campaign profile (rules.campaigns), each window's other keys are judged too (not
    ``judge``: its ranked and fleet records only, decision/between.py); with ``sliding_hour``,
    the current window's counts are the sliding hour's at ``now``."""
    # Ranked before the lock: the ranking reads no list, and the precise rules' crawler
    # verification (DNS, up to dns_budget seconds) must not hold the lock.
    at_least = None if records_under else settings.threshold
    fleet = getattr(counts, 'fleet_records', {})        # with a fleet store: per window, the fleet's own records
    windows = list(counts)
    campaigns = getattr(rules, 'campaigns', None)
    if campaigns:
        campaigns.step_begin()      # what is worked out of the counts is kept until step_done(), below
    raw = [whole(counter) for window, counter in windows] if campaigns else ()     # behaviour: by the windows' own counts, added up
    view = campaigns.behaviour_view(raw) if campaigns and judge else None
    if getattr(settings, 'sliding_hour', False):
        from ..decision.campaigns import sliding, sliding_weight    # the sliding hour only
        # The repeated hour of a DST night is both windows' stamp, the same lines: counted once.
        weight = 0 if windows[0][0].stamp == windows[-1][0].stamp else sliding_weight(now)
        windows[-1] = (windows[-1][0], sliding(whole(windows[0][1]), whole(windows[-1][1]), weight))
    result.softer = {} if campaigns is not None and result.softer is None else result.softer
    examined = [(window, rules.examined(counter, server_ips, settings.top, at_least)) for window, counter in windows]
    wholes = [whole(counter) for window, counter in windows] if campaigns else ()
    ranked = []
    for at, (window, records) in enumerate(examined):
        fleet_records = fleet_beside(records, fleet.get(window.stamp, ()), settings.threshold)
        judged = campaigns.judge(wholes[at], records, server_ips, fleet_records, view) if campaigns and judge else ({}, ())
        if campaigns and not judge:
            from ..decision.between import judge_ranked     # a follower's steps between judgements only
            judged = judge_ranked(campaigns, wholes[at], records, fleet_records, raw)
        if campaigns and judge and getattr(counts, 'fleet_campaigns', {}).get(window.stamp):      # the fleet's, beside the host's own
            from ..decision.fleet_campaigns import fleet_decisions      # a fleet store only
            judged = (judged[0], list(judged[1]) + fleet_decisions(campaigns, wholes[at], judged[1], counts.fleet_campaigns[
                window.stamp], server_ips, settings.threshold))
        ranked.append((window, records, fleet_records, judged))
    if campaigns:
        campaigns.step_done()
    if settings.throttle_list or settings.challenge_list:
        from .answers import answers_writable, lists_due      # with an answer list only
        if lists_due(settings, ranked):
            answers_writable(settings)      # before any change (an expiry, the blocklist's appends): a run fails on it, nothing written
    writer, lists = _locked_lists(settings, rules, result, result.check_mode, expire_bans=expire_bans)
    softer = []
    try:
        for window, records, fleet_records, (judged, others) in ranked:
            result.say(window.heading)
            result.window(window, records + fleet_records)
            for count, key in records + fleet_records:
                verdict = decide(count, key, settings.threshold, lists)
                if verdict == BLOCK and answer_for(settings, 'address') != BLOCK and key not in judged:
                    softer.append((key, 'RPH=%d' % count))      # answered by its own list, never blocked for it
                elif verdict != BELOW_THRESHOLD:
                    entry = {'address': to_text(key), 'count': count, 'window': window.name}
                    note = 'fleet' if (count, key) in fleet_records else None
                    if verdict == BLOCK and key in judged:
                        note = judged[key].reason
                        if judged[key].answer is None:
                            result.say(BROWSER_SPARED % (entry['address'], count, note))
                            continue
                        if judged[key].answer != BLOCK:
                            result.answer(judged[key].answer, dict(entry, reason=note))
                            continue
                    _act(result, writer, lists, verdict, key, entry, note)
            batch = []      # a campaign's thousands of trap hits: one append and one fsync per file
            for decision in others:
                entry = {'address': to_text(decision.key), 'count': decision.count, 'window': window.name}
                verdict = lists.decided(decision.key) if b'/' not in decision.key else BLOCK
                if decision.answer == BLOCK or verdict in (ALLOW_LISTED, INVALID):
                    _act(result, writer, lists, verdict, decision.key, entry, decision.reason, batch)
                elif verdict == BLOCK:      # not to the blocklist: a list of its own
                    result.answer(decision.answer, dict(entry, reason=decision.reason))
            writer.block_all(batch)
        if result.softer and result.appended:
            result.drop_softer(result.appended)
        decisions = {}
        if softer or result.softer:
            from .answers import softer_decisions      # softer decisions only
            decisions = softer_decisions(settings, softer, result.softer, result.appended)
        lists_kept_up = expire_bans or getattr(result, 'answered', None) is not None     # a follower: an expiry, or a key to escalate
        if decisions or (lists_kept_up and (settings.throttle_list or settings.challenge_list)):
            from .answers import answer_decisions     # with softer decisions or an answer list only
            answer_decisions(result, settings, decisions, _escalation(result, writer, lists, settings.threshold))
        if after is not None:
            after()
    finally:
        writer.unlock()


def fleet_beside(records, fleet_records, threshold):
    """The fleet's records of a window (decision/fleet_answers.py) decided after the host's own
    ``records``, which they never displace: those whose key the host's own count does not
    already take to the threshold."""
    own = set(key for count, key in records if count >= threshold)
    return [(count, key) for count, key in fleet_records if key not in own]


def report(settings, logs, floor=None, candidates=None, now=None, resolver=None):
    """Count only, for the fleet; no list is read or written. Each window's counts are
    those of every key, with the rules' filters, grouping and server drop.

    Phase 1 (``candidates`` None): per window every key with ``floor`` (default: the
    threshold) or more requests, and this host's own blocks. Phase 2: ``candidates``,
    {window name or hour stamp: [key]}, gets the exact count of each key asked, 0
    included, in the windows named; the floor is not used. ``now`` (epoch) in phase 2
    is phase 1's, so that both count the same hours."""
    if candidates is not None and not (isinstance(candidates, dict) and all(
            isinstance(keys, (list, tuple)) and all(isinstance(key, str) for key in keys) for keys in candidates.values())):
        raise bad_option('candidates must map each window (name or hour stamp) to a list of keys, got %r' % (candidates,))
    result = Result()
    with Session(settings.count_budget, settings.state_dir, create=False, warn=result.warn) as session:
        return _report(settings, logs, floor, candidates, now, resolver, session, result)


def _report(settings, logs, floor, candidates, now, resolver, session, result):
    start = int(time.time())
    now = time.time() if now is None else now
    rules, counts, server_ips, dummy = count_logs(settings, logs, now, resolver, result, session)    # state read, not written
    result.scans = [scan.as_dict() for scan in counts.scans]
    result.now = int(now)
    if candidates is None:
        floor = settings.threshold if floor is None else floor
        result.counts = reported_counts(rules, counts, server_ips, floor)
        result.report_floor = floor
        result.local_blocks = local_blocks(settings.activity_log, read_list(settings.blocklist))
        if getattr(rules, 'campaigns', None) is not None:      # the campaign keys, for the playbook to sum
            from ..decision.fleet_campaigns import reported_campaigns     # the campaign profile only
            result.campaign_counts = reported_campaigns(rules.campaigns, counts, server_ips, settings)
    else:
        result.counts = {}
        for window, counter in counts:
            asked = candidates.get(window.name, candidates.get(to_text(window.stamp), ()))
            result.counts[window.name] = _asked_counts(rules, counter, server_ips, asked) if asked else {}
    for window, dummy in counts:
        result.window(window, [])
    result.rules = rules.name
    result.verifications = rules.verifications
    result.duration = int(time.time()) - start
    return result


def apply(settings, decisions, check_mode=False, emit=None, resolver=None):
    """Append decisions taken elsewhere, ``[{address, count, reason}]``, with the same list
    checks as a run (already listed, allow-listed, only addresses) and no threshold: the
    decision is taken. Activity lines are noted '(fleet)' or '(sync)'."""
    result = Result(check_mode, emit)
    with recorded(settings, result):
        rules = rules_for(settings, resolver)
        writer, lists = _locked_lists(settings, rules, result, check_mode)
        try:
            batch = []      # a spread scraper's hundreds of addresses: one append and one fsync per file
            for decision in decisions:
                if decision.get('answer') == 'challenge':       # a campaign's network: its own list, never the blocklist
                    from ..decision.fleet_campaigns import file_challenge     # challenge decisions only
                    file_challenge(result, settings, lists, decision)
                    continue
                key = rules.decision_key(to_bytes(decision['address']))
                count = int(decision.get('count') or 0)
                note = decision.get('reason') or 'fleet'
                entry = {'address': to_text(key), 'count': count, 'window': decision.get('window') or note}
                _act(result, writer, lists, lists.verdict(key), key, entry, note, batch)
            writer.block_all(batch)
            if result.softer:
                from .answers import answer_decisions, softer_decisions     # with challenge decisions only
                answer_decisions(result, settings, softer_decisions(settings, [], result.softer))
        finally:
            writer.unlock()
        result.rules = rules.name
    return result


def _key_counts(rules, counter, server_ips, floor=None, wanted=None):
    """{key: count} of one window as the module returns it, for the precise rules (whose
    keys group fields: their counts are known only once grouped): the keys with ``floor``
    or more requests, or those ``wanted`` accepts (a test of a key's bytes). Both bound
    what is kept, spilled counts or not: a part at a time, at most lines / floor keys or
    the keys asked."""
    records = rules.examined(whole(counter), server_ips, sys.maxsize, at_least=floor, wanted=wanted)
    return dict((printable(to_text(key)), count) for count, key in records)


def _asked_counts(rules, counter, server_ips, asked):
    """{key: count} of the keys ``asked`` (texts as the module returns them), 0 for one not
    counted. The spec rules look each up, the precise rules rank only the keys asked: one
    part of spilled counts at a time either way."""
    spellings = dict((text, _key_bytes(text)) for text in set(asked))
    wanted = set(key for keys in spellings.values() for key in keys)
    if rules.name == 'spec':
        counts = counts_of(whole(counter), server_ips, sorted(wanted))
    else:
        counts = dict((key, count) for count, key in
                      rules.examined(whole(counter), server_ips, sys.maxsize, wanted=wanted.__contains__))
    return dict((text, sum(counts.get(key, 0) for key in spellings[text])) for text in asked)


_ESCAPE = re.compile(br'\\x([0-9a-f]{2})')


def _key_bytes(text):
    """The keys (bytes) whose text, as the module returns it (printable), is ``text``: its
    UTF-8 bytes, or, where printable shows an undecodable byte as ``\\xNN``, that byte."""
    literal = to_bytes(text)
    unescaped = _ESCAPE.sub(lambda match: bytes(bytearray([int(match.group(1), 16)])), literal)
    return [key for key in ([literal] if unescaped == literal else [literal, unescaped])
            if printable(to_text(key)) == text]


def reported_counts(rules, counts, server_ips, floor):
    """Per window, every key with ``floor`` or more requests, with the rules' filters and
    server drop: what a fleet run sums across hosts. Either rules keep only those (at most
    lines / floor of them), a part of spilled counts at a time."""
    reported = {}
    for window, counter in counts:
        if rules.name == 'spec':
            reported[window.name] = dict((printable(to_text(key)), count) for key, count in
                                         counts_at_least(whole(counter), server_ips, floor).items() if key[:1] != b'\t')  # no campaign signal
        else:
            reported[window.name] = _key_counts(rules, counter, server_ips, floor=floor)
    return reported


def local_blocks(activity_log, blocklist):
    """The additions this host's own runs made, from its activity log (lines without a
    '(fleet)' or '(sync)' note), in order, once each, less those removed since and those no
    longer in ``blocklist`` (its content: an entry taken out by hand, or by an unblock killed
    before its activity line, is not this host's block any more)."""
    listed = set(entry_key(line.strip()) for line in blocklist.split(b'\n'))
    pattern, removal = re.compile(ACTIVITY_ADDED_PATTERN), re.compile(ACTIVITY_REMOVED_PATTERN)
    found = {}
    for line in read_list(activity_log).split(b'\n'):
        match = pattern.search(line)
        if match and match.group(3) is None and entry_key(match.group(1)) not in found:
            found[entry_key(match.group(1))] = (match.group(1), int(match.group(2)))
        elif match is None:
            match = removal.search(line)
            if match:       # unblocked or expired since, under any spelling: not to be synced back
                found.pop(entry_key(match.group(1)), None)
    return [{'address': to_text(address), 'count': count} for key, (address, count) in found.items() if key in listed]
