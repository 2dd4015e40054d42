# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The answers read back from the access log (combined format), with an answer list set: in
each hourly window, the requests nginx answered with 429 (throttled) and 428 (challenged),
and the challenge's pass URL answered 303 (passed) or 403 (failed); and per client, its
throttled or challenged job-page requests less the challenges it passed, for the escalation
to a block.

A combined line has no field for a marker, so the statuses are the markers: 429 is the
throttle's, 428 the challenge's own, ``/.bot-detector/pass`` the pass's URL. Only the lines
holding one are parsed, found with bytes.find (C speed): in a log of people's pages they are
few. The log is read whole, a megabyte at a time: an opt-in cost of the answers.
"""

from __future__ import absolute_import, division, print_function

import os
from collections import Counter

__metaclass__ = type

CHUNK = 1 << 20
PASS = b'"GET /.bot-detector/pass?'
MARKERS = ((b'" 429 ', 'throttled'), (b'" 428 ', 'challenged'))
ANSWERS = ('throttled', 'challenged', 'passed', 'failed')


def _line_at(buf, position, limit):
    start = buf.rfind(b'\n', 0, position) + 1
    end = buf.find(b'\n', position, limit)
    return buf[start:limit if end == -1 else end]


class Answered:
    """Per window stamp: {answer: requests} and {client: throttled or challenged job-page requests,
    less its challenges passed}."""

    def __init__(self, stamps, job_prefixes):
        self.stamps = list(stamps)
        self.totals = dict((stamp, dict((answer, 0) for answer in ANSWERS)) for stamp in self.stamps)
        self.keys = dict((stamp, Counter()) for stamp in self.stamps)
        self.open = dict((stamp, Counter()) for stamp in self.stamps)      # per client: challenged, not passed since
        self.prefixes = tuple(b'"' + prefix.encode('utf-8') for prefix in job_prefixes)

    def totals_by_window(self):
        """{hour stamp (text): {answer: requests}}."""
        return dict((stamp.decode('ascii', 'replace'), dict(totals)) for stamp, totals in self.totals.items())

    def _stamp(self, line):
        for stamp in self.stamps:
            if stamp in line:
                return stamp
        return None

    def chunk(self, buf, limit):
        for marker, answer in MARKERS:
            position = buf.find(marker, 0, limit)
            while position != -1:
                line = _line_at(buf, position, limit)
                stamp = self._stamp(line)
                if stamp is not None and line.count(b'"') >= 2:
                    self.totals[stamp][answer] += 1
                    request = line[line.find(b'"'):]
                    if request.startswith(self.prefixes):
                        client = line.split(b' ', 1)[0]
                        self.keys[stamp][client] += 1
                        if answer == 'challenged':
                            self.open[stamp][client] += 1
                position = buf.find(marker, position + len(marker), limit)
        position = buf.find(PASS, 0, limit)
        while position != -1:
            line = _line_at(buf, position, limit)
            stamp = self._stamp(line)
            if stamp is not None:
                status = line[line.find(b'" ', line.find(PASS) + len(PASS)) + 2:][:3]
                if status == b'303':
                    self.totals[stamp]['passed'] += 1
                    # A challenge passed is one its client no longer fails (a NAT address's people each get one
                    # 428 and pass, hundreds an hour; a scraper without JavaScript never passes): as many as it
                    # was challenged at most (a pass cookie replayed takes no throttled request off).
                    client = line.split(b' ', 1)[0]
                    if self.open[stamp][client] > 0:
                        self.open[stamp][client] -= 1
                        self.keys[stamp][client] -= 1
                elif status == b'403':
                    self.totals[stamp]['failed'] += 1
            position = buf.find(PASS, position + len(PASS), limit)

    def read(self, path):
        """Add the lines of the log ``path`` (a missing or unreadable one adds nothing: the run
        itself reports it)."""
        try:
            handle = open(path, 'rb')
        except (IOError, OSError):
            return
        with handle:
            rest = b''
            while True:
                data = handle.read(CHUNK)
                buf = rest + data
                limit = buf.rfind(b'\n') + 1 if data else len(buf)
                self.chunk(buf, limit)
                rest = buf[limit:]
                if not data:
                    break

    def read_range(self, fd, start, end):
        """Add the whole lines of the open file ``fd`` from ``start`` to ``end`` (a follower's
        range just counted: follow.py), a megabyte at a time."""
        rest = b''
        while start < end:
            data = os.pread(fd, min(CHUNK, end - start), start)
            if not data:
                break
            start += len(data)
            buf = rest + data
            limit = buf.rfind(b'\n') + 1 if start < end else len(buf)
            self.chunk(buf, limit)
            rest = buf[limit:]


class Followed(Answered):
    """A follower's Answered: its stamps move with the follower's hours (``move``), its counts
    go into the follower's state and back (``saved``, ``resume``), and ``due`` tells when a
    decision must look at the escalation: a key of a window at ``threshold`` or more that no
    decision has looked at since the lists last changed."""

    def __init__(self, stamps, job_prefixes, threshold):
        Answered.__init__(self, stamps, job_prefixes)
        self.threshold = threshold
        self.seen = set()       # (stamp, key) at the threshold that a decision looked at
        self.grown, self.lists = False, None     # counts added since the last look; the lists' stat then

    def move(self, stamps):
        old_totals, old_keys, old_open = self.totals, self.keys, self.open
        self.stamps = list(stamps)
        self.totals = dict((stamp, old_totals.get(stamp) or dict((answer, 0) for answer in ANSWERS)) for stamp in self.stamps)
        self.keys = dict((stamp, old_keys.get(stamp) or Counter()) for stamp in self.stamps)
        self.open = dict((stamp, old_open.get(stamp) or Counter()) for stamp in self.stamps)
        self.seen = set(item for item in self.seen if item[0] in self.keys)

    def saved(self):
        """The per-client counts, JSON: {stamp: {key: count}} (latin-1: any byte), and under OPEN
        the challenges not passed yet, likewise."""
        found = _jsonable(self.keys)
        if any(self.open.values()):
            found[OPEN] = _jsonable(self.open)
        return found

    def resume(self, saved):
        """The counts of ``saved`` (a state's, perhaps damaged or older: what is not
        {stamp: {key: count}} is left out) for the stamps in play."""
        self.grown = True
        saved = saved if isinstance(saved, dict) else {}
        _resume(self.keys, dict((stamp, keys) for stamp, keys in saved.items() if stamp != OPEN))
        _resume(self.open, saved.get(OPEN))

    def read_range(self, fd, start, end):
        self.grown = self.grown or end > start
        Answered.read_range(self, fd, start, end)

    def due(self, windows, lists):
        """None, or the view of the windows' stamps (``windows``) escalate() reads, when a key
        there reached the threshold since a decision last looked, or since the lists' stat
        (``lists``: a key listed since) changed."""
        if lists != self.lists:
            self.lists, self.grown = lists, True
            self.seen.clear()
        if not self.grown:
            return None
        self.grown = False
        windows = [stamp for stamp in windows if stamp in self.keys]
        fresh = set((stamp, key) for stamp in windows for key, count in self.keys[stamp].items()
                    if count >= self.threshold) - self.seen
        if not fresh:
            return None
        self.seen.update(fresh)
        view = Answered((), ())
        view.stamps, view.keys = windows, self.keys
        return view


OPEN = 'open'       # a follower state's key for the challenges not passed yet (no hour stamp is it)


def _jsonable(counts):
    return dict((stamp.decode('latin-1'), dict((key.decode('latin-1'), count) for key, count in keys.items() if count))
                for stamp, keys in counts.items() if any(keys.values()))


def _resume(counts, saved):
    for stamp, keys in (saved.items() if isinstance(saved, dict) else ()):
        counter = counts.get(stamp.encode('latin-1', 'replace'))
        if counter is not None and isinstance(keys, dict):
            counter.update(dict((key.encode('latin-1', 'replace'), count) for key, count in keys.items()
                                if isinstance(count, int) and not isinstance(count, bool) and count > 0))


def answered(logs, stamps, job_prefixes):
    """The Answered of ``logs`` in the windows of ``stamps``."""
    found = Answered(stamps, job_prefixes)
    for path in logs:
        found.read(path)
    return found
