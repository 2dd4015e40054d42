# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Follow mode (``--follow``): one long-running process that reads the logs as they grow
and decides, at most DECIDE_EVERY seconds after new lines were read, as a run at that
instant would: the same counting (tally.read_log at its start, chunks.count_range on),
the same decision step and appends (run.decide_and_append). It differs from a run only in
when it calls them (and in keeping a window's ranking until its counts change: Rankings; with the
campaign profile, in judging every key at a pace, its ranked records between: Judgements).

- Reading: polling, POLL_IDLE seconds asleep while nothing grows, READ_BLOCK bytes of
  whole lines per log and round while busy. A rename (logrotate's default, a symlink
  pointed elsewhere): the old file is read on until it has been quiet for DRAIN_QUIET
  seconds, the new one from its start. A truncation (copytruncate): the rest of the old
  content is read from the copy (LOG.1, found by its first bytes), the log from its start.
  A log that does not exist yet is waited for. Counts read stay, whatever the rotations.
- The windows' counts are kept per hour stamp (the windows', and those a later window can
  have up to state.HORIZON ahead); at the top of the hour the windows move, as a run's do.
- State: one file in the state directory holds every log's position (device, inode, offset,
  first bytes, and an old file still being read) and the counts, written atomically together
  at least every SAVE_EVERY seconds and at SIGTERM. After a restart or a kill -9 it reads on
  from there: no line is lost or counted twice.
- Status: a file in the lock directory (pid, logs, how far behind) for --status (status.py).
- With an answer list: the answers read back from the ranges counted (reading/answered.py),
  kept in the state, for the escalation a decision makes as a run's does.
"""

from __future__ import absolute_import, division, print_function

import base64
import os
import signal
import time

from ..base import messages
from ..base.clock import hour_stamp, hour_windows
from ..base.errors import Interrupted
from ..decision.choice import rules_for
from ..lists.writer import lock_directory
from ..reading import state
from ..reading.chunks import count_range, lines_end
from ..reading.holes import line_end_after
from ..reading.growing import Position, Source, holds, open_followed, unseen_siblings
from ..reading.logfile import rotated_sibling
from ..reading.saves import remove_leftovers
from ..reading.spill import Session, SpillCounter
from ..reading.tally import Tally, WindowCounts, read_log
from ..reporting.result import Result
from .after_change import after_run
from .follower_state import (Clock, Judgements, OnceAnHour, Rankings, claim, expired_in, files_stat, jsonable, key_of, leave, load,
                             must_judge, publish, save, saved_positions_valid)
from .run import decide_and_append, server_ips_of

__metaclass__ = type

POLL_IDLE = 0.25        # seconds asleep when no log grew
READ_BLOCK = 32 * 1024 * 1024   # bytes of whole lines read per log before the next decision check
DECIDE_EVERY = 0.5      # seconds between decisions while lines arrive
JUDGE_EVERY, JUDGE_SHARE = 2.0, 0.05    # the campaign profile's judgements (Judgements): seconds apart at least, share of the time at most
SAVE_EVERY = 5.0        # seconds between state saves (and metrics, status)
EXPIRE_EVERY = 30.0     # seconds between expiries (ban_time set, or an answer list's answer_time)
DRAIN_QUIET = 2.0       # seconds an old file (renamed away) must stay unchanged before it is closed


class Follower:
    def __init__(self, settings, logs, clock, emit, warn, resolver=None):
        self.settings, self.logs, self.clock, self.emit, self.warn = settings, logs, clock, emit, warn
        self.rules = Rankings(rules_for(settings, resolver))     # rankings kept while the counts stay
        self.server_ips = server_ips_of(settings)
        self.sources = [Source(path) for path in logs]
        self.odd_paths = set()          # logs whose path holds something else than a file, said once
        self.formats = None     # logs in another format than combined: their readers (formats/followed.py)
        self.readers, self.unparsed = {}, {}    # log: its reader; its lines that did not parse since the start
        if settings.log_format != 'combined' or settings.log_formats:
            from ..formats.followed import FollowedFormats      # logs in other formats only
            self.formats = FollowedFormats(settings, logs, warn)
            self.readers, self.unparsed = self.formats.readers, self.formats.unparsed
        self.label = ','.join(logs)
        self.path = None        # the log being polled
        self.tally, self.hour, self.stop = None, None, False
        self.additions, self.removals = {}, 0
        self.caught_up_at = clock()
        key = key_of(logs)
        self.state_path = os.path.join(settings.state_dir, key + '.json')
        self.status_path = os.path.join(lock_directory(), key + '.json')
        self.decided_at = self.enforcement = None
        self._pid_fd = None
        # Bounded memory (issue 19): past count_budget distinct addresses, the windows'
        # counts go to spill files; the state is then not kept (STATE_OVER_BUDGET, once).
        self.session = Session(settings.count_budget, settings.state_dir, warn=warn)
        self.session.summaries = True   # it ranks twice a second: from a summary of the files, read once per spill
        self.state_dropped = self.state_unsaved = False
        self.decide_seconds = 0.0       # the last decision's duration: spilled counts take longer
        self.judgements = Judgements(bool(settings.campaigns), JUDGE_EVERY, JUDGE_SHARE)
        self.step_warning = OnceAnHour(warn)
        self.read = [0, 0]              # bytes and lines read since the metrics were last written
        self.fleet = None       # with fleet_store: its pushes and crossings (fleet.Fleet), from run()
        self.fleet_reported = 0     # the fleet's decisions_received at the last metrics write
        self.answered = None        # with an answer list: its answers read back (reading/answered.py)
        self.expiring = settings.ban_time is not None or bool(settings.throttle_list or settings.challenge_list)     # answer_time: always
        if settings.throttle_list or settings.challenge_list:
            from ..reading.answered import Followed      # with an answer list only
            self.answered = Followed((), settings.job_prefixes, settings.answer_escalation)

    # ---- counting

    def _new_tally(self, now):
        windows = hour_windows(now)
        self.horizon = now + state.HORIZON
        return Tally([w.stamp for w in windows], self.rules.line_filter, state.stamps_in_play(now, self.horizon), session=self.session,
                     count_lines=self.settings.metrics_file is not None, changed=getattr(self.fleet, 'changed', None))

    def _move_windows(self, now):
        """At the top of the hour, a tally for the new windows, with the counts held (and
        the hours tracked ahead renewed a day on)."""
        hour = (hour_stamp(now - 3600), hour_stamp(now))     # both, as hour_windows (a DST night)
        if self.tally is not None and hour == self.hour and now < self.horizon - 7200:
            return False
        self.hour = hour
        fresh = self._new_tally(now)
        if self.tally is not None:
            for stamp, counter in self.tally.counters.items():
                if stamp in fresh.counters:
                    fresh.counters[stamp] = counter
                elif isinstance(counter, SpillCounter):
                    counter.discard()       # an hour past: its spill files go
        self.tally = self.rules.counting(fresh)
        if self.answered is not None:
            self.answered.move(fresh.stamps + fresh.tracked)
        return True

    def _count(self, pos, end):
        """Count the whole lines of ``pos`` up to ``end`` (a line start or the file's end)."""
        if end > pos.offset:
            lines = self.tally.lines
            try:
                count_range(pos.fd, pos.offset, end, self.tally, self._stopping)
            except Interrupted as exc:      # SIGTERM in a long line (a NUL run): the lines before it are counted
                end = exc.position
            self.read[0] += end - pos.offset        # for the metrics: since their last write
            self.read[1] += (self.tally.lines or 0) - (lines or 0)
            if self.answered is not None:
                self.answered.read_range(pos.fd, pos.offset, end)
            if self.formats is not None:
                self.formats.counted(self.path, pos.fd, pos.offset, end)
            pos.offset = end
            self.rules.changed()
            if len(pos.head) < state.HEAD_BYTES:
                pos.head = os.pread(pos.fd, state.HEAD_BYTES, 0)

    def _read_on(self, pos, limit=READ_BLOCK, finished=False):
        """Read ``pos`` on, at most ``limit`` bytes of whole lines (all of a file that is
        ``finished``: its last line too). Returns the bytes counted."""
        size = os.fstat(pos.fd).st_size
        start = pos.offset
        if finished:
            self._count(pos, size)
        elif size > start:
            stop = min(size, start + limit)
            end = lines_end(pos.fd, start, stop)
            if end == start and stop < size:    # a line longer than the block (a NUL run, a hole): it alone
                try:
                    end = line_end_after(pos.fd, stop, size, self._stopping) or start
                except Interrupted:
                    end = start
            self._count(pos, end)
        return pos.offset - start

    def _read_copy(self, source, pos):
        """The log was truncated (copytruncate): read the rest of its old content from the
        copy, LOG.1, when it holds what was read (same first bytes, as long)."""
        sibling = rotated_sibling(source.path)
        fd = open_followed(sibling) if sibling and not sibling.endswith('.gz') else None
        if fd is None:
            self.warn(messages.FOLLOW_LOST % (source.path, 'truncated, and no copy of it found'))
            return
        try:
            if pos.head and holds(fd, pos.head, pos.offset):
                copy = Position(fd, pos.offset, pos.head)
                self._read_on(copy, finished=True)
            else:
                self.warn(messages.FOLLOW_LOST % (source.path, 'truncated, and %s does not hold its lines' % sibling))
        finally:
            os.close(fd)

    def _poll(self, source):
        """One round of one log; the bytes counted (none before its format is known: auto, a log not there at the start)."""
        if self.formats is not None and not self.formats.known(source.path):
            return 0
        self.tally.reader = self.readers.get(source.path)       # this log's format, one tally for all
        self.path = source.path
        try:
            return self._poll_files(source)
        finally:
            if self.formats is not None:
                self.formats.polled(source.path, self.tally.reader)

    def _poll_files(self, source):
        read, looked_at = 0, time.time()
        for pos in list(source.old):
            got = self._read_on(pos)
            now = time.time()
            if got or pos.quiet_since is None:
                pos.quiet_since = now
            elif now - pos.quiet_since >= DRAIN_QUIET:
                read += self._read_on(pos, finished=True)
                source.old.remove(pos)
                os.close(pos.fd)
            read += got
        if source.current is None:
            fd = open_followed(source.path, self._odd_path)
            if fd is None:
                return read
            self.odd_paths.discard(source.path)
            source.current = Position(fd)
        pos = source.current
        try:
            info = os.stat(source.path)
        except OSError:
            info = None                 # renamed away, the new one not made yet: read on
        if info is not None and (info.st_dev, info.st_ino) != (pos.dev, pos.ino):
            fd = open_followed(source.path, self._odd_path)     # renamed (or a link pointed elsewhere): the new file from its start
            if fd is not None:
                source.old.append(pos)
                source.current = pos = Position(fd)
                read += self._read_on(source.old[-1])
                for missed in unseen_siblings(source):      # rotated again before this look: read as old files
                    source.old.append(Position(missed))
                    read += self._read_on(source.old[-1])
        size = os.fstat(pos.fd).st_size
        if size < pos.offset or (pos.offset and os.pread(pos.fd, len(pos.head), 0) != pos.head):
            self._read_copy(source, pos)
            pos.offset, pos.head = 0, b''
        source.looked_at = looked_at
        return read + self._read_on(pos)

    # ---- start: a state, or what a run reads

    def _resume(self, doc, counts):
        if not doc or doc.get('logs') != self.logs or doc.get('settings') != jsonable(state.counting_settings(self.settings)):
            return False
        if not saved_positions_valid(doc.get('positions'), len(self.sources)):
            # Its own file, damaged or edited: read cold rather than die at every restart.
            self.warn(messages.STATE_IGNORED % (self.state_path, 'its saved positions are not what a follower writes'))
            return False
        for source, saved in zip(self.sources, doc['positions']):
            for entry in saved['old'] + ([saved['current']] if saved['current'] else []):
                self._resume_file(source, entry, entry is saved['current'])
        for stamp, entries in counts.items():
            if stamp in self.tally.counters:
                self.tally.counters[stamp].update(dict(entries))
        if self.answered is not None:
            self.answered.resume(doc.get('answered'))
        return True

    def _resume_file(self, source, entry, current):
        """Find a saved file again: the log itself, or its rotated copy (LOG.1) when it was
        renamed or copied while the follower was down; read on from the saved offset."""
        dev, ino, offset, head = entry['dev'], entry['ino'], entry['offset'], base64.b64decode(entry['head'])
        for path in (source.path, rotated_sibling(source.path)):
            fd = open_followed(path) if path and not path.endswith('.gz') else None
            if fd is None:
                continue
            info = os.fstat(fd)
            same = (info.st_dev, info.st_ino) == (dev, ino)
            if (same or (head and path != source.path)) and holds(fd, head, offset):   # the log itself, or a copy
                pos = Position(fd, offset, head)
                if path == source.path and current:
                    source.current = pos
                else:
                    source.old.append(pos)
                    pos.quiet_since = time.time()
                return
            os.close(fd)
        self.warn(messages.FOLLOW_LOST % (source.path, 'a file read before the restart is gone'))

    def _odd_path(self, path):
        """Something else than a file at a log's path: said once until a file is there again."""
        if path not in self.odd_paths:
            self.odd_paths.add(path)
            self.warn(messages.FOLLOW_NOT_A_FILE % path)

    def _start(self, now):
        self._move_windows(now)
        doc, counts = load(self.state_path, self.settings.state_budget, self.warn)
        if self._resume(doc, counts):
            return
        settings = self.settings
        seen = set()

        def first_time(handle):
            key = os.fstat(handle.fileno())[1:3]
            if key in seen:
                return False
            seen.add(key)
            return True

        for source in self.sources:     # the one reading loop, as a cold run reads the log
            if not os.path.exists(source.path):
                continue
            tally, reader = self.tally, self.readers.get(source.path)
            new_tally = tally.fresh if reader is None else (lambda: tally.fresh(reader.fresh()))  # noqa: E731
            files, warnings = read_log(source.path, tally.stamps, new_tally, first_time, settings.seek,
                                       settings.seek_margin, settings.rotated, with_tail=True,
                                       identify=lambda handle, scan: (os.dup(handle.fileno()), scan.end))
            for line in warnings:
                self.warn(line)
            for read in files:
                tally.add(read.tally.counters)
                self.read[0] += read.scan.bytes_read
                self.read[1] += read.tally.lines or 0
                # Not the unfinished last line's (read.tail): it is read again once finished.
                if self.formats is not None:
                    self.formats.take_unparsed(source.path, read.tally.reader)
                fd, end = read.identity
                pos = Position(fd, end, os.pread(fd, state.HEAD_BYTES, 0))
                if read.path == source.path:
                    source.current = pos
                    if self.answered is not None:       # the log's answers as a run reads them: itself, whole
                        self.answered.read_range(fd, 0, end)
                else:
                    os.close(fd)        # a rotated file is finished

    # ---- saving

    def save(self, now, unless=None):
        """Write the state, unless its positions and windows are ``unless``; returns them."""
        return save(self, now, unless)

    def publish(self, now, behind_bytes, metrics=True):
        """The status file (--status) and, with ``metrics``, the metrics."""
        publish(self, now, behind_bytes, metrics)

    # ---- deciding

    def decide(self, now, expire, first=False, judge=False):
        """A run's decision step at ``now`` on the counts held (with the campaign profile, its
        judgement only at the first, with ``judge``: Judgements); then, with enforcement, its
        sync, as after a run (at the start, and after each change to the blocklist)."""
        started = self.judgements.start()
        result = Result(emit=None, on_warning=self.step_warning)
        counts = WindowCounts(hour_windows(now), [self.tally.counters[w.stamp] for w in hour_windows(now)])
        if self.fleet is not None:      # the fleet's sums of the addresses that crossed, over this host's own
            counts = self.fleet.overlay(counts)
        judge = judge or must_judge(counts)
        if self.answered is not None:       # the escalation's counts, when a key reached answer_escalation
            result.answered = self.answered.due([w.stamp for w in counts.windows], files_stat(
                [path for path in (self.settings.throttle_list, self.settings.challenge_list) if path]))
        judge = first or judge or not self.judgements.active
        decide_and_append(result, self.settings, self.rules, counts, self.server_ips, expire_bans=expire, records_under=False,
                          now=now, judge=judge)
        self.decided_at = time.time()
        self.judgements.done(judge, expired_in(result))
        self.decide_seconds = self.decided_at - started
        if self.settings.enforcement != 'none' and (first or result.changed):
            after_run(self.settings, result)
            self.enforcement = result.enforcement
        for line in result.block_lines:
            self.emit(line)
        for reason, count in result.additions.items():
            self.additions[reason] = self.additions.get(reason, 0) + count
        self.removals += len(result.expired)

    def recheck(self):
        """The enforcement point still holds the blocklist (a table lost to ``nft flush ruleset``,
        a geo file removed: loaded again; the metrics say in_sync 0 until it is). A failure is
        warned once, when the point was in sync before."""
        if self.settings.enforcement != 'none':
            was = (self.enforcement or {}).get('in_sync')
            result = Result(emit=None, on_warning=self.warn if was else (lambda line: None))
            after_run(self.settings, result)
            self.enforcement = result.enforcement

    def run(self):
        pid_path = self.status_path[:-len('.json')] + '.pid'
        self._pid_fd = claim(pid_path, messages.FOLLOW_TWICE % self.label)
        for directory in (os.path.dirname(self.status_path), self.settings.state_dir):
            remove_leftovers(directory)     # what a follower killed while it wrote (kill -9, the OOM killer) left
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        now = self.clock()
        try:
            if self.settings.fleet_store:
                from .fleet import Fleet        # a fleet store only: redis-py, a thread
                self.fleet = Fleet(self.settings, self.warn, logs=self.logs, tracked=True, rules=self.rules, server_ips=self.server_ips).start()
            # --status lists it from its start: all of the logs to read, then after its first decision
            self.publish(now, sum(os.path.getsize(path) for path in self.logs if os.path.isfile(path)), metrics=False)
            self._start(now)
            self.decide(now, expire=self.expiring, first=True)
            self.publish(now, sum(source.behind() for source in self.sources), metrics=False)
            last_decision = last_save = last_expiry = time.time()
            lists_seen, saved = self._lists_stat(), None
            pending = False
            while not self.stop:
                read = sum(self._poll(source) for source in self.sources)
                now, wall = self.clock(), time.time()
                moved = self._move_windows(now)
                pending = pending or bool(read)
                lists_now = self._lists_stat()
                expire = self.expiring and wall - last_expiry >= EXPIRE_EVERY
                due = pending and wall - last_decision >= max(DECIDE_EVERY, self.decide_seconds)     # spilled: at most half the time
                news = self.fleet is not None and self.fleet.fresh      # crossings learnt since the last decision
                self.judgements.owed = self.judgements.owed or bool(read) or news or lists_now != lists_seen
                judge = moved or news or self.judgements.due()
                decided = due or moved or expire or lists_now != lists_seen or news or judge
                if decided:
                    self.decide(now, expire, judge=judge)
                    last_decision, pending, lists_seen = time.time(), False, self._lists_stat()     # from its end: a slow one is not due at once
                    last_expiry = wall if expire else last_expiry
                if self.fleet is not None:      # the counts handed to the store after the decision: a local block never waits
                    self.fleet.tick(self.tally.counters, hour_windows(now), read)
                behind = sum(source.behind() for source in self.sources)
                if not behind and not pending:
                    self.caught_up_at = now
                if decided:
                    self.publish(now, behind, metrics=False)
                if wall - last_save >= SAVE_EVERY:
                    self.recheck()
                    saved = self.save(now, saved)      # only when positions or windows changed
                    self.publish(now, behind)
                    last_save = wall
                if not read and not self.stop:
                    time.sleep(POLL_IDLE)
            if sum(self._poll(source) for source in self.sources) or pending or self.judgements.owed:     # what SIGTERM found written
                self.decide(self.clock(), False, judge=True)
            self.save(self.clock())
            self.publish(self.clock(), sum(source.behind() for source in self.sources))
            leave(pid_path, self.status_path)       # stopped: nothing left in the lock directory
        finally:
            if self.fleet is not None:
                self.fleet.close()
            for source in self.sources:
                source.close()
            self.session.close()
            os.close(self._pid_fd)

    def _on_signal(self, signum, frame):
        self.stop = True

    def _stopping(self):
        return self.stop

    def _lists_stat(self):
        return files_stat((self.settings.blocklist, self.settings.exclusions_file))


def follow(settings, logs, now=None, emit=None, on_warning=None, resolver=None):
    """The command's --follow: runs until SIGTERM or SIGINT; returns when its state is saved."""
    Follower(settings, logs, Clock(now), emit or (lambda line: None), on_warning or (lambda line: None),
             resolver).run()
