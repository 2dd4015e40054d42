# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a follower (follow.py) keeps on disk and its clock.

- The state file, in the state directory: a JSON line (the logs, the counting settings,
  each log's positions), then per hour stamp a line '@STAMP' and a line 'COUNT KEY' per
  address (keys are a log line's first field: no blank, no newline). Written to a
  temporary file, fsync'ed and renamed: positions and counts change together or not at all.
- Its rankings (Rankings): each window's, kept until its counts change; with the campaign
  profile, when it judges (Judgements); its decision steps' warnings (OnceAnHour).
- The pid file in the lock directory, locked while the follower runs (one per set of logs;
  --status tells a running follower by it), and its status file beside it.
"""

from __future__ import absolute_import, division, print_function

import base64
import fcntl
import json
import os
import time
import zlib
from itertools import islice

from ..base import messages
from ..base.clock import hour_windows
from ..base.errors import BotDetectorError
from ..base.text import to_bytes, write_all
from ..reading import state
from ..values.answer_settings import ANSWERS
from ..reading.spill import spilled

__metaclass__ = type

FORMAT = 1


class Clock:
    """Now: the real time, or with ``start`` (--now) a clock started there that runs."""

    def __init__(self, start=None):
        self.offset = 0.0 if start is None else start - time.time()

    def __call__(self):
        return time.time() + self.offset


class Rankings:
    """A follower's rules (rules_for), whose rankings of a window (``examined``) are kept
    until the follower's counts change (``changed()``: lines counted, the windows moved).
    On a quiet log the periodic steps (the metrics' top requests every few seconds, the
    decisions an expiry or a list's change calls for) then walk no count again: their cost
    does not grow with the counts held (issue 44; a spilled window's are read back from its
    files). Only the tally's own counters are kept (``own``): a fleet overlay's are new each
    time."""

    def __init__(self, rules):
        self.rules = rules
        self.own = {}               # the tally's counters, {stamp: counter}
        self._kept = {}             # (id of a counter, its ranking's arguments): (counter, records)

    def __getattr__(self, name):
        return getattr(self.rules, name)

    def changed(self):
        self._kept.clear()

    def counting(self, tally):
        """``tally``, the windows' new tally, whose counters are kept from now on."""
        self.own = tally.counters
        self.changed()
        return tally

    def examined(self, counter, server_ips, top, at_least=None):
        if not any(counter is mine for mine in self.own.values()):
            return self.rules.examined(counter, server_ips, top, at_least)
        key = (id(counter), tuple(server_ips), top, at_least)
        kept = self._kept.get(key)
        if kept is None or kept[0] is not counter:
            kept = self._kept[key] = (counter, self.rules.examined(counter, server_ips, top, at_least))
        return list(kept[1])


class Judgements:
    """When a follower with the campaign profile judges all of its windows' keys (Campaigns.judge;
    its steps in between decide its ranked records only: decision/between.py): once something
    since the last judgement may change one (``owed``: lines counted, a list changed, an entry
    expired, the fleet's news), ``every`` seconds after it at the earliest and no more than a
    ``share`` of the time, by its own CPU time (a wait for the blocklist's lock is none; a window
    of more keys takes longer to judge), on the monotonic clock (a step back of the wall clock
    puts nothing off). A step must_judge() names is a judgement whatever the pace."""

    def __init__(self, active, every, share):
        self.active, self.every, self.share = active, every, share
        self.at, self.seconds, self.owed = 0.0, 0.0, False
        self.started = (0.0, 0.0)

    def due(self):
        return self.active and self.owed and time.monotonic() - self.at >= max(self.every, self.seconds / self.share)

    def start(self):
        """A decision step starts; returns the wall clock's time."""
        self.started = (time.monotonic(), time.thread_time())
        return time.time()

    def done(self, judged, expired=False):
        """The step started last is done: a judgement, or one that took entries off a list (``expired``)."""
        if judged:
            self.at, self.seconds, self.owed = self.started[0], time.thread_time() - self.started[1], False
        elif expired:
            self.owed = True


def must_judge(counts):
    """Whether a step on ``counts`` must be a judgement: the fleet hands it crossings of addresses
    (each to one step only: a step between would spare a browser's for good; its campaign
    crossings stay, and bring news), or a window's counts spilled past count_budget (a step
    between would look its records' signals up in memory only)."""
    return any(getattr(counts, 'fleet_records', {}).values()) or any(spilled(counter) for window, counter in counts)


def expired_in(result):
    """Whether a decision step's ``result`` took entries off the blocklist or an answer list."""
    return bool(result.expired) or any(done['expired'] for done in (getattr(result, 'answers', None) or {}).values())


class OnceAnHour:
    """``warn``, for a follower's decision steps (twice a second): the warning that decisions have
    no list (ANSWERS_UNLISTED, a setting's, which every judgement would say again with a count that
    grows: its numbers aside) said again only an hour after it was last; any other as it comes (a
    failure that comes back is said again)."""

    AGAIN = 3600.0
    NUMBERS = dict.fromkeys(range(ord('0'), ord('9') + 1))     # str.translate: taken out

    def __init__(self, warn):
        self.warn, self.said = warn, {}
        self.keys = set((messages.ANSWERS_UNLISTED % (0, kind, kind)).translate(self.NUMBERS) for kind in ANSWERS)

    def __call__(self, line):
        key, now = line.translate(self.NUMBERS), time.time()
        if key not in self.keys:
            self.warn(line)
        elif now - self.said.get(key, now - self.AGAIN) >= self.AGAIN:
            self.said[key] = now
            self.warn(line)


def key_of(logs):
    """The name part shared by a set of logs' state, status and pid files."""
    return 'follow-%08x' % (zlib.crc32(to_bytes(','.join(os.path.abspath(path) for path in logs))) & 0xffffffff)


def jsonable(value):
    return json.loads(json.dumps(value))


def atomic_write(path, pieces):
    """Replace ``path`` by the bytes ``pieces`` (one bytes, or an iterable of them), mode 0600."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    temporary = os.path.join(directory, '.tmp-%d-%s' % (os.getpid(), os.path.basename(path)))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            for data in [pieces] if isinstance(pieces, bytes) else pieces:
                write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        os.unlink(temporary)        # nothing half-written is left
        raise
    os.rename(temporary, path)


class OverBudget(Exception):
    """The state would be larger than its budget (setting state_budget), or its counts
    are partly in spill files (past count_budget)."""


def dump(path, doc, counters, max_bytes=None):
    """Write the state: ``doc`` (JSON) and ``counters`` ({stamp: Counter}), a slice of
    the counts at a time (no copy of them all in memory). OverBudget, and nothing written,
    when a counter spilled to files or the state would be larger than ``max_bytes``."""
    if any(spilled(counter) for counter in counters.values()):
        raise OverBudget('more than count_budget distinct addresses')

    def pieces():
        written = 0
        head = json.dumps(dict(doc, format=FORMAT)).encode('utf-8') + b'\n'
        for stamp, counter in counters.items():
            if counter:
                head += b'@' + stamp + b'\n'
                items = iter(counter.items())
                while True:
                    part = head + b''.join(b'%d %s\n' % (count, key) for key, count in islice(items, 20000))
                    head = b''
                    written += len(part)
                    if max_bytes is not None and written > max_bytes:
                        raise OverBudget('larger than state_budget (%d bytes)' % max_bytes)
                    if not part:
                        break
                    yield part
        if head:
            yield head
    atomic_write(path, pieces())


def load(path, max_bytes=None, warn=None):
    """(doc, {stamp: [(key, count)]}) of a state file; (None, None) when there is none, it
    cannot be read, it is larger than ``max_bytes``, or it is damaged (then ``warn`` is told:
    the follower reads cold rather than die at every start)."""
    try:
        with open(path, 'rb') as handle:
            if max_bytes is not None and os.fstat(handle.fileno()).st_size > max_bytes:
                return None, None
            header, rest = (handle.read().split(b'\n', 1) + [b''])[:2]
    except (OSError, IOError):
        return None, None
    try:
        doc = json.loads(header.decode('utf-8'))
        if doc.get('format') != FORMAT:
            return None, None
        counts, entries = {}, None
        for entry in rest.split(b'\n'):
            if entry.startswith(b'@'):
                entries = counts.setdefault(entry[1:], [])
            elif entry:
                count, key = entry.split(b' ', 1)
                entries.append((key, int(count)))
        return doc, counts
    # RecursionError: a header nested deeper than Python's json reads (a ValueError it is not).
    except (ValueError, AttributeError, TypeError, RecursionError):
        if warn is not None:
            warn(messages.STATE_IGNORED % (path, 'not a state a follower writes'))
        return None, None


def claim(path, busy):
    """Lock the pid file ``path`` and write this pid in it; BotDetectorError(``busy``) when
    another follower holds it. Returns its descriptor (closed at the end: unlocked). A
    follower that stops removes its pid file while it holds it (leave): one locked here
    after that is taken anew, as the blocklist's lock is."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise BotDetectorError(busy)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        except OSError:
            pass
        os.close(fd)        # removed by the follower that held it, as it stopped
    os.ftruncate(fd, 0)
    os.write(fd, b'%d\n' % os.getpid())
    return fd


def leave(pid_path, status_path):
    """A follower stopping: its status file and (still locked) its pid file removed, so that
    stopped followers leave nothing in the lock directory (one of another set of logs reuses
    none of them)."""
    for path in (status_path, pid_path):
        try:
            os.unlink(path)
        except OSError:
            pass


def running(path):
    """Whether a follower holds the pid file ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def files_stat(paths):
    """(device, inode, size, mtime) of each of ``paths``, None when it is missing: a file
    changed (the lists: an unblock, an edit) when it differs."""
    found = []
    for path in paths:
        try:
            info = os.stat(path)
            found.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
        except OSError:
            found.append(None)
    return found


def saved_positions_valid(positions, count):
    """Whether a state file's positions are as save() writes them: per log, its old files and
    its current one, each {dev, ino, offset: whole numbers, head: base64}."""
    def entry_valid(entry):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), int) and not isinstance(entry.get(k), bool)
                                                  and entry.get(k) >= 0 for k in ('dev', 'ino', 'offset')):
            return False
        try:
            base64.b64decode(entry.get('head'), validate=True)
        except (TypeError, ValueError):
            return False
        return True
    return (isinstance(positions, list) and len(positions) == count and all(
        isinstance(saved, dict) and isinstance(saved.get('old'), list) and all(map(entry_valid, saved['old']))
        and 'current' in saved and (saved['current'] is None or entry_valid(saved['current'])) for saved in positions))


def write_metrics(follower, now, behind_seconds, behind_bytes, unparsed):
    """A follower's metrics file (Follower.publish): what it did since its last write, the
    busiest address of each window (under the threshold too), its fleet store's series."""
    from ..reporting.metrics import fleet_samples, write_follow      # a metrics file only
    tops = [(w.name, ([(0, None)] + follower.rules.examined(follower.tally.counters[w.stamp], follower.server_ips, 1))[-1][0])
            for w in hour_windows(now)]
    fleet, received = (), 0
    if follower.fleet is not None:
        received = follower.fleet.decisions_received
        fleet = fleet_samples(follower.label, follower.fleet, received - follower.fleet_reported)
    try:
        write_follow(follower.settings, follower.label, behind_seconds, behind_bytes, follower.additions, follower.removals,
                     follower.enforcement, unparsed, follower.read, tops, fleet=fleet)
        follower.additions, follower.removals, follower.read, follower.fleet_reported = {}, 0, [0, 0], received
    except BotDetectorError as exc:
        follower.warn(messages.METRICS_UNWRITABLE % exc.message)


def publish(follower, now, behind_bytes, metrics=True):
    """A follower's status file (--status) and, with ``metrics``, its metrics."""
    behind_seconds = 0 if not behind_bytes else max(0.0, now - follower.caught_up_at)
    doc = {'pid': os.getpid(), 'logs': follower.logs, 'blocklist': os.path.realpath(follower.settings.blocklist),
           'updated': time.time(), 'decided': follower.decided_at, 'behind_seconds': round(behind_seconds, 3), 'behind_bytes': behind_bytes}
    formatted = [path for path, reader in follower.readers.items() if reader is not None]
    doc.update(follower.fleet.status() if follower.fleet is not None else {})
    if formatted:
        doc['unparsed_lines'] = dict((path, follower.unparsed.get(path, 0)) for path in formatted)
    try:
        atomic_write(follower.status_path, json.dumps(doc).encode('utf-8'))
    except OSError:
        pass
    if metrics and follower.settings.metrics_file is not None:
        write_metrics(follower, now, behind_seconds, behind_bytes, sum(follower.unparsed.values()) if formatted else None)


def save(follower, now, unless=None):
    """A follower's state written (Follower.save), unless its positions and windows are ``unless``; returns them."""
    doc = {'logs': follower.logs, 'settings': jsonable(state.counting_settings(follower.settings)),
           'positions': [source.positions() for source in follower.sources], 'hour': follower.hour[1]}
    if follower.answered is not None:
        doc['answered'] = follower.answered.saved()
    if doc != unless:
        try:
            dump(follower.state_path, dict(doc, now=now), follower.tally.counters, follower.settings.state_budget)
            follower.state_dropped = follower.state_unsaved = False
        except OSError as exc:      # a full state directory (ENOSPC): follow on, the next save tries again
            if not follower.state_unsaved:
                follower.warn(messages.STATE_NOT_SAVED % (follower.state_path, exc.strerror or exc))
            follower.state_unsaved = True
            return unless
        except OverBudget as exc:       # a restart then reads the windows as a run does
            try:
                os.unlink(follower.state_path)
            except OSError:
                pass
            if not follower.state_dropped:
                follower.warn(messages.STATE_OVER_BUDGET % {'path': follower.state_path, 'why': exc.args[0]})
            follower.state_dropped = True
    return doc
