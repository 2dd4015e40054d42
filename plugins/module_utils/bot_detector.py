# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Detection core of jobboard.bot_detector, and the host command.

One file, Python standard library only (3.8+), no Ansible import: the module
imports it, the role copies it to each host, and ``python3 bot_detector.py LOG``
is the command that replaces ``bot-detector.sh`` (see the spec,
bot-detector-spec.md). The stages of the spec's rule 5 are ``hour_windows``
(5.2), ``count_windows`` (5.3.1-5.3.7), ``top_records`` (5.3.8-5.3.9),
``decide`` (5.4-5.7) and ``BlocklistWriter`` (5.8); ``run`` strings them
together. ``SpecRules`` (the default) and the opt-in ``PreciseRules`` are the
two rule sets; ``apply_decisions`` applies the fleet's decisions. Everything on the log side works on bytes, as
``LC_ALL=C grep -a`` does, so no input can make it raise a decoding error.
"""

from __future__ import absolute_import, division, print_function

import argparse
import errno
import fcntl
import gzip
import ipaddress
import json
import os
import pickle
import re
import socket
import stat
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from itertools import compress, repeat
from operator import contains, itemgetter, not_

__metaclass__ = type

VERSION = '1.0.0'

DEFAULT_BLOCKLIST = '/etc/ipblocklist.txt'
DEFAULT_EXCLUSIONS = '/etc/ipexcludedlist.txt'
DEFAULT_ACTIVITY_LOG = '/var/log/bot-detector.log'
DEFAULT_THRESHOLD = 1000
DEFAULT_TOP = 20
DEFAULT_SEARCH_ENGINE = 'Google'
DEFAULT_JOB_PREFIXES = (
    'GET /job/', 'GET /jobs/', 'GET /stelle/', 'GET /stellen/', 'GET /stellenangebot/',
    'GET /de/stelle/', 'GET /de/stellen/', 'GET /de/stellenangebot/',
)

RULES = ('spec', 'precise')
DEFAULT_DNS_TIMEOUT = 2.0
# Precise mode: a request whose user agent matches a crawler here (case-insensitive) is
# not counted only when its address verifies: reverse DNS gives a name under one of
# the crawler's documented domains, and that name resolves forward to the address.
DEFAULT_CRAWLERS = {
    'google': {'user_agent': 'Googlebot|Google-InspectionTool|GoogleOther|Google', 'domains': ['googlebot.com', 'google.com', 'googleusercontent.com']},
    'bing': {'user_agent': 'bingbot|BingPreview|msnbot', 'domains': ['search.msn.com']},
    'apple': {'user_agent': 'Applebot', 'domains': ['applebot.apple.com']},
    'yandex': {'user_agent': 'YandexBot|YandexImages', 'domains': ['yandex.ru', 'yandex.net', 'yandex.com']},
    'baidu': {'user_agent': 'Baiduspider', 'domains': ['baidu.com', 'baidu.jp']},
}

# Exit statuses of the command. 1 is the spec's; the others are ours.
EXIT_OK = 0
EXIT_SPEC_ERROR = 1     # no argument, log missing or not readable (spec section 7)
EXIT_BAD_OPTION = 2     # a bad option or option value; nothing was read or written
EXIT_RUN_FAILED = 3     # the run failed part-way: host address query, lock, read or append

# English names whatever the locale: the hour stamp and `date`'s default format
# under the C locale are what the access log and the reference script use.
MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')
WEEKDAYS = ('Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun')

USAGE_LINES = (
    'Path to log file missing.',
    'Usage: bot-detector.sh <logfile>',
    '    bot-detector.sh /var/log/nginx/access.log',
)

READ_CHUNK = 1 * 1024 * 1024
DENSITY_SAMPLE = 64 * 1024
# Ranges of at least this size are counted by one forked process per core (at most MAX_WORKERS).
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
MAX_WORKERS = 4
# How far back of the previous-hour window a seek starts: lines may be out of time
# order by up to this (Apache logs a request's start time when it ends).
DEFAULT_SEEK_MARGIN = 600

_IPV4 = re.compile(r'(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}'
                   r'(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z')
_FIRST_FIELD = re.compile(br'[^ \t]+')   # awk's default field splitting: runs of blanks
_BOT = re.compile(br'bot', re.IGNORECASE)  # bytes pattern: ASCII case folding, as grep -i under LC_ALL=C


class BotDetectorError(Exception):
    """A failure that ends the run; ``exit_status`` is the command's exit code."""

    def __init__(self, message, exit_status=EXIT_RUN_FAILED):
        super(BotDetectorError, self).__init__(message)
        self.message = message
        self.exit_status = exit_status


class Window:
    """One hourly window: its name, console heading and hour stamp (bytes)."""

    def __init__(self, name, heading, stamp):
        self.name = name
        self.heading = heading
        self.stamp = stamp


class Settings:
    """Everything a run needs; the defaults are the spec's."""

    def __init__(self, logs, blocklist=DEFAULT_BLOCKLIST, exclusions=DEFAULT_EXCLUSIONS,
                 activity_log=DEFAULT_ACTIVITY_LOG, threshold=DEFAULT_THRESHOLD, top=DEFAULT_TOP,
                 job_prefixes=DEFAULT_JOB_PREFIXES, search_engine=DEFAULT_SEARCH_ENGINE,
                 server_ips=None, now=None, check_mode=False, seek=True, seek_margin=DEFAULT_SEEK_MARGIN,
                 rotated=False, rules='spec', crawlers=None, ipv6_prefix=None, dns_timeout=DEFAULT_DNS_TIMEOUT,
                 resolver=None, mode='detect', report_floor=None):
        self.logs = list(logs)
        self.blocklist = blocklist
        self.exclusions = exclusions
        self.activity_log = activity_log
        self.threshold = threshold
        self.top = top
        self.job_prefixes = list(job_prefixes)
        self.search_engine = search_engine
        self.server_ips = None if server_ips is None else list(server_ips)
        self.now = now
        self.check_mode = check_mode
        self.seek = seek
        self.seek_margin = seek_margin
        self.rotated = rotated
        self.rules = rules
        self.crawlers = DEFAULT_CRAWLERS if crawlers is None else crawlers
        self.ipv6_prefix = ipv6_prefix
        self.dns_timeout = dns_timeout
        self.resolver = resolver      # reverse(address) -> names, forward(name) -> addresses; tests inject one
        self.mode = mode              # detect: the spec's run; report: count only, touch no list; apply: see apply_decisions
        self.report_floor = report_floor
        self.validate()

    def validate(self):
        """Reject option values the spec cannot mean, before anything is read or written."""
        if not self.logs and self.mode != 'apply':
            raise BotDetectorError('no access log given', EXIT_BAD_OPTION)
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int) or self.threshold < 1:
            raise BotDetectorError('threshold must be a whole number of at least 1, got %r' % (self.threshold,), EXIT_BAD_OPTION)
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 1:
            raise BotDetectorError('top must be a whole number of at least 1, got %r' % (self.top,), EXIT_BAD_OPTION)
        if not self.job_prefixes or not all(self.job_prefixes):
            raise BotDetectorError('job prefixes must be a non-empty list of non-empty strings', EXIT_BAD_OPTION)
        if not self.search_engine:
            # grep -v '' would drop every line: an empty marker can only be a mistake.
            raise BotDetectorError('the search-engine marker must not be empty', EXIT_BAD_OPTION)
        for name in ('blocklist', 'exclusions', 'activity_log'):
            if not getattr(self, name):
                raise BotDetectorError('%s must be a path' % name, EXIT_BAD_OPTION)
        if isinstance(self.seek_margin, bool) or not isinstance(self.seek_margin, int) or self.seek_margin < 0:
            raise BotDetectorError('seek margin must be a whole number of seconds, 0 or more, got %r' % (self.seek_margin,), EXIT_BAD_OPTION)
        if self.mode not in ('detect', 'report', 'apply'):
            raise BotDetectorError('mode must be detect, report or apply, got %r' % (self.mode,), EXIT_BAD_OPTION)
        if self.report_floor is not None and (isinstance(self.report_floor, bool) or not isinstance(self.report_floor, int)
                                              or self.report_floor < 1):
            raise BotDetectorError('report floor must be a whole number of at least 1, got %r' % (self.report_floor,), EXIT_BAD_OPTION)
        if self.rules not in RULES:
            raise BotDetectorError('rules must be one of %s, got %r' % (', '.join(RULES), self.rules), EXIT_BAD_OPTION)
        if self.ipv6_prefix is not None and (isinstance(self.ipv6_prefix, bool) or not isinstance(self.ipv6_prefix, int)
                                             or not 1 <= self.ipv6_prefix <= 128):
            raise BotDetectorError('ipv6 prefix must be a whole number from 1 to 128, got %r' % (self.ipv6_prefix,), EXIT_BAD_OPTION)
        if self.ipv6_prefix is not None and self.rules != 'precise':
            raise BotDetectorError('ipv6 prefix grouping needs the precise rules', EXIT_BAD_OPTION)
        if not isinstance(self.dns_timeout, (int, float)) or isinstance(self.dns_timeout, bool) or self.dns_timeout <= 0:
            raise BotDetectorError('dns timeout must be a number of seconds above 0, got %r' % (self.dns_timeout,), EXIT_BAD_OPTION)
        if not isinstance(self.crawlers, dict):
            raise BotDetectorError('crawlers must map each name to a user_agent pattern and a list of domains', EXIT_BAD_OPTION)
        for name, crawler in self.crawlers.items():
            try:
                re.compile(crawler['user_agent'])
                valid = bool(crawler['user_agent']) and all(isinstance(d, str) and d for d in crawler['domains'])
            except (KeyError, TypeError, re.error):
                valid = False
            if not valid:
                raise BotDetectorError('crawler %r needs a user_agent pattern and a list of domains' % (name,), EXIT_BAD_OPTION)
        if self.server_ips is not None and not all(self.server_ips):
            raise BotDetectorError('a server address must not be empty', EXIT_BAD_OPTION)


# ---------------------------------------------------------------- small helpers

def to_bytes(value):
    if isinstance(value, bytes):
        return value
    return value.encode('utf-8', 'surrogateescape')


def to_text(value):
    """Bytes from the log as text; surrogateescape keeps every byte, so printing is byte-exact."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    return value


def printable(value):
    """``value`` (str, list or dict) with undecodable bytes shown as escapes, for JSON."""
    if isinstance(value, dict):
        return dict((k, printable(v)) for k, v in value.items())
    if isinstance(value, list):
        return [printable(v) for v in value]
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')
    return value


def parse_now(text):
    """'YYYY-MM-DD HH:MM:SS' in local time -> seconds since the epoch."""
    try:
        return time.mktime(time.strptime(text, '%Y-%m-%d %H:%M:%S'))
    except (ValueError, OverflowError):
        raise BotDetectorError("now must be 'YYYY-MM-DD HH:MM:SS', got %r" % (text,), EXIT_BAD_OPTION)


def hour_stamp(epoch):
    """``date -d @epoch +%d/%b/%Y:%H`` with English month names, in local time."""
    t = time.localtime(epoch)
    return '%02d/%s/%04d:%02d' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour)


def date_default_format(epoch=None):
    """What ``date`` prints under the C locale, e.g. 'Sat Nov 21 04:13:43 UTC 2026'."""
    t = time.localtime(time.time() if epoch is None else epoch)
    return '%s %s %2d %02d:%02d:%02d %s %d' % (
        WEEKDAYS[t.tm_wday], MONTHS[t.tm_mon - 1], t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
        t.tm_zone or time.strftime('%Z', t), t.tm_year)


def is_client_address(field):
    """True for a syntactically valid IPv4 or IPv6 address (not 0.0.0.0 or ::).

    Our own IPv4 pattern rather than ipaddress, whose acceptance of leading
    zeros changed between Python releases.
    """
    try:
        text = field.decode('ascii')
    except UnicodeDecodeError:
        return False
    if _IPV4.match(text):
        return text != '0.0.0.0'
    if ':' not in text or '%' in text:
        return False
    try:
        return not ipaddress.IPv6Address(text).is_unspecified
    except ValueError:
        return False


def server_addresses():
    """Each address ``hostname -i`` prints (spec: server_ip)."""
    try:
        proc = subprocess.run(['hostname', '-i'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('cannot determine the server address: hostname -i: %s (give it with --server-ip)' % exc)
    if proc.returncode != 0:
        detail = printable(to_text(proc.stderr)).strip() or 'exit status %d' % proc.returncode
        raise BotDetectorError('cannot determine the server address: hostname -i: %s (give it with --server-ip)' % detail)
    return proc.stdout.split()


def read_list(path):
    """A list file's content for the search. Missing, unreadable or not a regular file (a
    directory, a FIFO that would block) counts as empty, as a failed grep does (rule 5.6)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b''
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b''
        chunks = []
        while True:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
    except OSError:
        return b''
    finally:
        os.close(fd)


# ---------------------------------------------------------------- rule 5.2: windows

def hour_windows(now):
    """The previous hour, then the current hour. '1 hour ago' is 3600 s earlier, as in GNU date."""
    return [
        Window('previous', 'Checking the previous hour...', hour_stamp(now - 3600).encode('ascii')),
        Window('current', 'Checking the current hour...', hour_stamp(now).encode('ascii')),
    ]


# ---------------------------------------------------------------- rule 5.3.1-5.3.7: count
#
# The hot path. Per chunk of whole lines, each rule is one pass of a C-level
# map() over the list of lines (bytes.__contains__, a compiled regex, bytes.split)
# and the counting is Counter.update: the interpreter never loops per line.

class LineFilter:
    """Rules 5.3.2 to 5.3.5 on whole lines (the stamp, 5.3.1, is matched by the scanner)."""

    def __init__(self, job_prefixes, search_engine):
        self._prefixes = re.compile(b'|'.join(re.escape(to_bytes(p)) for p in job_prefixes))
        self._search_engine = to_bytes(search_engine)

    def keep(self, line):
        return (self._prefixes.search(line) is not None
                and _BOT.search(line) is None
                and self._search_engine not in line
                and b'/files/' not in line)

    def count_into(self, lines, counter):
        """Count the first field of each line the rules keep."""
        count_first_fields(self.keep_all(lines), counter)

    def keep_all(self, lines):
        """The lines that ``keep`` keeps, in order, as a list."""
        lines = list(compress(lines, map(self._prefixes.search, lines)))
        # bytes.lower folds ASCII only, as grep -i under LC_ALL=C; twice as fast as an IGNORECASE regex.
        lines = list(compress(lines, map(not_, map(contains, map(bytes.lower, lines), repeat(b'bot')))))
        lines = list(compress(lines, map(not_, map(contains, lines, repeat(self._search_engine)))))
        return list(compress(lines, map(not_, map(contains, lines, repeat(b'/files/')))))


def first_field(line):
    """awk '{print $1}': the first run of characters other than space and tab."""
    match = _FIRST_FIELD.search(line)
    return match.group(0) if match else b''


def count_first_fields(lines, counter):
    """Add 1 to ``counter`` for the first field of each line.

    bytes.split(b' ', 1)[0] is awk's $1 unless the line starts with a blank or the
    field holds a tab; those rare lines are recounted with ``first_field``.
    """
    fields = Counter(map(itemgetter(0), map(bytes.split, lines, repeat(b' '), repeat(1))))
    odd = [field for field in fields if not field or b'\t' in field]
    if odd:
        odd = set(odd)
        for field in odd:
            del fields[field]
        fields.update(first_field(line) for line in lines if line.split(b' ', 1)[0] in odd)
    counter.update(fields)


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


def count_chunk(buf, windows, line_filter, counts, limit=None):
    """Count the lines of ``buf[:limit]`` (whole lines; a missing final newline is fine)
    into ``counts``, one Counter per window. ``limit``, the index of the chunk's last
    newline, spares the caller a copy without its unfinished last line. A line that holds both
    stamps counts in both windows, as with two separate greps."""
    if limit is None:
        limit = len(buf)
    lines = None
    sample = buf[:DENSITY_SAMPLE]
    sample_lines = sample.count(b'\n') + 1
    for window, counter in zip(windows, counts):
        # A stamp on under a quarter of the sampled lines: find its lines; else split all.
        if sample.count(window.stamp) * 4 < sample_lines:
            selected = lines_holding(buf, window.stamp, limit)
        else:
            if lines is None:
                lines = buf.split(b'\n')
                if limit < len(buf):
                    lines.pop()     # the unfinished line after ``limit``
            selected = list(compress(lines, map(contains, lines, repeat(window.stamp))))
        if selected:
            line_filter.count_into(selected, counter)


def open_log(path):
    """Open an access log for reading, refusing what is not a regular file.

    O_NONBLOCK so that opening a FIFO cannot hang; fstat on the open descriptor
    so the check and the read are of the same file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        raise BotDetectorError('File not found or not readable: %s' % path, EXIT_SPEC_ERROR)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        # A directory, FIFO or device (a link to /dev/zero) would hang or mislead.
        raise BotDetectorError('Not a regular file: %s' % path, EXIT_SPEC_ERROR)
    return os.fdopen(fd, 'rb')


def is_gzip(handle):
    magic = handle.read(2)
    handle.seek(0)
    return magic == b'\x1f\x8b'


# ---- finding where the windows start (time-ordered logs)

_TIMESTAMP = re.compile(br'\[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) [-+]\d{4}\]')
_MONTH_NUMBER = dict((m.encode('ascii'), i + 1) for i, m in enumerate(MONTHS))
PROBE_BYTES = 64 * 1024
ORDER_PROBES = 32


def line_time(line):
    """A line's ``[21/Nov/2026:04:13:43 +0100]`` timestamp as seconds since the epoch,
    reading its wall-clock text in this host's local time and ignoring its offset, or
    None. The windows match the stamp as text in local time (rule 5.3.1), so the seek
    must compare the same thing: a log written in another zone is then still sought right."""
    match = _TIMESTAMP.search(line)
    if match is None:
        return None
    day, month, year, hour, minute, second = match.groups()
    month = _MONTH_NUMBER.get(month)
    if month is None:
        return None
    try:
        return time.mktime((int(year), month, int(day), int(hour), int(minute), int(second), 0, 0, -1))
    except (ValueError, OverflowError):
        return None


def time_after(handle, offset):
    """The time of the first timestamped whole line starting after ``offset`` (at 0: at it),
    or None when none is found within PROBE_BYTES."""
    handle.seek(offset)
    block = handle.read(PROBE_BYTES)
    if offset:
        cut = block.find(b'\n')
        block = b'' if cut == -1 else block[cut + 1:]
    lines = block.split(b'\n')
    for line in lines[:-1] if len(lines) > 1 else lines:
        epoch = line_time(line)
        if epoch is not None:
            return epoch
    return None


def seek_offset(handle, size, target, margin):
    """A line-aligned offset before which every line is older than ``target`` + ``margin``,
    found by binary search on the line timestamps; None when the log does not look time
    ordered (some timestamp earlier than one before it by more than ``margin``), which
    asks for a full scan. 0 when the log starts after ``target``."""
    probes = {}

    def probe(offset):
        if offset not in probes:
            probes[offset] = time_after(handle, offset)
        return probes[offset]

    for i in range(ORDER_PROBES + 1):      # a spread of probes for the order check
        probe(size * i // ORDER_PROBES)
    low, high = 0, size
    while high - low > PROBE_BYTES:
        middle = (low + high) // 2
        epoch = probe(middle)
        if epoch is not None and epoch < target:
            low = middle
        else:
            high = middle
    latest = None
    for offset in sorted(probes):
        epoch = probes[offset]
        if epoch is None:
            continue
        if latest is not None and epoch < latest - margin:
            return None
        latest = epoch if latest is None else max(latest, epoch)
    return low


class Scan:
    """How one file was read: for the results, the tests and the benchmark."""

    def __init__(self, path, mode, start=0):
        self.path = path
        self.mode = mode          # 'seek', 'full', or 'full-gzip'
        self.start = start
        self.bytes_read = 0

    def as_dict(self):
        return {'path': self.path, 'mode': self.mode, 'start': self.start, 'bytes_read': self.bytes_read}


def count_stream(stream, windows, line_filter, counts, scan):
    """Count a stream read to its end (a gzip file): chunks, with the unfinished last line carried over."""
    carry = b''
    while True:
        chunk = stream.read(READ_CHUNK)
        if not chunk:
            break
        scan.bytes_read += len(chunk)
        if carry:
            chunk = carry + chunk
        cut = chunk.rfind(b'\n')
        if cut == -1:
            carry = chunk
            continue
        count_chunk(chunk, windows, line_filter, counts, limit=cut)
        carry = chunk[cut + 1:]
    if carry:
        count_chunk(carry, windows, line_filter, counts)


def count_range(fd, start, end, windows, line_filter, counts):
    """Count the lines that start in [start, end) of a plain file; ``start`` is a line
    start. Each chunk is counted up to its last newline and the next chunk is read from
    just after it, so no chunk is copied. pread, so forked workers sharing ``fd`` do not
    share a file offset. Returns the bytes read."""
    position, read = start, 0
    while position < end:
        chunk = os.pread(fd, READ_CHUNK, position)
        read += len(chunk)
        if not chunk:
            break
        if position + len(chunk) >= end:
            # The last line to count is the one holding byte end - 1.
            stop = chunk.find(b'\n', end - position - 1)
        else:
            stop = chunk.rfind(b'\n')
        while stop == -1:           # a line longer than the chunk (or the file's last line)
            more = os.pread(fd, READ_CHUNK, position + len(chunk))
            read += len(more)
            if not more:
                stop = len(chunk)
                break
            stop = more.find(b'\n')
            stop = -1 if stop == -1 else len(chunk) + stop
            chunk += more
        if stop < len(chunk) and chunk.find(b'\n', stop + 1) != -1:
            count_chunk(chunk[:stop], windows, line_filter, counts)     # the range ends mid-chunk: once per range
        else:
            count_chunk(chunk, windows, line_filter, counts, limit=stop)
        position += stop + 1
    return read


def line_start_after(handle, offset):
    """The offset of the first line start at or after ``offset`` (the file's size if none)."""
    if offset == 0:
        return 0
    handle.seek(offset - 1)
    skipped = 0
    while True:
        block = handle.read(PROBE_BYTES)
        if not block:
            return offset - 1 + skipped
        cut = block.find(b'\n')
        if cut != -1:
            return offset + skipped + cut
        skipped += len(block)


def count_parallel(path, handle, start, end, windows, line_filter, counts):
    """Count [start, end) in one forked process per core, each over a line-aligned part,
    and add up their counters. Returns the bytes read."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2 or end - start < PARALLEL_MIN_BYTES:
        return count_range(handle.fileno(), start, end, windows, line_filter, counts)
    bounds = [start] + [line_start_after(handle, start + (end - start) * i // workers) for i in range(1, workers)] + [end]
    children = []
    for part in range(1, workers):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # child: count one part, send it, leave
            status = 0
            try:
                os.close(reader)
                part_counts = [Counter() for dummy in windows]
                read = count_range(handle.fileno(), bounds[part], bounds[part + 1], windows, line_filter, part_counts)
                payload = pickle.dumps((None, part_counts, read), protocol=2)
            except BaseException as exc:  # pylint: disable=broad-except
                payload = pickle.dumps((str(exc), None, 0), protocol=2)
                status = 1
            with os.fdopen(writer, 'wb') as pipe:
                pipe.write(payload)
            os._exit(status)  # pylint: disable=protected-access
        os.close(writer)
        children.append((pid, reader))
    failure, read = None, 0
    try:
        read += count_range(handle.fileno(), bounds[0], bounds[1], windows, line_filter, counts)
    finally:
        # Every worker is read and reaped, even when this process's own part failed.
        for pid, reader in children:
            with os.fdopen(reader, 'rb') as pipe:
                payload = pipe.read()
            os.waitpid(pid, 0)
            error, part_counts, part_read = pickle.loads(payload) if payload else ('a worker died', None, 0)
            if error is not None:
                failure = error
                continue
            for counter, part in zip(counts, part_counts):
                counter.update(part)
            read += part_read
    if failure is not None:
        raise BotDetectorError('cannot read %s: %s' % (path, failure))
    return read


def scan_file(path, handle, windows, line_filter, counts, target, margin, seek):
    """Count one open log from where the windows can start (or all of it)."""
    try:
        if is_gzip(handle):
            scan = Scan(path, 'full-gzip')
            count_stream(gzip.GzipFile(fileobj=handle, mode='rb'), windows, line_filter, counts, scan)
            return scan
        size = os.fstat(handle.fileno()).st_size
        start = seek_offset(handle, size, target, margin) if seek and target is not None else None
        scan = Scan(path, 'full' if start is None else 'seek', line_start_after(handle, start or 0))
        count_parallel(path, handle, scan.start, size, windows, line_filter, counts)
        scan.bytes_read = size - scan.start     # the part of the file scanned
        return scan
    except (OSError, IOError, EOFError, zlib.error) as exc:
        raise BotDetectorError('cannot read %s: %s' % (path, getattr(exc, 'strerror', None) or exc))


def rotated_sibling(path):
    """The most recent rotated file beside ``path``: path.1, else path.1.gz."""
    for candidate in (path + '.1', path + '.1.gz'):
        if os.path.isfile(candidate):
            return candidate
    return None


def window_start(epoch):
    """The start of the local clock hour holding ``epoch``."""
    t = time.localtime(epoch)
    return int(epoch) - t.tm_min * 60 - t.tm_sec


def count_windows(logs, windows, line_filter, now=None, seek=False, margin=DEFAULT_SEEK_MARGIN, rotated=False):
    """Read each log once, in chunks, and count requests per address for every window.

    With ``seek``, start each plain log where lines older than the previous-hour window
    less ``margin`` end. With ``rotated``, also read the most recent rotated file when
    the log starts after that point. Counts of all files are summed. Returns
    (counts, scans).
    """
    counts = [Counter() for dummy in windows]
    target = None if now is None else window_start(now - 3600) - margin
    scans = []
    for path in logs:
        with open_log(path) as handle:
            starts_late = False
            if rotated and target is not None:
                first = time_after(handle, 0)
                starts_late = first is None or first > target
            scans.append(scan_file(path, handle, windows, line_filter, counts, target, margin, seek))
        sibling = rotated_sibling(path) if starts_late else None
        if sibling is not None:
            with open_log(sibling) as handle:
                scans.append(scan_file(sibling, handle, windows, line_filter, counts, target, margin, seek))
    return counts, scans


# ---------------------------------------------------------------- rule 5.3.7-5.3.9: top records

def top_records(counter, server_ips, top):
    """Order as ``sort | uniq -c | sort -nr`` under LC_ALL=C (equal counts: address in
    descending byte order), drop records holding a server address, keep the first ``top``."""
    ordered = sorted(counter.items(), key=itemgetter(1, 0), reverse=True)
    records = []
    for address, count in ordered:
        record = b'%d %s' % (count, address)
        if any(ip in record for ip in server_ips):
            continue
        records.append((count, address))
        if len(records) == top:
            break
    return records


# ---------------------------------------------------------------- rule 5.4-5.7: decide

BELOW_THRESHOLD = 'below_threshold'
ALREADY_BLOCKED = 'already_blocked'
ALLOW_LISTED = 'allow_listed'
INVALID = 'invalid'
BLOCK = 'block'


def decide(count, address, threshold, blocklist_content, exclusions_content):
    """What to do with one counted record. List matching is the spec's substring search."""
    if count < threshold:
        return BELOW_THRESHOLD
    if address in blocklist_content:
        return ALREADY_BLOCKED
    if address in exclusions_content:
        return ALLOW_LISTED
    if not is_client_address(address):
        # Safety addition: the reference would append it; we never append a non-address.
        return INVALID
    return BLOCK


# ---------------------------------------------------------------- the rule sets
#
# SpecRules are the reference script's (the default). PreciseRules (opt-in) fix their
# holes: the bot and search-engine tests look at the user agent only and exempt a
# crawler only when its address verifies; lists match exact addresses and networks.

class SpecRules:
    """The reference script's rules."""

    name = 'spec'

    def __init__(self, settings):
        self.line_filter = LineFilter(settings.job_prefixes, settings.search_engine)
        self.threshold = settings.threshold
        self.verifications = []

    def examined(self, counter, server_ips, top):
        """The records of one window that decide() sees: [(count, key)]."""
        return top_records(counter, server_ips, top)

    def lists(self, blocklist_content, exclusions_content):
        return SubstringLists(blocklist_content, exclusions_content, self.threshold)


class SubstringLists:
    """The spec's lists: substring searches in the files' content."""

    def __init__(self, blocklist, exclusions, threshold):
        self.blocklist, self.exclusions, self.threshold = blocklist, exclusions, threshold

    def verdict(self, count, key):
        return decide(count, key, self.threshold, self.blocklist, self.exclusions)

    def add(self, key):
        self.blocklist += b'\n' + key + b'\n'


def user_agent(line):
    """The last double-quoted field of a line: the user agent in the combined log format."""
    end = line.rfind(b'"')
    start = line.rfind(b'"', 0, end) if end > 0 else -1
    return b'' if start == -1 else line[start + 1:end]


def parse_address(field):
    """An ipaddress object for a valid client address (see is_client_address), else None."""
    if not is_client_address(field):
        return None
    return ipaddress.ip_address(field.decode('ascii'))


def parse_network(text):
    """An ip_network for an address or a CIDR network (bytes), else None."""
    try:
        return ipaddress.ip_network(text.strip().decode('ascii'), strict=False)
    except (ValueError, UnicodeDecodeError):
        return None


class PreciseFilter:
    """Job pages (the spec's prefixes, no /files/); a request whose user agent matches a
    crawler is counted under (address, crawler) until the address is verified."""

    def __init__(self, job_prefixes, crawlers):
        self._prefixes = re.compile(b'|'.join(re.escape(to_bytes(p)) for p in job_prefixes))
        self._names = {}
        groups = []
        for i, name in enumerate(sorted(crawlers)):
            self._names['c%d' % i] = name
            groups.append(b'(?P<c%d>%s)' % (i, to_bytes(crawlers[name]['user_agent'])))
        self._crawler = re.compile(b'|'.join(groups), re.IGNORECASE) if groups else None

    def count_into(self, lines, counter):
        lines = list(compress(lines, map(self._prefixes.search, lines)))
        lines = list(compress(lines, map(not_, map(contains, lines, repeat(b'/files/')))))
        for line in lines:
            field = first_field(line)
            match = self._crawler.search(user_agent(line)) if self._crawler is not None else None
            counter[field if match is None else (field, self._names[match.lastgroup])] += 1


class SystemResolver:
    """The host's resolver, each lookup bounded by ``timeout`` seconds."""

    def __init__(self, timeout):
        self.timeout = timeout

    def _call(self, function, *args):
        box = {}

        def target():
            try:
                box['value'] = function(*args)
            except Exception as exc:  # pylint: disable=broad-except
                box['error'] = exc
        thread = threading.Thread(target=target)
        thread.daemon = True          # a hung lookup must not keep the run alive
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive() or 'value' not in box:
            raise OSError('lookup failed or timed out')
        return box['value']

    def reverse(self, address):
        name, aliases, dummy = self._call(socket.gethostbyaddr, address)
        return [name] + list(aliases)

    def forward(self, name):
        return [info[4][0] for info in self._call(socket.getaddrinfo, name, None)]


class PreciseRules:
    """The opt-in precise rules."""

    name = 'precise'

    def __init__(self, settings):
        self.line_filter = PreciseFilter(settings.job_prefixes, settings.crawlers)
        self.crawlers = settings.crawlers
        self.threshold = settings.threshold
        self.prefix = settings.ipv6_prefix
        self.resolver = settings.resolver or SystemResolver(settings.dns_timeout)
        self.verified = {}            # (field, crawler) -> bool: the per-run cache
        self.verifications = []

    def key(self, field):
        """What is counted and blocked: the normalised address, its IPv6 network with
        ``ipv6_prefix``, or the field itself when it is not an address."""
        address = parse_address(field)
        if address is None:
            return field
        if self.prefix and address.version == 6:
            return str(ipaddress.ip_network('%s/%d' % (address, self.prefix), strict=False)).encode('ascii')
        return str(address).encode('ascii')

    def verify(self, field, crawler):
        """Reverse DNS, a name under the crawler's domains, forward DNS back to the address."""
        address = parse_address(field)
        if address is None:
            return False
        domains = [d.lower().strip('.') for d in self.crawlers[crawler]['domains']]
        try:
            names = self.resolver.reverse(str(address))
        except Exception:  # pylint: disable=broad-except
            return False
        for name in names:
            name = name.lower().rstrip('.')
            if not any(name == d or name.endswith('.' + d) for d in domains):
                continue
            try:
                forward = self.resolver.forward(name)
            except Exception:  # pylint: disable=broad-except
                continue
            if any(parse_address(to_bytes(a)) == address for a in forward):
                return True
        return False

    def _is_server(self, key, servers):
        network = parse_network(key)
        return network is not None and any(s.version == network.version and s in network for s in servers)

    def examined(self, counter, server_ips, top):
        """Rank with unverified crawler claims counted; verify the claimers that reach the
        examined records, drop what verifies, and rank again until the records are exact."""
        plain, claims = Counter(), {}
        for key, count in counter.items():
            if isinstance(key, tuple):
                claims.setdefault(key[0], Counter())[key[1]] += count
            else:
                plain[key] += count
        servers = [a for a in (parse_address(ip) for ip in server_ips) if a is not None]
        while True:
            grouped, members = Counter(), {}
            for field, count in plain.items():
                grouped[self.key(field)] += count
                members.setdefault(self.key(field), set()).add(field)
            for field, per_crawler in claims.items():
                unverified = sum(n for crawler, n in per_crawler.items() if not self.verified.get((field, crawler)))
                grouped[self.key(field)] += unverified
                members.setdefault(self.key(field), set()).add(field)
            ordered = sorted(grouped.items(), key=itemgetter(1, 0), reverse=True)
            records = [(count, key) for key, count in ordered if count and not self._is_server(key, servers)][:top]
            pending = sorted(set((field, crawler) for dummy, key in records for field in members[key]
                                 for crawler in claims.get(field, ()) if (field, crawler) not in self.verified))
            if not pending:
                return records
            for field, crawler in pending:
                self.verified[(field, crawler)] = self.verify(field, crawler)
                self.verifications.append({'address': to_text(field), 'crawler': crawler,
                                           'verified': self.verified[(field, crawler)]})

    def lists(self, blocklist_content, exclusions_content):
        return NetworkLists(blocklist_content, exclusions_content, self.threshold)


class NetworkLists:
    """Precise lists: each line an address or a CIDR network (others ignored)."""

    def __init__(self, blocklist, exclusions, threshold):
        self.blocked = self._networks(blocklist)
        self.excluded = self._networks(exclusions)
        self.threshold = threshold

    @staticmethod
    def _networks(content):
        return [n for n in (parse_network(line) for line in content.split(b'\n') if line.strip()) if n is not None]

    def verdict(self, count, key):
        if count < self.threshold:
            return BELOW_THRESHOLD
        target = parse_network(key) if parse_address(key.split(b'/')[0]) is not None else None
        if target is None:
            return INVALID
        if any(n.version == target.version and target.subnet_of(n) for n in self.blocked):
            return ALREADY_BLOCKED
        if any(n.version == target.version and target.overlaps(n) for n in self.excluded):
            return ALLOW_LISTED
        return BLOCK

    def add(self, key):
        self.blocked.append(parse_network(key))


def rules_for(settings):
    return PreciseRules(settings) if settings.rules == 'precise' else SpecRules(settings)


# ---------------------------------------------------------------- rule 5.8: apply

class BlocklistWriter:
    """Appends to the blocklist and the activity log, under an exclusive lock.

    The lock is flock(2) on the blocklist's directory, so every run that appends
    to the same blocklist serialises on it whatever its other options, and it
    needs no extra file (the blocklist itself may not exist yet). Each append is
    one write(2) of a whole line, fsync'ed before the activity log line is
    written, so the activity log never claims an addition the blocklist lacks.
    """

    def __init__(self, blocklist, activity_log):
        self.blocklist = blocklist
        self.activity_log = activity_log
        self._lock_fd = None

    def lock(self):
        directory = os.path.dirname(os.path.abspath(self.blocklist))
        try:
            self._lock_fd = os.open(directory, os.O_RDONLY)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.unlock()
            raise BotDetectorError('cannot lock %s for %s: %s' % (directory, self.blocklist, exc.strerror))

    def unlock(self):
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        self.lock()
        return self

    def __exit__(self, *exc_info):
        self.unlock()

    @staticmethod
    def append_line(path, line, fsync):
        """Append ``line`` (bytes ending in a newline) as one write; undo a partial write."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
        if os.geteuid() == 0:
            # As root, a link planted in place of a list must not redirect our writes.
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise BotDetectorError('refusing to append to %s: it is a symbolic link (running as root)' % path)
            raise BotDetectorError('cannot append to %s: %s' % (path, exc.strerror))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise BotDetectorError('refusing to append to %s: not a regular file' % path)
            size = info.st_size
            if size and os.pread(fd, 1, size - 1) != b'\n':
                line = b'\n' + line   # never glue our entry to an unterminated last line
            written = 0
            try:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                if fsync:
                    os.fsync(fd)
            except OSError as exc:
                try:
                    # Undo only when the file is exactly what it was plus our bytes: never
                    # take away what another writer appended meanwhile.
                    if written and os.fstat(fd).st_size == size + written:
                        os.ftruncate(fd, size)
                except OSError:
                    pass
                raise BotDetectorError('cannot append to %s: %s' % (path, exc.strerror))
        finally:
            os.close(fd)

    def block(self, address, count, note=None):
        """Append ``address`` to the blocklist, then its activity line; ``note`` (fleet,
        sync) marks a decision not taken by this host's own count: 'RPH=3000 (fleet)'."""
        self.append_line(self.blocklist, address + b'\n', fsync=True)
        entry = '%s | IP addess %s added to the block list, RPH=%d%s\n' % (
            date_default_format(), to_text(address), count, ' (%s)' % note if note else '')
        self.append_line(self.activity_log, to_bytes(entry), fsync=True)


def ensure_lines(path, entries, check_mode=False):
    """Append each of ``entries`` that is not yet a line of ``path`` (exact match, blanks
    around a line ignored), in order, under the same lock as the detector's appends.
    The file is created (0644) when absent and otherwise only appended to. Returns the
    entries appended (in check mode: that would be)."""
    wanted = []
    for entry in entries:
        data = to_bytes(entry).strip()
        if not data or b'\n' in data or b'\r' in data:
            raise BotDetectorError('an entry must be one non-empty line, got %r' % (entry,), EXIT_BAD_OPTION)
        if data not in wanted:
            wanted.append(data)
    writer = BlocklistWriter(path, None)
    if not check_mode:
        writer.lock()
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            raise BotDetectorError('%s is not a regular file' % path)
        present = set(line.strip() for line in read_list(path).split(b'\n'))
        missing = [entry for entry in wanted if entry not in present]
        if not check_mode:
            for entry in missing:
                writer.append_line(path, entry + b'\n', fsync=True)
    finally:
        writer.unlock()
    return [to_text(entry) for entry in missing]


# ---------------------------------------------------------------- the run

class Result:
    """What a run found and did; ``as_dict`` is what the module and --json return."""

    def __init__(self, check_mode, emit=None):
        self.check_mode = check_mode
        self.emit = emit             # gets each console line as it happens (the command prints it)
        self.blocked = []
        self.already_blocked = []
        self.allow_listed = []
        self.skipped_invalid = []
        self.windows = []
        self.messages = []
        self.appended = []     # addresses (bytes) appended, or to append in check mode
        self.blocklist_lines = 0   # lines in the blocklist when the run read it
        self.scans = []
        self.rules = 'spec'
        self.verifications = []
        self.counts = None           # with a report floor: {window: {address: count}}
        self.local_blocks = None     # report mode: this host's own decisions, from its activity log
        self.duration = 0

    @property
    def changed(self):
        return bool(self.appended)

    def say(self, line):
        self.messages.append(line)
        if self.emit is not None:
            self.emit(line)

    def record_block(self, writer, lists, key, count, entry, note=None):
        """Say, append (unless check mode) and remember one addition."""
        verb = 'Would block' if self.check_mode else 'Blocking'
        self.say('%s IP address: %s (%d requests%s)' % (verb, entry['address'], count, ', %s' % note if note else ''))
        if not self.check_mode:
            writer.block(key, count, note=note)
        self.blocked.append(entry)
        self.appended.append(key)
        lists.add(key)

    def read_lists(self, settings, rules):
        """The rules' view of the blocklist and the exclusion list, read once (under the
        lock); the run adds its own additions to it."""
        content = read_list(settings.blocklist)
        self.blocklist_lines = content.count(b'\n') + int(bool(content) and not content.endswith(b'\n'))
        return rules.lists(content, read_list(settings.exclusions))

    def blocklist_diff(self, path):
        """A unified diff of the lines the run appends (or would append) to the blocklist."""
        added = ''.join('+%s\n' % to_text(a) for a in self.appended)
        return printable('--- %s\n+++ %s\n@@ -%d,0 +%d,%d @@\n%s' % (
            path, path, self.blocklist_lines, self.blocklist_lines + 1, len(self.appended), added))

    def as_dict(self):
        return printable({
            'changed': self.changed,
            'check_mode': self.check_mode,
            'blocked': self.blocked,
            'already_blocked': self.already_blocked,
            'allow_listed': self.allow_listed,
            'skipped_invalid': self.skipped_invalid,
            'windows': self.windows,
            'messages': self.messages,
            'execution_time': self.duration,
            'scans': self.scans,
            'rules': self.rules,
            'verifications': self.verifications,
            'counts': self.counts,
            'local_blocks': self.local_blocks,
        })


def report_listed(result, say, verdict, entry, count):
    """The console line and result entry of a record that is not blocked; False for BLOCK."""
    shown = entry['address']
    if verdict == ALREADY_BLOCKED:
        say('IP address %s is already blocked.' % shown)
        result.already_blocked.append(entry)
    elif verdict == ALLOW_LISTED:
        say('IP address %s is allow-listed and will not be blocked.' % shown)
        result.allow_listed.append(entry)
    elif verdict == INVALID:
        say('Skipping %s (%d requests): not an IP address.' % (shown, count))
        result.skipped_invalid.append(entry)
    return verdict != BLOCK


def run(settings, emit=None):
    """Run the detection (spec rules 3 to 6). ``emit(line)`` gets each console line as it happens.

    Raises BotDetectorError; nothing is half-written when it does.
    """
    result = Result(settings.check_mode, emit)
    say = result.say

    for path in settings.logs:       # rule 2, before anything else happens
        if not os.access(path, os.R_OK):
            raise BotDetectorError('File not found or not readable: %s' % path, EXIT_SPEC_ERROR)
        open_log(path).close()
    start = int(time.time())
    now = time.time() if settings.now is None else settings.now
    server_ips = [to_bytes(ip) for ip in (server_addresses() if settings.server_ips is None else settings.server_ips)]
    windows = hour_windows(now)
    rules = rules_for(settings)
    counts, scans = count_windows(settings.logs, windows, rules.line_filter,
                                  now=now, seek=settings.seek, margin=settings.seek_margin, rotated=settings.rotated)
    result.scans = [scan.as_dict() for scan in scans]

    if settings.report_floor is not None or settings.mode == 'report':
        result.counts = reported_counts(rules, windows, counts, server_ips, settings.report_floor or settings.threshold)
    if settings.mode == 'report':
        result.local_blocks = local_blocks(settings.activity_log)
        result.rules = rules.name
        result.duration = int(time.time()) - start
        return result

    writer = BlocklistWriter(settings.blocklist, settings.activity_log)
    if not settings.check_mode:
        writer.lock()
    try:
        # Our own additions go into this copy, so the current-hour pass sees what the
        # previous-hour pass appended.
        lists = result.read_lists(settings, rules)
        for window, counter in zip(windows, counts):
            say(window.heading)
            records = rules.examined(counter, server_ips, settings.top)
            result.windows.append({
                'name': window.name,
                'hour_stamp': to_text(window.stamp),
                'records': [{'count': c, 'address': to_text(a)} for c, a in records],
            })
            for count, address in records:
                verdict = lists.verdict(count, address)
                entry = {'address': to_text(address), 'count': count, 'window': window.name}
                if verdict != BELOW_THRESHOLD and not report_listed(result, say, verdict, entry, count):
                    result.record_block(writer, lists, address, count, entry)
    finally:
        writer.unlock()
    result.rules = rules.name
    result.verifications = rules.verifications
    result.duration = int(time.time()) - start
    say('Execution time: %d seconds' % result.duration)
    return result


def reported_counts(rules, windows, counts, server_ips, floor):
    """Per window, every address (key) with ``floor`` or more requests, with the rules'
    filters and server drop: what a fleet run sums across hosts."""
    reported = {}
    for window, counter in zip(windows, counts):
        records = rules.examined(counter, server_ips, len(counter) or 1)
        reported[window.name] = dict((to_text(key), count) for count, key in records if count >= floor)
    return reported


_ACTIVITY = re.compile(br' \| IP addess (\S+) added to the block list, RPH=(\d+)$')


def local_blocks(activity_log):
    """The additions this host's own runs made, from its activity log (lines without a
    '(fleet)' or '(sync)' note), in order, once each."""
    seen, found = set(), []
    for line in read_list(activity_log).split(b'\n'):
        match = _ACTIVITY.search(line)
        if match and match.group(1) not in seen:
            seen.add(match.group(1))
            found.append({'address': to_text(match.group(1)), 'count': int(match.group(2))})
    return found


def apply_decisions(settings, decisions, emit=None):
    """Append fleet or sync decisions, ``[{address, count, reason}]``, to this host's
    blocklist with the same checks as a run (already listed, allow-listed, only
    addresses), under the same lock; activity lines noted '(fleet)' or '(sync)'."""
    result = Result(settings.check_mode, emit)
    say = result.say
    rules = rules_for(settings)
    writer = BlocklistWriter(settings.blocklist, settings.activity_log)
    if not settings.check_mode:
        writer.lock()
    try:
        lists = result.read_lists(settings, rules)
        for decision in decisions:
            key = to_bytes(decision['address'])
            if settings.rules == 'precise' and parse_address(key.split(b'/')[0]) is not None:
                key = parse_network(key).with_prefixlen.encode('ascii') if b'/' in key else rules.key(key)
            count = int(decision.get('count') or 0)
            note = decision.get('reason') or 'fleet'
            entry = {'address': to_text(key), 'count': count, 'window': decision.get('window') or note}
            verdict = lists.verdict(max(count, settings.threshold), key)   # the decision is taken: no threshold here
            if not report_listed(result, say, verdict, entry, count):
                result.record_block(writer, lists, key, count, entry, note=note)
    finally:
        writer.unlock()
    result.rules = rules.name
    return result


# ---------------------------------------------------------------- the host command

class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, exit 2: argparse's default adds the usage block.
        sys.stderr.write('bot-detector: error: %s\n' % message)
        raise SystemExit(EXIT_BAD_OPTION)


def _whole_number(minimum):
    """An argparse type: a whole number of at least ``minimum``."""
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError('invalid whole number: %r' % text)
        if value < minimum:
            raise argparse.ArgumentTypeError('must be at least %d, got %d' % (minimum, value))
        return value
    return parse


_positive_int = _whole_number(1)
_seconds = _whole_number(0)


def _crawler_table(text):
    try:
        table = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError('not JSON: %s' % exc)
    if not isinstance(table, dict):
        raise argparse.ArgumentTypeError('must be a JSON object')
    return table


def build_parser():
    parser = _Parser(
        prog='bot-detector.sh',
        description='Count requests to job-listing pages per client address in the previous and the current '
                    'hour of an access log, and append each address with THRESHOLD or more requests to the '
                    'blocklist (unless it is already listed or allow-listed). Without options it behaves '
                    'exactly as the reference bot-detector.sh.',
        epilog='Exit status: 0 done; 1 no log given, or the log is missing, unreadable or not a regular file; '
               '2 bad option or value (nothing read or written); 3 the run failed (host address query, lock, '
               'read or append; nothing half-written).')
    parser.add_argument('log', nargs='*', help='the access log to read; several are summed per address')
    parser.add_argument('--blocklist', default=DEFAULT_BLOCKLIST, metavar='PATH',
                        help='blocklist to read and append to (default: %(default)s)')
    parser.add_argument('--exclusions', default=DEFAULT_EXCLUSIONS, metavar='PATH',
                        help='allow-list of addresses never blocked (default: %(default)s)')
    parser.add_argument('--activity-log', default=DEFAULT_ACTIVITY_LOG, metavar='PATH',
                        help='activity log, one line per addition (default: %(default)s)')
    parser.add_argument('--threshold', type=_positive_int, default=DEFAULT_THRESHOLD, metavar='N',
                        help='requests in one hour that block an address (default: %(default)s)')
    parser.add_argument('--top', type=_positive_int, default=DEFAULT_TOP, metavar='N',
                        help='records examined per window (default: %(default)s)')
    parser.add_argument('--server-ip', action='append', metavar='ADDR',
                        help='this server\'s address, never blocked; repeat for several '
                             '(default: each address `hostname -i` prints)')
    parser.add_argument('--search-engine', default=DEFAULT_SEARCH_ENGINE, metavar='TEXT',
                        help='case-sensitive marker of search-engine requests, never counted (default: %(default)s)')
    parser.add_argument('--job-prefix', action='append', metavar='TEXT',
                        help='request prefix of a job-listing page; repeat for several (default: the spec\'s eight)')
    parser.add_argument('--now', metavar="'YYYY-MM-DD HH:MM:SS'",
                        help='evaluate as if the run started at this local time (replays, tests)')
    parser.add_argument('--rotated', action='store_true',
                        help='when a log starts after the previous-hour window began (logrotate just ran), '
                             'also read its most recent rotated file (LOG.1 or LOG.1.gz)')
    parser.add_argument('--full-scan', action='store_true',
                        help='read every log whole, as the reference script does, instead of seeking '
                             'to the windows in time-ordered logs')
    parser.add_argument('--seek-margin', type=_seconds, default=DEFAULT_SEEK_MARGIN, metavar='SECONDS',
                        help='how far lines may be out of time order; the seek starts this much before the '
                             'previous-hour window (default: %(default)s)')
    parser.add_argument('--rules', choices=RULES, default='spec',
                        help='spec: the reference script\'s rules, quirks included (default); precise: bot and '
                             'search-engine tests on the user agent only, crawlers exempt only when their address '
                             'verifies by reverse and forward DNS, lists matched by exact address or CIDR network')
    parser.add_argument('--ipv6-prefix', type=_positive_int, metavar='N',
                        help='precise rules: count and block IPv6 clients per /N network (64 is usual)')
    parser.add_argument('--crawlers', type=_crawler_table, metavar='JSON',
                        help='precise rules: the crawler table, {"name": {"user_agent": REGEX, "domains": [...]}} '
                             '(default: Google, Bing, Apple, Yandex, Baidu)')
    parser.add_argument('--dns-timeout', type=float, default=DEFAULT_DNS_TIMEOUT, metavar='SECONDS',
                        help='precise rules: time limit of each DNS lookup; a failed or slow lookup does not verify '
                             '(default: %(default)s)')
    parser.add_argument('--check', action='store_true', help='report what would be blocked; change nothing')
    parser.add_argument('--json', action='store_true',
                        help='print one JSON document (what the Ansible module returns) instead of the text lines')
    parser.add_argument('--version', action='version', version='%(prog)s ' + VERSION)
    return parser


def settings_from_args(args):
    return Settings(
        logs=args.log, blocklist=args.blocklist, exclusions=args.exclusions, activity_log=args.activity_log,
        threshold=args.threshold, top=args.top, job_prefixes=args.job_prefix or DEFAULT_JOB_PREFIXES,
        search_engine=args.search_engine, server_ips=args.server_ip,
        now=parse_now(args.now) if args.now is not None else None, check_mode=args.check,
        seek=not args.full_scan, seek_margin=args.seek_margin, rotated=args.rotated, rules=args.rules,
        crawlers=args.crawlers, ipv6_prefix=args.ipv6_prefix, dns_timeout=args.dns_timeout)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout.buffer

    def emit(line):
        # Bytes, so an address with bytes that are not UTF-8 prints as the log has it.
        out.write(to_bytes(line) + b'\n')
        out.flush()

    if not args.log:
        for line in USAGE_LINES:   # spec section 7: three lines on standard output, exit 1
            emit(line)
        return EXIT_SPEC_ERROR

    try:
        settings = settings_from_args(args)
        result = run(settings, emit=None if args.json else emit)
    except BotDetectorError as exc:
        if exc.exit_status == EXIT_SPEC_ERROR:
            emit(exc.message)     # the spec's errors go to standard output
        else:
            sys.stderr.write('bot-detector: error: %s\n' % exc.message)
        return exc.exit_status
    if args.json:
        emit(json.dumps(result.as_dict(), sort_keys=True))
    return EXIT_OK


if __name__ == '__main__':
    raise SystemExit(main())
