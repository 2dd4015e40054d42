# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a log's bytes: whole-line chunks by pread, lines longer than a chunk piece by
piece in bounded memory, gzip members, and forked workers over large ranges. Each piece of
whole lines goes to a Tally (tally.py), which does the counting.
"""

from __future__ import absolute_import, division, print_function

import os
import re
import signal
import zlib

from ..base.errors import BotDetectorError, Interrupted
from ..base.text import NOT_WHITESPACE
from .logfile import PROBE_BYTES, has_gzip_header, line_start_after

__metaclass__ = type

READ_CHUNK = 1 * 1024 * 1024
# Ranges of at least this size are counted by one forked process per idle core (workers_for).
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
# A range whose costly lines are not known to lie together (a full scan) is dealt out to the
# workers in stripes of about this size, in turn (count_parallel).
STRIPE_BYTES = 4 * 1024 * 1024
MAX_STRIPES = 64        # per worker
MAX_WORKERS = 4
LOADAVG = '/proc/loadavg'      # its fourth field: tasks running now / all tasks
# A line longer than READ_CHUNK is read piece by piece (LongLine); its first field must be
# at most this long: longer, it is no address, and the line is not counted.
LONG_FIELD = 1024 * 1024
# In another format than combined (a reader's), a line longer than READ_CHUNK is joined and
# read whole up to this long (Go's servers, Caddy and Traefik, take 1 MiB of headers, which
# their JSON may write six bytes a byte); longer, it is counted as unparsed.
LONG_LINE_READ = 8 * 1024 * 1024

_BLANK = re.compile(br'[ \t]')
_NOT_BLANK = re.compile(br'[^ \t]')


class LongLine:
    """One line longer than a read chunk, judged piece by piece in bounded memory.

    The spec's line filter depends only on which of its needles a line holds and on its
    first field (LineFilter.needles), so a short stand-in line with the same first field
    and the same needles is counted in its place: the counts are those of the whole line.
    A first field longer than LONG_FIELD is never an address, and its line is not counted;
    nor is any long line under a filter without needles (the precise rules). A line of
    another format than combined (the tally's reader) must be decoded to be told: it is
    joined and read whole up to LONG_LINE_READ, else counted as unparsed."""

    def __init__(self, tally):
        self.tally = tally
        self.whole, self.length = ([], 0) if tally.reader is not None else (None, 0)
        self.start, self.blank = None, True     # (another format) the warning's example; blanks only
        needles = tally.long_line_needles()
        self.skip = needles is None
        self.exact, self.folded = ([], []) if self.skip else needles
        # A byte no needle holds, to join them: the stand-in then holds no needle the line lacks.
        used = set(bytearray(b''.join(self.exact + self.folded)))
        self.joint = bytes(bytearray([next(byte for byte in range(256) if byte not in used)]))
        self.found = set()
        self.overlap = max([len(n) for n in self.exact + self.folded] or [1]) - 1
        self.tail = b''
        self.field, self.field_length, self.separator = [], 0, None
        self.state = 'leading'      # blanks before the first field, then 'in', 'done' or 'too long'

    def feed(self, piece):
        if self.whole is not None:
            self.length += len(piece)
            self.start = piece[:300] if self.start is None else self.start
            self.blank = self.blank and NOT_WHITESPACE.search(piece) is None
            if self.length <= LONG_LINE_READ:
                self.whole.append(piece)
            return
        self.tally.note_piece(piece)
        if self.skip:
            return
        self._first_field(piece)
        if self.state == 'too long':
            self.skip = True
            return
        text = self.tail + piece
        for needle in self.exact:
            if needle not in self.found and needle in text:
                self.found.add(needle)
        if self.folded:
            lowered = text.lower()
            for needle in self.folded:
                if (needle, 'folded') not in self.found and needle in lowered:
                    self.found.add((needle, 'folded'))
        self.tail = text[-self.overlap:] if self.overlap else b''

    def _first_field(self, piece):
        """awk's $1 (rules.first_field), across pieces."""
        at = 0
        if self.state == 'leading':
            match = _NOT_BLANK.search(piece)
            if match is None:
                return
            self.state, at = 'in', match.start()
        if self.state == 'in':
            match = _BLANK.search(piece, at)
            end = len(piece) if match is None else match.start()
            self.field.append(piece[at:end])
            self.field_length += end - at
            if self.field_length > LONG_FIELD:
                self.state, self.field = 'too long', []
            elif match is not None:
                self.state, self.separator = 'done', piece[end:end + 1]

    def saturated(self):
        """Whether more bytes without a newline change nothing but the line's length: its first
        field too long to be an address (or no needle to look for), or in another format the
        line too long to decode."""
        return self.length > LONG_LINE_READ and not self.blank if self.whole is not None else self.skip

    def skip_nuls(self, count):
        """``count`` NUL bytes of a saturated line, as feeding them would count them (no needle,
        no hour, no blank in them): only its length changes."""
        if self.whole is not None:
            self.length += count

    def finish(self):
        if self.whole is not None:
            if self.length <= LONG_LINE_READ or self.blank:       # a blank line is no unparsed line
                self.tally.chunk(b''.join(self.whole) if not self.blank else b' ')
            else:
                self.tally.count_long_line(None, (), example=self.start)
            return
        if self.skip or self.state == 'leading':
            self.tally.count_long_line(None, self.found)
            return
        field = b''.join(self.field)
        if self.separator is None:
            stand_in = field        # the whole line is its first field: the needles are in it
        else:
            held = [n for n in self.exact if n in self.found] + [n for n in self.folded if (n, 'folded') in self.found]
            stand_in = field + self.separator + self.joint + self.joint.join(held)
        self.tally.count_long_line(stand_in, self.found)


def count_stream(pieces, tally):
    """Count a stream of byte pieces (a decompressed gzip file) to its end: whole lines per
    piece, the unfinished last line carried over (never more than a chunk: a longer line
    goes to LongLine), so the work is linear in the stream's length."""
    carry = b''
    long_line = None
    for piece in pieces:
        if long_line is not None:
            cut = piece.find(b'\n')
            if cut == -1:
                long_line.feed(piece)
                continue
            long_line.feed(piece[:cut])
            long_line.finish()
            long_line = None
            piece = piece[cut + 1:]
        elif carry:
            piece = carry + piece
        carry = b''
        cut = piece.rfind(b'\n')
        if cut != -1:
            tally.chunk(piece, limit=cut)
            piece = piece[cut + 1:]
        if len(piece) >= READ_CHUNK:
            long_line = LongLine(tally)
            long_line.feed(piece)
        else:
            carry = piece
    if long_line is not None:
        long_line.finish()
    elif carry:
        tally.chunk(carry)


def count_long_line(fd, position, chunk, tally, interrupted=None):
    """Count the line starting at ``position``, longer than ``chunk`` (its first READ_CHUNK
    bytes), piece by piece; a run of NUL bytes once the line is saturated at the speed of
    reading (holes.py). Returns (its length with its newline, the bytes read). Raises
    Interrupted, nothing counted, when ``interrupted()`` says so."""
    line = LongLine(tally)
    line.feed(chunk)
    consumed, read, last = len(chunk), 0, chunk
    while True:
        if interrupted is not None and interrupted():
            raise Interrupted()
        if last[-1:] == b'\x00' and line.saturated():
            from .holes import nul_run_end      # a NUL run (a hole): rare, a cron run of a usual log loads none
            nuls = nul_run_end(fd, position + consumed, os.fstat(fd).st_size, interrupted) - position - consumed
            line.skip_nuls(nuls)
            consumed, read = consumed + nuls, read + nuls
        more = last = os.pread(fd, READ_CHUNK, position + consumed)
        read += len(more)
        if not more:
            break
        cut = more.find(b'\n')
        if cut == -1:
            line.feed(more)
            consumed += len(more)
            continue
        line.feed(more[:cut])
        consumed += cut + 1
        break
    line.finish()
    return consumed, read


def count_range(fd, start, end, tally, interrupted=None):
    """Count the lines that start in [start, end) of a plain file; ``start`` is a line
    start. Each chunk is counted up to its last newline and the next chunk is read from
    just after it, so no chunk is copied; a line longer than a chunk is read piece by
    piece (count_long_line). pread, so forked workers sharing ``fd`` do not share a file
    offset. Returns the bytes read. ``interrupted``: see count_long_line (the Interrupted
    raised carries ``position``, the start of the line given up: the lines before it are counted)."""
    position, read = start, 0
    reader = tally.reader
    if reader is not None:
        reader.start_at(fd, start)      # w3c: the #Fields: in force at ``start``
    while position < end:
        chunk = os.pread(fd, READ_CHUNK, position)
        read += len(chunk)
        if not chunk:
            break
        if position + len(chunk) >= end:
            # The last line to count is the one holding byte end - 1.
            stop = chunk.find(b'\n', end - position - 1)
            if stop != -1:
                if chunk.find(b'\n', stop + 1) != -1:
                    tally.chunk(chunk[:stop])     # the range ends mid-chunk: once per range
                else:
                    tally.chunk(chunk, limit=stop)
                position += stop + 1
                break
        stop = chunk.rfind(b'\n')
        if stop != -1:
            tally.chunk(chunk, limit=stop)
            position += stop + 1
        elif len(chunk) < READ_CHUNK:
            tally.chunk(chunk)                  # the file's last line, without a newline
            position += len(chunk)
        else:
            try:
                consumed, more = count_long_line(fd, position, chunk, tally, interrupted)
            except Interrupted as exc:
                if reader is not None:
                    reader.stop_at(fd, position)
                exc.position = position
                raise
            read += more
            position += consumed
    if reader is not None:
        reader.stop_at(fd, position)
    return read


def workers_for(size):
    """How many processes count a range of ``size`` bytes: one per idle core (at most
    MAX_WORKERS) for a range large enough to repay a fork and the sum of the counters
    (PARALLEL_MIN_BYTES), else one. On a busy host a worker would add CPU time without
    shortening the run."""
    if size < PARALLEL_MIN_BYTES:
        return 1
    return min(MAX_WORKERS, idle_cores())


def idle_cores():
    """The cores this process may run on (its CPU affinity) less those busy with other
    work at this instant: /proc/loadavg's count of running tasks, which includes this one.
    The load average is only the fallback: it lags a minute behind, still counting work
    just ended (the previous run of a benchmark or of a playbook)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        with open(LOADAVG) as loadavg:
            busy = int(loadavg.read().split()[3].split('/')[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            busy = int(os.getloadavg()[0] + 0.5)
        except (AttributeError, OSError):
            busy = 0
    return max(1, cores - max(0, busy))


def count_parallel(path, handle, start, end, tally, counted_from=None):
    """Count [start, end) in one forked process per core, each over a line-aligned part,
    and add up their counters. ``counted_from``: where the lines that count begin (the
    bytes before it are read quickly), so [counted_from, end) is shared out evenly, the
    first part also taking [start, counted_from). Returns the bytes read."""
    workers = workers_for(end - start)
    if workers < 2:
        return count_range(handle.fileno(), start, end, tally)
    import pickle       # only runs that fork pay for it
    if tally.session is not None:
        tally.session.ready()       # the directory every process's files go in; without one, counts stay in memory
    parts = _parts(handle, start, end, workers, counted_from, getattr(tally.reader, 'contiguous_parts', False))
    children, parent = [], os.getpid()
    for part in range(1, workers):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # child: count one part, send it, leave
            status = 0
            try:
                _end_with(parent)
                os.close(reader)
                mine = tally.fresh()
                read = sum(count_range(handle.fileno(), low, high, mine) for low, high in parts[part])
                mine.hand_over(workers)
                unparsed = (mine.reader.unparsed, mine.reader.example) if mine.reader is not None else None
                payload = pickle.dumps((None, mine.counters, read, mine.lines, mine.stamped, unparsed),
                                       protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # pylint: disable=broad-except
                payload = pickle.dumps((str(exc), None, 0, None, False, None), protocol=pickle.HIGHEST_PROTOCOL)
                status = 1
            with os.fdopen(writer, 'wb') as pipe:
                pipe.write(payload)
            os._exit(status)  # pylint: disable=protected-access
        os.close(writer)
        children.append((pid, reader))
    failure, read = None, 0
    try:
        read += sum(count_range(handle.fileno(), low, high, tally) for low, high in parts[0])
    finally:
        # Every worker is read and reaped, even when this process's own part failed.
        for pid, reader in children:
            with os.fdopen(reader, 'rb') as pipe:
                payload = pipe.read()
            os.waitpid(pid, 0)
            # Our own child's pickle over a private pipe: trusted data.
            error, counters, part_read, lines, stamped, unparsed = (
                pickle.loads(payload) if payload else ('a worker died', None, 0, None, False, None))
            if error is not None:
                failure = error
                continue
            tally.add(counters, lines, stamped, unparsed)
            read += part_read
    if failure is not None:
        raise BotDetectorError('cannot read %s: %s' % (path, failure))
    return read


def _end_with(parent):
    """A forked worker ends when its run does: a run killed with kill -9 cannot end its
    workers, which would count on and hold its spill directory's lock (spill.py) for nothing.
    Linux's PR_SET_PDEATHSIG kills this process with its parent; set only now, the parent may
    be gone already."""
    try:
        import ctypes       # a forked worker's only
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)       # 1: PR_SET_PDEATHSIG
    except (ImportError, OSError, AttributeError, TypeError):     # no ctypes, no prctl: the check below only
        pass
    if os.getppid() != parent:
        os._exit(1)  # pylint: disable=protected-access


def _parts(handle, start, end, workers, counted_from, contiguous):
    """The line-aligned ranges of [start, end) each worker counts, in order. With
    ``counted_from`` (where the lines that count begin; the bytes before are read quickly),
    [counted_from, end) is shared out evenly, the first worker also taking [start,
    counted_from). Without (a full scan: the windows' lines, which cost the most, may lie
    anywhere, and in a time-ordered log lie together at its end), the range is dealt out in
    stripes in turn, so that each worker gets about as many of them as the others; one
    range each when ``contiguous`` (w3c: a part's start searches back for its fields)."""
    if counted_from is not None or contiguous:
        even = start if counted_from is None else min(max(start, counted_from), end)
        bounds = [start] + [line_start_after(handle, even + (end - even) * i // workers) for i in range(1, workers)] + [end]
        return [[(bounds[i], bounds[i + 1])] for i in range(workers)]
    stripes = workers * max(1, min(MAX_STRIPES, (end - start) // (STRIPE_BYTES * workers)))
    bounds = [start] + [line_start_after(handle, start + (end - start) * i // stripes) for i in range(1, stripes)] + [end]
    return [[(bounds[i], bounds[i + 1]) for i in range(worker, stripes, workers)] for worker in range(workers)]


class DamagedGzip(Exception):
    """A gzip file that does not decompress to its end (truncated while logrotate
    compresses it, or corrupt)."""


def gzip_problem(fd):
    """None when the file is gzip: a valid gzip header, and its first PROBE_BYTES decompress
    cleanly. Otherwise why not; such a file is read as plain (a plain log whose first bytes
    happen to be 1f 8b), unless its name says gzip."""
    head = os.pread(fd, PROBE_BYTES, 0)
    if not has_gzip_header(head):
        return 'no gzip header'
    try:
        zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, READ_CHUNK)
    except zlib.error as exc:
        return 'damaged gzip data (%s)' % exc
    return None


def gunzip(handle, scan):
    """The decompressed content of a gzip file (every member; NUL padding after a member is
    allowed, as gzip allows it), in pieces of at most READ_CHUNK. Raises DamagedGzip."""
    handle.seek(0)
    decompressor, fed, members, pending = zlib.decompressobj(16 + zlib.MAX_WBITS), False, 0, b''
    while True:
        if not pending:
            pending = handle.read(READ_CHUNK)
            scan.bytes_read += len(pending)
            if not pending:
                if fed:
                    raise DamagedGzip('it ends before its end-of-stream marker (truncated, or still being written)')
                return
        if members and not fed:
            pending = pending.lstrip(b'\x00')
            if not pending:
                continue
        try:
            piece = decompressor.decompress(pending, READ_CHUNK)
        except zlib.error as exc:
            raise DamagedGzip('damaged gzip data (%s)' % exc)
        fed = True
        pending = decompressor.unconsumed_tail
        if piece:
            yield piece
        if decompressor.eof:        # a member is complete; another may follow
            members += 1
            pending = decompressor.unused_data
            decompressor, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False


def lines_end(fd, start, size):
    """The offset just after the last newline in [start, size) of a file: where its
    finished lines end (``start`` when there is none)."""
    position = size
    while position > start:
        step = min(READ_CHUNK, position - start)
        block = os.pread(fd, step, position - step)
        cut = block.rfind(b'\n')
        if cut != -1:
            return position - step + cut + 1
        position -= len(block) if block else step
        if block[-1:] == b'\x00':
            from .holes import all_nul, data_end_before      # NUL bytes with no newline: rare, see count_long_line
            if all_nul(block):      # a hole, perhaps, passed over unread
                position = max(start, data_end_before(fd, start, position))
    return start
