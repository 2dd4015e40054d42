# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Counting with a state (``--state-dir``): each log's bytes are read once, and each run
adds what was appended since the previous one to the counts it carries (state.py).

The windows' counts are always those a cold run (tally.count_windows) would find at the
same moment, with the same settings, as long as the seek's assumption holds (a cold run
relies on it too): per log, a state is used only when it is the log's, was made under
the same counting settings by a run at the same time or earlier, and tracks both
windows' hour texts. Then:

- the log is the same file, grown: its new bytes are read;
- the log was rotated (``rotated`` on; its old file is now LOG.1 or LOG.1.gz, renamed,
  copied or compressed, found by its first bytes): the old file is read on from where the
  state left it, then the new log from its start; its counts (and its unfinished last
  line) are kept apart and added only when a cold run would read LOG.1 (the log starts
  after the windows can begin), else LOG.1 is left to be read as a log of its own;
- anything else (truncated, replaced, a LOG.1 that is not the old file, a gzip log, a
  state that read nothing of the log, which any file matches): the log is counted cold,
  and a new state starts.

A last line without its newline is counted for this run only, never into the state.
"""

from __future__ import absolute_import, division, print_function

import os
from collections import Counter

from ..base.errors import BotDetectorError
from . import saves, state
from .chunks import LONG_LINE_READ, DamagedGzip, count_parallel, count_range, count_stream, gunzip, gzip_problem, lines_end
from .logfile import Scan, open_log, rotated_sibling
from .spill import spilled, total
from .tally import Tally, WindowCounts, read_log, seek_plan

__metaclass__ = type


class Unusable(Exception):
    """The state cannot be carried on for this log: count it cold."""


def count_with_state(logs, windows, line_filter, settings, now, session=None, readers=None):
    """tally.count_windows, with a state per log in ``settings.state_dir``; with ``session``
    (spill.Session), in bounded memory. Returns (WindowCounts, [LogState]): the states to
    save once the run's decisions are appended (saves.save). A log whose counts went
    past the session's budget keeps them in its state in parts (kept.py; the spec rules; with
    the precise rules it keeps no state: one warning, and its next run starts cold). ``readers``:
    {log: readers.Reader} of logs in another format than combined."""
    state_dir = settings.state_dir
    stamps = [window.stamp for window in windows]
    parts = dict((stamp, []) for stamp in stamps)
    scans, warnings, states, seen = [], [], [], set()
    for path in logs:
        log = os.path.abspath(path)
        old, warning = saves.load(state_dir, log, settings.state_budget)
        if warning:
            warnings.append(warning)
        reading = Reading(path, log, stamps, line_filter, settings, now, seen, session)
        reading.reader = (readers or {}).get(path)
        if old is not None and old.settings == reading.counting() and old.now <= now and all(s in old.stamps for s in stamps):
            try:
                reading.carry_on(old)
            except Unusable as exc:
                warnings.extend(exc.args[0] if exc.args else [])
                reading = Reading(path, log, stamps, line_filter, settings, now, seen, session)
                reading.reader = (readers or {}).get(path)
        if not reading.done:
            reading.cold()
        for stamp, counters in reading.parts().items():
            parts[stamp].extend(counters)
        scans.extend(reading.scans)
        warnings.extend(reading.warnings)
        if reading.new_state is not None and settings.rules != 'spec' and reading.spilled():
            reading.new_state = None
            warnings.append(saves.drop(state_dir, log, 'more than count_budget (%d) distinct addresses' % session.budget))
        if reading.new_state is not None:
            reading.new_state.prune(now)
            states.append(reading.new_state)
    # A window's one counter is used as it is (ranking reads it only), an hour no new line
    # touched as its first entries (spec rules: enough to rank), several summed.
    summed = {}
    for stamp, found in parts.items():
        if len(found) == 1 and isinstance(found[0], state.Counts) and settings.rules == 'spec':
            summed[stamp] = found[0].prefix(stamp)
        else:
            found = [part.get(stamp) if isinstance(part, state.Counts) else part for part in found]
            summed[stamp] = (found[0] if len(found) == 1 else total(found)) if found else Counter()
    counts = WindowCounts(windows, [summed[window.stamp] for window in windows])
    counts.scans, counts.warnings = scans, warnings
    return counts, states


class Reading:
    """One log's reading in one run: its segments' counts (the log's, the rotated file's),
    the lines not finished yet, and the state to save."""

    def __init__(self, path, log, stamps, line_filter, settings, now, seen, session=None):
        self.path, self.log, self.stamps, self.line_filter = path, log, stamps, line_filter
        self.session = session
        self.settings, self.now, self.seen = settings, now, seen
        self.done = False
        self.scans, self.warnings = [], []
        self.segments = []            # [Segment]; their counts are complete to their offsets
        self.use_rotated = False      # add the second segment's counts this run
        self.tail = None              # Tally of the lines not finished yet
        self.rotated_tail = None      # ... of the rotated file, added with its counts (use_rotated)
        self.rotated_key = None       # (device, inode) of the rotated file read on
        self.new_state = None
        self._claimed = []
        self.reader = None            # readers.Reader: a log in another format than combined

    def counting(self):
        """The counting settings its state is made under: the run's, and the format the log is
        read in where it is not combined (log_format auto decides it at each run)."""
        found = state.counting_settings(self.settings)
        if self.reader is not None:
            found['format_read'] = self.reader.name
        return found

    def _tally(self, tracked):
        return Tally(self.stamps, self.line_filter, tracked, count_lines=self.settings.metrics_file is not None,
                     session=self.session, reader=self.reader.fresh() if self.reader is not None else None)

    def spilled(self):
        """Whether counts of this log went to spill files: too many to keep in a state of the precise rules."""
        return any(spilled(segment.counts.get(stamp)) for segment in self.segments for stamp in segment.counts.stamps()
                   if stamp not in segment.counts.unparsed())

    def _first_time(self, info):
        key = (info.st_dev, info.st_ino)
        if key in self.seen:
            return False
        self.seen.add(key)
        self._claimed.append(key)
        return True

    def parts(self):
        """{stamp: [Counter or Counts]}: what this log adds to each window this run, left
        as they are (the segments' counters go into the state); a Counts stands for a
        stamp no new line touched, not parsed yet."""
        used = self.segments[:2 if self.use_rotated else 1]
        found = dict((stamp, []) for stamp in self.stamps)
        for stamp in found:         # once each: both windows are one hour on a fall-back night
            for segment in used:
                if stamp in segment.counts.stamps():
                    found[stamp].append(segment.counts if segment.counts.prefix(stamp) is not None else segment.counts.get(stamp))
            for tail in [self.tail] + ([self.rotated_tail] if self.use_rotated else []):
                if tail is not None and (tail.counters.get(stamp) or spilled(tail.counters.get(stamp))):
                    found[stamp].append(tail.counters[stamp])
        return found

    # ---- cold: what tally.count_windows does for one log, keeping what a state needs

    def cold(self):
        settings = self.settings
        tracked = state.stamps_in_play(self.now, self.now + state.HORIZON)
        self.tail = self._tally(tracked)

        def identify(handle, scan):
            fd, gzip = handle.fileno(), scan.mode == 'full-gzip'
            info = os.fstat(fd)
            head = _gzip_head(handle) if gzip else _head(fd)
            return state.Segment(info.st_dev, info.st_ino, head, scan.end, gzip,
                                 before=None if gzip else state.bytes_before(fd, scan.end),
                                 compressed=state.compressed_stat(info) if gzip else None)

        files, warnings = read_log(self.path, self.stamps, lambda: self._tally(tracked),
                                   lambda handle: self._first_time(os.fstat(handle.fileno())), settings.seek,
                                   settings.seek_margin, settings.rotated, with_tail=True, identify=identify)
        self.done = True
        self.warnings.extend(warnings)
        keep_state = bool(files) and files[0].path == self.path and not files[0].identity.gzip     # a gzip log: no going on
        for read in files:
            read.identity.counts = state.Counts(read.tally.counters)
            self.segments.append(read.identity)
            self.tail.add(read.tail.counters)
            self.scans.append(read.scan)
        self.use_rotated = len(self.segments) > 1
        if keep_state and self.segments:
            self.new_state = state.LogState(self.log, self.counting(), self.now,
                                            self.now + state.HORIZON, tracked, self.segments)

    # ---- carrying a state on

    def carry_on(self, old):
        """Read what was appended since ``old``; raises Unusable when only a cold run can
        tell (the seen files it claimed are released then)."""
        try:
            self._carry_on(old)
            for stamp, found in self.parts().items():       # a damaged section shows now
                for part in found:
                    if isinstance(part, state.Counts) and self.settings.rules != 'spec':
                        part.get(stamp)
        except (Unusable, state.StateError) as exc:
            for key in self._claimed:
                self.seen.discard(key)
            if isinstance(exc, state.StateError):
                self.warnings.append('state file of %s ignored: %s' % (self.log, exc))
            raise Unusable(self.warnings)
        except (OSError, IOError) as exc:
            raise BotDetectorError('cannot read %s: %s' % (self.path, exc.strerror or exc))

    def _carry_on(self, old):
        settings = self.settings
        self.tail, self.rotated_tail = self._tally(old.stamps), self._tally(old.stamps)
        logged, rotated = old.files[0], old.files[1] if len(old.files) > 1 else None
        if logged.offset == 0:
            # Nothing of the log read: any file matches it, a log copied to LOG.1 and truncated too.
            raise Unusable()
        with open_log(self.path) as handle:
            fd = handle.fileno()
            info = os.fstat(fd)
            head = _head(fd)
            if not self._first_time(info) or gzip_problem(fd) is None:
                raise Unusable()
            grown = (info.st_dev, info.st_ino) == (logged.dev, logged.ino) and not logged.gzip and logged.matches(fd, info, head)
            if grown:
                segment = self._read_on(self.path, handle, info, head, logged, old.stamps)
            elif settings.rotated:
                # The log was rotated: its old bytes go on in LOG.1 (or LOG.1.gz); then the new log from its start.
                segment = self._read_on(self.path, handle, info, head, state.Segment(info.st_dev, info.st_ino, b'', 0),
                                        old.stamps)
                rotated = self._follow(logged, old.stamps)
            else:
                raise Unusable()
            self.segments.append(segment)
            if grown and rotated is not None:
                rotated = self._recheck(rotated, old.stamps)
            if rotated is not None:
                self.segments.append(rotated)
                # Added as a cold run would read LOG.1: when the log starts after the windows can begin.
                plan = seek_plan(fd, info.st_size, self.stamps, settings.seek_margin, self.reader)
                self.use_rotated = plan.first is None or plan.first > plan.target
            if not self.use_rotated and self.rotated_key is not None:
                self.seen.discard(self.rotated_key)         # not read, as by a cold run: another log may be it
        self.done = True
        self.new_state = state.LogState(self.log, old.settings, self.now, old.horizon, old.stamps, self.segments)

    def _read_on(self, path, handle, info, head, segment, tracked, tail=None):
        """Count a plain file from ``segment.offset`` to its end into ``segment``'s counts
        (its unfinished last line into ``tail``, else the run's)."""
        fd = handle.fileno()
        fresh = self._tally(tracked)
        tail = self.tail if tail is None else tail
        end = lines_end(fd, segment.offset, info.st_size)
        scan = Scan(path, 'incremental', segment.offset)
        if end > segment.offset:
            count_parallel(path, handle, segment.offset, end, fresh)
        tail_before = tail.lines
        if end < info.st_size:
            count_range(fd, end, info.st_size, tail)
        scan.bytes_read, scan.end, scan.stamped = info.st_size - segment.offset, end, fresh.stamped
        scan.read_by(fresh.reader)
        if fresh.lines is not None:
            scan.lines = fresh.lines + tail.lines - tail_before
        self.scans.append(scan)
        for stamp, counter in fresh.counters.items():
            segment.counts.add(stamp, counter)
        return state.Segment(info.st_dev, info.st_ino, head, end, counts=segment.counts, before=state.bytes_before(fd, end))

    def _follow(self, logged, tracked):
        """The log's old file after a rotation: LOG.1 holding its bytes (the same file, or a
        copy), or LOG.1.gz decompressing to them; read on from the state's offset."""
        sibling = rotated_sibling(self.path)
        if sibling is None:
            raise Unusable()
        return self._read_on_rotated(sibling, logged, tracked)

    def _recheck(self, rotated, tracked):
        """The rotated file of an earlier rotation, at a later run: read on what its old
        writer appended; gone, it is dropped (a cold run could not read it either)."""
        sibling = rotated_sibling(self.path)
        if sibling is None:
            return None
        return self._read_on_rotated(sibling, rotated, tracked)

    def _read_on_rotated(self, sibling, segment, tracked):
        """Read on ``segment`` in the rotated file ``sibling``, plain or compressed; raises
        Unusable when it does not hold the segment's bytes."""
        with open_log(sibling) as handle:
            fd = handle.fileno()
            info = os.fstat(fd)
            if not self._first_time(info):
                raise Unusable()
            self.rotated_key = (info.st_dev, info.st_ino)
            if gzip_problem(fd) is None:
                if segment.unchanged(info):
                    return segment                  # the same compressed file: nothing new
                return self._read_on_gzip(sibling, handle, info, segment, tracked)
            if segment.gzip or sibling.endswith('.gz') or not segment.matches(fd, info, _head(fd)):
                raise Unusable()
            return self._read_on(sibling, handle, info, _head(fd), segment, tracked, self.rotated_tail)

    def _read_on_gzip(self, path, handle, info, segment, tracked):
        """A compressed file holding ``segment``'s bytes (its first bytes are the segment's):
        skip them, count the rest. A compressed file is finished: all of it goes in."""
        fresh = self._tally(tracked)
        scan = Scan(path, 'incremental', segment.offset)
        seen = {'skip': segment.offset, 'head': b'', 'length': 0, 'before': b'', 'carry': b''}
        reader = fresh.reader
        if reader is not None:
            reader.skipped(None)

        def after_offset(pieces):
            for piece in pieces:
                seen['length'] += len(piece)
                if len(seen['head']) < state.HEAD_BYTES:
                    seen['head'] += piece[:state.HEAD_BYTES - len(seen['head'])]
                if seen['skip']:        # the bytes just before the offset, as Segment.before has them
                    seen['before'] = (seen['before'] + piece[:seen['skip']][-state.BEFORE_BYTES:])[-state.BEFORE_BYTES:]
                    if reader is not None:      # its whole lines (W3C: the #Fields: in force at the offset)
                        skipped = seen['carry'] + piece[:seen['skip']]
                        cut = skipped.rfind(b'\n') + 1
                        reader.skipped(skipped[:cut])
                        seen['carry'] = skipped[cut:][:LONG_LINE_READ]
                if seen['skip'] >= len(piece):
                    seen['skip'] -= len(piece)
                    continue
                yield piece[seen['skip']:]
                seen['skip'] = 0
        try:
            count_stream(after_offset(gunzip(handle, scan)), fresh)
        except DamagedGzip:
            raise Unusable()
        if seen['skip'] or not seen['head'].startswith(segment.head) or segment.before not in (None, state.before_of(seen['before'])):
            raise Unusable()        # not the segment's bytes: the log truncated and written again, say
        scan.end, scan.stamped, scan.lines = seen['length'], fresh.stamped, fresh.lines
        scan.read_by(reader)
        self.scans.append(scan)
        for stamp, counter in fresh.counters.items():
            segment.counts.add(stamp, counter)
        return state.Segment(info.st_dev, info.st_ino, seen['head'], seen['length'], True, segment.counts,
                             compressed=state.compressed_stat(info))


def _head(fd):
    return os.pread(fd, state.HEAD_BYTES, 0)


def _gzip_head(handle):
    """The first bytes of a compressed file's content."""
    head = b''
    try:
        for piece in gunzip(handle, Scan('', 'full-gzip')):
            head += piece[:state.HEAD_BYTES - len(head)]
            if len(head) >= state.HEAD_BYTES:
                break
    except DamagedGzip:
        pass
    return head
