# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The answers read back from the access log (combined format), with an answer list set: in
each hourly window, the requests nginx answered with 429 (throttled) and 428 (challenged),
and the challenge's pass URL answered 303 (passed) or 403 (failed); and per client, its
throttled or challenged job-page requests, for the escalation to a block.

A combined line has no field for a marker, so the statuses are the markers: 429 is the
throttle's, 428 the challenge's own, ``/.bot-detector/pass`` the pass's URL. Only the lines
holding one are parsed, found with bytes.find (C speed): in a log of people's pages they are
few. The log is read whole, a megabyte at a time: an opt-in cost of the answers.
"""

from __future__ import absolute_import, division, print_function

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
    """Per window stamp: {answer: requests} and {client: throttled or challenged job-page requests}."""

    def __init__(self, stamps, job_prefixes):
        self.stamps = list(stamps)
        self.totals = dict((stamp, dict((answer, 0) for answer in ANSWERS)) for stamp in self.stamps)
        self.keys = dict((stamp, Counter()) for stamp in self.stamps)
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
                        self.keys[stamp][line.split(b' ', 1)[0]] += 1
                position = buf.find(marker, position + len(marker), limit)
        position = buf.find(PASS, 0, limit)
        while position != -1:
            line = _line_at(buf, position, limit)
            stamp = self._stamp(line)
            if stamp is not None:
                status = line[line.find(b'" ', line.find(PASS) + len(PASS)) + 2:][:3]
                if status == b'303':
                    self.totals[stamp]['passed'] += 1
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


def answered(logs, stamps, job_prefixes):
    """The Answered of ``logs`` in the windows of ``stamps``."""
    found = Answered(stamps, job_prefixes)
    for path in logs:
        found.read(path)
    return found
