# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules 5.3.1 to 5.3.7: counting requests per address and window, file by file.

The hot path; chunks.py brings the bytes. Per chunk of whole lines, each rule is one pass
of a C-level map() over the list of lines (bytes.__contains__, a compiled regex,
bytes.split) and the counting is Counter.update: the interpreter never loops per line.
"""

from __future__ import absolute_import, division, print_function

import heapq
import os
import re
import zlib
from collections import Counter
from itertools import compress, repeat
from operator import ge, itemgetter

from ..base import messages
from ..base.errors import BotDetectorError
from . import chunks
from .logfile import HOUR_TEXT, Scan, SeekPlan, open_log, plan_seek, rotated_sibling
from .spill import BYTES, SpillCounter

__metaclass__ = type

DENSITY_SAMPLE = 64 * 1024
_FOUND = (-1).__ne__    # bytes.find found it: cheaper than ``in``, which first tries the needle as an int (a TypeError)


class WindowCounts:
    """What reading the logs yields: requests per key for each window, and how each
    file was read. The one object that carries counts to the ranking stage."""

    def __init__(self, windows, counters=None):
        self.windows = windows
        self.counters = counters if counters is not None else [Counter() for dummy in windows]
        self.scans = []
        self.warnings = []      # files left out, one line each

    def __iter__(self):
        """(window, Counter) pairs, previous hour first."""
        return iter(zip(self.windows, self.counters))


class Prefix(Counter):
    """A window's counts known only in part: the first entries in ``sort -nr`` order (an
    incremental state keeps them for an hour no new line touched), enough to rank unless
    server addresses take too many places. ``full()`` reads all of them."""

    def __init__(self, entries, complete, load):
        super(Prefix, self).__init__()
        dict.update(self, entries)
        self.complete = complete      # the entries are all there are
        self._load = load

    def full(self):
        return self if self.complete else self._load()


def whole(counter):
    """``counter`` with every entry (a Prefix read in full)."""
    return counter.full() if isinstance(counter, Prefix) else counter


def largest(counter, n):
    """The ``n`` first (key, count) items of ``counter`` in ``sort -nr`` order, without
    sorting all of it (an hour can count 50,000 addresses): the n-th largest count, the
    items at or over it (C-level passes), and of those the n first."""
    if n >= len(counter):
        return sorted(counter.items(), key=itemgetter(1, 0), reverse=True)
    floor = heapq.nlargest(n, counter.values())[-1]
    return heapq.nlargest(n, compress(counter.items(), map(ge, counter.values(), repeat(floor))), key=itemgetter(1, 0))


class Tally:
    """Counts lines per hour stamp: the stamps (rule 5.3.1) matched here, the rules' line
    filter (5.3.2-5.3.7) applied to the lines that hold one, each line counted once under
    every stamp it holds (as the reference's separate greps do).

    ``stamps`` (the windows') are looked for in every chunk. ``tracked`` (an incremental
    run's other hours still in play, bytes) are rare in a chunk: one search per date
    tells whether any is there at all.

    For the metrics and the warning on logs it cannot read, a tally also notes whether a
    line it saw carries a date and hour, dd/Mon/yyyy:HH (``stamped``: searched for only until the
    first one, at once in a readable log) and, with ``count_lines``, how many lines it saw
    (``lines``; None without)."""

    def __init__(self, stamps, line_filter, tracked=(), count_lines=False, session=None, reader=None, changed=None):
        # A log in another format than combined: its lines become their combined twins first (formats/readers.py).
        self.reader = reader
        self.stamps = []
        for stamp in stamps:
            if stamp not in self.stamps:       # both windows hold the same text on a DST night
                self.stamps.append(stamp)
        self.tracked = [stamp for stamp in tracked if stamp not in self.stamps]
        self.line_filter = line_filter
        self.lines = 0 if count_lines else None
        self.stamped = False
        self.changed = changed      # a fleet store's follower: the keys counted, noted (changed.Changed)
        # With a spill session (spill.py), past its budget of distinct keys the counts go to files.
        self.session = session if session is not None and getattr(line_filter, 'spillable', False) else None
        if self.session is not None:
            self.session.codec = getattr(line_filter, 'spill_codec', None) or BYTES
        new = Counter if self.session is None else self.session.counter
        self.counters = dict((stamp, new()) for stamp in self.stamps + self.tracked)
        self._finders = _stamp_finders(self.tracked)
        # '/Nov/2026:', when every stamp has it: each stamp's text holds it once (chunk_one_hour).
        months = set(stamp[2:12] for stamp in self.counters)
        self._month = months.pop() if len(months) == 1 else None

    def fresh(self, reader=None):
        """An empty tally with the same stamps and filter (a forked worker's), and the same
        format's reader (or ``reader``: another log's), its unparsed count at zero."""
        if reader is None and self.reader is not None:
            reader = self.reader.fresh()
        return Tally(self.stamps, self.line_filter, self.tracked, self.lines is not None, self.session, reader, self.changed)

    def add(self, counters, lines=None, stamped=False, unparsed=None):
        """Add another tally's counters ({stamp: Counter}), the smaller into the larger, and
        its ``lines``, ``stamped`` and ``unparsed`` (a worker's, for the same file)."""
        if unparsed and self.reader is not None:
            self.reader.unparsed += unparsed[0]
            self.reader.example = self.reader.example or unparsed[1]
        if lines and self.lines is not None:
            self.lines += lines
        self.stamped = self.stamped or stamped
        for stamp, theirs in counters.items():
            if self.changed is not None:        # a spilled one's keys are in files: the window changed whole
                self.changed.note(stamp, None if getattr(theirs, 'spilled', False) else list(theirs))
            mine = self.counters[stamp]
            if len(theirs) > len(mine):
                mine, theirs = theirs, mine
                self.counters[stamp] = mine
            if isinstance(mine, SpillCounter):
                mine.session = self.session
                mine.absorb(theirs)
            elif theirs:
                mine.update(theirs.elements())     # counted in C, not a loop over the keys
        self.within_budget()

    def within_budget(self):
        """Past the session's budget of distinct keys, spill the largest counters until at
        most half of it is held; when they cannot spill, the session holds them in memory
        (spill.Session.hold: past the memory's share, the smallest counts go)."""
        if self.session is None:
            return
        held = sum(map(len, self.counters.values()))
        if held <= self.session.budget:
            return
        for counter in sorted(self.counters.values(), key=len, reverse=True):
            if held <= self.session.budget // 2:
                return
            size = len(counter)
            if not counter.spill():
                break
            held -= size
        if held > self.session.budget:
            self.session.hold(list(self.counters.values()))

    def hand_over(self, workers):
        """A forked worker's counts before they are sent back: past its share of the budget
        (half of it over the workers), to files, so that the parent never holds more than
        one and a half budgets while it adds them up."""
        if self.session is not None and sum(map(len, self.counters.values())) > self.session.budget // (2 * workers):
            for counter in self.counters.values():
                counter.spill()         # when it cannot, the counts go back in memory: the parent holds them

    # ---- a line longer than a read chunk (chunks.LongLine judges it piece by piece)

    def long_line_needles(self):
        """(texts matched as they are, texts matched lower-cased) that decide how a long
        line is counted: the filter's and the stamps; None when the filter has none."""
        needles = getattr(self.line_filter, 'needles', None)
        if needles is None or self.reader is not None:
            return None
        return list(needles[0]) + list(self.counters), list(needles[1])

    def note_piece(self, piece):
        """A piece of a long line: whether it carries a date and hour."""
        if not self.stamped:
            self.stamped = HOUR_TEXT.search(piece) is not None

    def count_long_line(self, stand_in, found, example=None):
        """Count a long line by its ``stand_in`` (same first field, same needles) under each
        stamp of ``found`` (the needles it holds); a line not counted passes None (and, one
        too long to decode, its start as the unparsed lines' ``example``)."""
        if self.lines is not None:
            self.lines += 1
        if stand_in is None:
            if self.reader is not None:
                self.reader.failed(example or b'')      # too long to decode (chunks.LONG_LINE_READ)
            return
        count = getattr(self.line_filter, 'count_stand_in', self.line_filter.count_into)     # campaigns: no signals
        for stamp, counter in self.counters.items():
            if stamp in found:
                self._noted(stamp, count([stand_in], counter))
        self.within_budget()

    def window_counts(self, windows):
        return WindowCounts(windows, [self.counters[window.stamp] for window in windows])

    def chunk(self, buf, limit=None):
        """Count the lines of ``buf[:limit]`` (whole lines; a missing final newline is fine).
        ``limit``, the index of the chunk's last newline, spares the caller a copy without
        its unfinished last line."""
        if limit is None:
            limit = len(buf)
        if self.lines is not None:
            # Its newlines before ``limit``, plus its last line: by a replace (memchr and
            # memcpy, several times faster than bytes.count of one byte).
            self.lines += len(buf) - len(buf.replace(b'\n', b'')) - buf.count(b'\n', limit) + 1
        if self.reader is not None:
            self.reader.stamps = self.counters
            buf, read = self.reader.translate(buf, limit)      # the lines' combined twins
            self.stamped = self.stamped or read
            limit = len(buf)
            if not buf:
                return
        elif not self.stamped:
            self.stamped = HOUR_TEXT.search(buf, 0, limit) is not None
        sample = buf[:DENSITY_SAMPLE]
        sample_lines = sample.count(b'\n') + 1
        # A stamp on a quarter of the sampled lines or more: split the chunk into lines.
        dense = [stamp for stamp in self.stamps if sample.count(stamp) * 4 >= sample_lines]
        if dense:
            self._dense_chunk(buf, limit, dense)
        else:
            for stamp in self.stamps:       # few lines to count: find them
                selected = lines_holding(buf, stamp, limit)
                if selected:
                    self._noted(stamp, self.line_filter.count_into(selected, self.counters[stamp]))
            self._count_tracked(buf, limit)
        if self.session is not None:
            self.within_budget()

    def _dense_chunk(self, buf, limit, dense):
        """A chunk mostly of the windows' hours (a time-ordered log; what an incremental run reads). The
        rules are line predicates, as the stamps are, so they go first, one C-level pass each over all the
        lines: they drop about a third of them, which the stamps' passes then skip; the signal lines too."""
        lines = buf.split(b'\n')
        if limit < len(buf):
            lines.pop()     # the unfinished line after ``limit``
        kept, joined, first_fields = self.line_filter.kept(lines)
        self._count_selected(kept, joined, dense, first_fields, self.line_filter.count_kept, self.stamps)
        groups = self.line_filter.signal_groups(buf, limit) if hasattr(self.line_filter, 'signal_groups') else ()
        stamps = [stamp for stamp in self.stamps if stamp in dense or buf.find(stamp, 0, limit) != -1] if groups else ()
        for group, count in groups:
            self._count_selected(group, None, dense, None, count, stamps)

    def _count_selected(self, kept, joined, dense, first_fields, count, stamps):
        """Count each stamp's lines of ``kept`` (``joined``: them joined, or None) by ``count(lines,
        counter, first_fields)``: found by a pass over them when ``dense``, else by bytes.find in them joined."""
        if not kept:
            return
        selected_lines = 0
        for stamp in stamps:
            if stamp in dense:
                selected = list(compress(kept, map(_FOUND, map(bytes.find, kept, repeat(stamp)))))
            else:
                joined = b'\n'.join(kept) if joined is None else joined
                selected = lines_holding(joined, stamp, len(joined))
            self._noted(stamp, count(selected, self.counters[stamp], first_fields))
            selected_lines += len(selected)
        # Every line holding a stamp of the month holds its text ('/Nov/2026:') once per stamp, and no
        # stamp's text holds it twice: as many of them as lines selected, and no tracked stamp is among them.
        if self.tracked:
            joined = b'\n'.join(kept) if joined is None else joined
            if self._month is None or joined.count(self._month) != selected_lines:
                self._count_tracked(joined, len(joined), count, first_fields)

    def _count_tracked(self, buf, limit, count=None, first_fields=None):
        """Count the lines of ``buf[:limit]`` holding a tracked stamp (rare in a chunk: one search per date
        tells), by ``count`` (lines the rules kept, joined; their ``first_fields``), else by count_into."""
        count = count or (lambda found, counter, dummy: self.line_filter.count_into(found, counter))
        for date, finder in self._finders:
            if buf.find(date, 0, limit) != -1:
                for stamp in set(finder.findall(buf, 0, limit)):
                    self._noted(stamp, count(lines_holding(buf, stamp, limit), self.counters[stamp], first_fields))

    def _noted(self, stamp, keys):
        if self.changed is not None and keys:
            self.changed.note(stamp, keys)


def _stamp_finders(stamps):
    """[(date, regex)]: per date text ('21/Nov/2026:'), a regex matching exactly those of
    ``stamps`` on that date. The regex starts with the date, a literal, which the regex
    engine searches for quickly; the date alone, rarer still, is checked first."""
    by_date = {}
    for stamp in stamps:
        date, hour = stamp[:-2], stamp[-2:]
        by_date.setdefault(date, []).append(hour)
    return [(date, re.compile(re.escape(date) + b'(?:' + b'|'.join(re.escape(h) for h in sorted(hours)) + b')'))
            for date, hours in sorted(by_date.items())]


def lines_holding(buf, stamp, limit):
    """The lines of ``buf[:limit]`` that hold ``stamp``, found with bytes.find: for a stamp
    on few lines (a log not in time order), far cheaper than splitting every line."""
    found = []
    find, rfind = buf.find, buf.rfind
    pos = find(stamp, 0, limit)
    while pos != -1:
        end = find(b'\n', pos, limit)
        if end == -1:
            end = limit
        found.append(buf[rfind(b'\n', 0, pos) + 1:end])
        pos = find(stamp, end, limit)
    return found


def scan_file(path, handle, tally, stamps, margin, seek, rotated, gzip_name=False, tail=None):
    """Count one open log from where the windows can start (or all of it). With
    ``gzip_name`` (a rotated LOG.1.gz) the file must be gzip. With ``tail`` (a Tally), a
    last line without its newline yet is counted there instead: an incremental run keeps
    it out of its state, as the line may still grow. ``scan.end`` is where the lines
    counted into ``tally`` end (in a gzip file, its decompressed length). Returns (its
    Scan, its SeekPlan or None)."""
    before, tail_before = tally.lines, tail.lines if tail is not None else None
    tally.stamped = False
    try:
        fd = handle.fileno()
        problem = chunks.gzip_problem(fd)
        if problem is None:
            scan = Scan(path, 'full-gzip')
            chunks.count_stream(_measured(chunks.gunzip(handle, scan), scan), tally)
            return _counted(scan, tally, before), None
        if gzip_name:
            raise chunks.DamagedGzip(problem)
        size = os.fstat(fd).st_size
        plan = seek_plan(fd, size, stamps, margin, tally.reader) if seek or rotated else None
        start = plan.start if seek and plan is not None else None
        scan = Scan(path, 'full' if start is None else 'seek', start or 0)
        scan.end = size if tail is None else chunks.lines_end(fd, scan.start, size)
        chunks.count_parallel(path, handle, scan.start, scan.end, tally, plan.counted_from if start is not None else None)
        if scan.end < size:
            chunks.count_range(fd, scan.end, size, tail)
        scan.bytes_read = size - scan.start     # the part of the file scanned
        return _counted(scan, tally, before, tail, tail_before), plan
    except chunks.DamagedGzip as exc:
        raise BotDetectorError('cannot read %s: %s' % (path, exc))
    except (OSError, IOError, EOFError, zlib.error) as exc:
        raise BotDetectorError('cannot read %s: %s' % (path, getattr(exc, 'strerror', None) or exc))


def seek_plan(fd, size, stamps, margin, reader):
    """logfile.plan_seek of a log whose lines carry their time as the combined format writes
    it (combined, or ``reader.clf_times``); of another, a plan of a log that shows no time: it
    is read whole (a bracketed timestamp in its lines is a client's text: a user agent's)."""
    if reader is not None and not reader.clf_times:
        return SeekPlan(None, None, None)
    return plan_seek(fd, size, stamps, margin)


def _counted(scan, tally, before, tail=None, tail_before=None):
    """``scan`` with whether a line counted into ``tally`` carries a timestamp and, when
    lines are counted, the lines read (those of ``tail`` too)."""
    scan.stamped = tally.stamped
    scan.read_by(tally.reader)
    if before is not None:
        scan.lines = tally.lines - before + (tail.lines - tail_before if tail is not None else 0)
    return scan


def _measured(pieces, scan):
    for piece in pieces:
        scan.end += len(piece)
        yield piece


class FileRead:
    """One file of a log's reading: its Scan, the Tally its lines went into, the Tally of
    its unfinished last line (with ``with_tail``) and what ``identify`` noted while it was
    open (an incremental run's Segment)."""

    def __init__(self, path, scan, tally, tail, identity):
        self.path, self.scan, self.tally, self.tail, self.identity = path, scan, tally, tail, identity


def read_log(path, stamps, new_tally, first_time, seek=False, margin=600, rotated=False, with_tail=False, identify=None):
    """The one reading of one log, for a cold run and an incremental run's cold start alike:
    the log from where the windows can start (with ``seek``), then, with ``rotated``, the
    most recent rotated file when the log starts after that point. Each file goes into a
    tally of its own (``new_tally()``); a file ``first_time(handle)`` has seen already is
    not read again; a rotated file that cannot be read whole is left out with a warning.
    With ``with_tail``, a last line without its newline goes to a tally apart (scan_file).
    ``identify(handle, scan)``, called while a file is open, notes what the caller keeps
    of it. Returns ([FileRead], [warning])."""
    files, warnings, plan = [], [], None
    with open_log(path) as handle:
        if first_time(handle):
            counted, tail = new_tally(), new_tally() if with_tail else None
            scan, plan = scan_file(path, handle, counted, stamps, margin, seek, rotated, tail=tail)
            files.append(FileRead(path, scan, counted, tail, identify(handle, scan) if identify else None))
    # The log starts after the windows can begin (or shows no time near its start):
    # logrotate ran meanwhile, and the rotated file holds the rest.
    late = rotated and plan is not None and (plan.first is None or plan.first > plan.target)
    sibling = rotated_sibling(path) if late else None
    if sibling is None:
        return files, warnings
    try:
        with open_log(sibling) as handle:
            if first_time(handle):
                counted, tail = new_tally(), new_tally() if with_tail else None
                scan, dummy = scan_file(sibling, handle, counted, stamps, margin, seek, False, sibling.endswith('.gz'), tail=tail)
                files.append(FileRead(sibling, scan, counted, tail, identify(handle, scan) if identify else None))
    except BotDetectorError as exc:
        warnings.append(messages.ROTATED_LEFT_OUT % exc.message)
    return files, warnings


def count_windows(logs, windows, line_filter, seek=False, margin=600, rotated=False, count_lines=False, session=None,
                  readers=None):
    """Read each log once (read_log), in chunks, and count requests per key for every window.

    With ``seek``, start each plain log where lines older than the windows less ``margin``
    end (logfile.plan_seek). With ``rotated``, also read the most recent rotated file when
    the log starts after that point; one that cannot be read whole is left out with a
    warning (WindowCounts.warnings). A file already read (same device and inode: a log
    given twice, LOG.1 a link to LOG) is not read again. Counts of all files are summed.
    With ``count_lines``, each scan also counts its lines (the metrics). With ``session``
    (spill.Session), counts past its budget go to its files. ``readers``: {log: readers.Reader}
    for logs in another format than combined. Returns a WindowCounts."""
    stamps = [window.stamp for window in windows]
    tally = Tally(stamps, line_filter, count_lines=count_lines, session=session)
    scans, warnings = [], []
    seen = set()

    def first_time(handle):
        info = os.fstat(handle.fileno())
        if (info.st_dev, info.st_ino) in seen:
            return False
        seen.add((info.st_dev, info.st_ino))
        return True

    for path in logs:
        reader = (readers or {}).get(path)
        new_tally = tally.fresh if reader is None else (lambda: tally.fresh(reader.fresh()))  # noqa: E731
        files, problems = read_log(path, stamps, new_tally, first_time, seek, margin, rotated)
        for read in files:
            tally.add(read.tally.counters)
            scans.append(read.scan)
        warnings.extend(problems)
    counts = tally.window_counts(windows)
    counts.scans, counts.warnings = scans, warnings
    return counts
