# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reader of a log: its format's (``log_format``, ``log_formats``), or the one ``auto``
tells from the log's first lines; None for combined, whose path is untouched."""

from __future__ import absolute_import, division, print_function

import os
import zlib

from ..base.errors import EXIT_BAD_OPTION, BotDetectorError, bad_option
from ..reading import chunks
from ..reading.logfile import rotated_sibling
from ..values.log_formats import FORMATS, combined_address, format_of, holds_address
from .readers import HEAD_BYTES, VhostCombined

__metaclass__ = type


# auto: how many of a log's first lines it looks at, and the share a format must fit.
SAMPLE_LINES = 50
MOST = 0.8
FEW = 3         # a follower on a log made after its start: at least this many lines agree


def reader_class(name):
    if name in ('nginx_json', 'caddy', 'traefik_json'):
        from . import json_logs      # the format in use only
        return json_logs.CLASSES[name]
    if name == 'vhost_combined':
        return VhostCombined
    from . import text_logs     # the format in use only
    return text_logs.CLASSES[name]


def head_of(path, lines=1):
    """The first HEAD_BYTES of a log (decompressed when it is gzip), b'' when unreadable; and
    past them to the end of its first ``lines`` lines where they are longer, each up to the
    longest line read whole (chunks.LONG_LINE_READ; a longer one is unparsed): auto and the
    layouts are told from whole lines (a follower's new log from choice.FEW of them, however
    long a client made them)."""
    head, whole, most = bytearray(), 0, max(HEAD_BYTES, lines * (chunks.LONG_LINE_READ + 1))    # longest lines and their newlines
    try:
        with open(path, 'rb') as handle:
            raw = handle.read(HEAD_BYTES)
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if raw[:2] == b'\x1f\x8b' else None
            while raw and len(head) < most and not (whole >= lines and len(head) >= HEAD_BYTES):
                piece = raw if inflate is None else inflate.decompress(raw, min(HEAD_BYTES, most - len(head)))
                piece = piece[:most - len(head)]
                head += piece
                whole += piece.count(b'\n')      # whole lines so far
                if inflate is not None and inflate.eof:
                    break       # the first member (a rotated file's only one)
                raw = (inflate is not None and inflate.unconsumed_tail) or handle.read(HEAD_BYTES)
    except (OSError, IOError, zlib.error):
        return b''
    return bytes(head)


class NoLineYet(BotDetectorError):
    """auto on a log with no whole line yet, nor a rotated sibling that has one: a follower
    waits for a line; a run refuses the log (exit status 2)."""


def has_whole_line(head):
    """Whether ``head`` holds a whole line that is not blank (one auto can tell a format from)."""
    return any(line.strip() for line in head.split(b'\n')[:-1])


def reader_for(settings, path, head=None, least=1):
    """(format name, Reader or None for combined) of ``path``; ``auto`` is decided from
    the log's first lines (detect), and refused (exit status 2) when they do not tell. A
    log with no whole line yet (emptied by a rotation a moment ago) is told from its rotated
    sibling, LOG.1 or LOG.1.gz, which holds the lines the log held, else (a rotated file named
    otherwise, or removed) from the state of the last run (state_dir; NoLineYet when there is
    none either). ``least``: the fewest lines the format must fit (a follower's new log: FEW)."""
    name = format_of(settings, path)
    if name == 'auto':
        head = head_of(path, least) if head is None else head
        if not has_whole_line(head):
            sibling = rotated_sibling(path)
            sibling_head = head_of(sibling, least) if sibling else b''
            if has_whole_line(sibling_head):
                path, head = sibling, sibling_head      # its format, and its first line's layout, until the log has lines
            else:
                name, head = remembered_format(settings, path), b''
                if name is None:
                    raise NoLineYet('log_format auto: %s has no whole line yet to tell its format from; set log_format' % path,
                                    EXIT_BAD_OPTION)
        if name == 'auto':
            name = detect(head, path, least)
    return name, reader_of(settings, name, path, head)


def reader_of(settings, name, path, head=None):
    """The Reader of format ``name`` for ``path`` (None for combined)."""
    if name == 'combined':
        return None
    reader = reader_class(name)(settings)
    if reader.needs_head:
        reader = reader.bind(head_of(path) if head is None else head)
    return reader


def remembered_format(settings, path):
    """The format the last run with a state (state_dir) read ``path`` in: its state records it
    among its counting settings (format_read; none recorded: combined); None without a usable
    state of this log."""
    if not getattr(settings, 'state_dir', None):
        return None
    from ..reading import saves     # a log with no whole line and no rotated sibling only: rare
    old, dummy = saves.load(settings.state_dir, os.path.abspath(path), settings.state_budget)
    name = old.settings.get('format_read', 'combined') if old is not None else None
    return name if name in FORMATS else None


def detect(head, path, least=1):
    """The format of a log, from its first lines in ``head`` (up to SAMPLE_LINES), judged by
    the fields a client cannot write (``judge``). Raises the refusal (exit status 2) when no
    format fits most lines, two fit as well, fewer than ``least`` fit, or there is no line yet."""
    lines = [line for line in head.split(b'\n')[:-1] if line.strip()][:SAMPLE_LINES] if b'\n' in head else []
    if lines and all(line.startswith(b'#') for line in lines[:1]):
        fields = [line for line in lines if line.startswith(b'#Fields:')]
        if fields:
            return 'w3c'
    if not lines:
        raise bad_option('log_format auto: %s has no whole line yet to tell its format from; set log_format' % path)
    verdicts, everyone = judge(lines)
    best = verdicts[0]
    tied = [v.name for v in verdicts if v.rank == best.rank]
    most = best.fits >= MOST * len(lines) or len(best.voters) >= MOST * everyone
    if not best.fits or not most or best.fits < least or len(tied) > 1:
        raise bad_option('log_format auto: cannot tell the format of %s from its first lines (%s); set log_format'
                         % (path, 'fits ' + ' and '.join(tied) if best.fits and len(tied) > 1 else 'none fits most of them'))
    return best.name


class Verdict:
    """How a format reads a log's first lines: the lines it fits, the distinct addresses in
    their address field, the voters among them (``judge``)."""

    def __init__(self, name, fits, addresses, voters):
        self.name, self.fits, self.addresses, self.voters = name, fits, addresses, voters
        # Its place: the format whose address field holds the most addresses, then the most voters.
        self.rank = (len(addresses), len(voters))


def judge(lines):
    """([Verdict] of each format on ``lines``, best first; the number of voters among them).

    A line's fit is told by the fields a client cannot write (each format's test: the address
    field, the time, the status where the server put them), whatever the client wrote in the
    others (a user 'a b', a Referer holding another format's whole line). Each address votes
    once however many lines it has (one scraper, one vote): a line's voter is the address a
    format reads from it, else its first field. The format whose address field holds the most
    distinct addresses comes first: one whose address field holds '-' or 'host:port' never
    wins over one that reads the log's addresses."""
    tests = format_tests()
    read = [[test(line) for name, test in tests] for line in lines]     # a line's address field in each format
    fields = set(field for row in read for field in row if field is not None)
    addresses = set(filter(holds_address, fields))
    voters = [next((field for field in row if field in addresses), None) or (line.split(None, 1) or [b''])[0]
              for line, row in zip(lines, read)]
    verdicts = []
    for at, (name, dummy) in enumerate(tests):
        fitting = [(row[at], voter) for row, voter in zip(read, voters) if row[at] is not None]
        verdicts.append(Verdict(name, len(fitting), set(field for field, dummy in fitting if field in addresses),
                                set(voter for dummy, voter in fitting)))
    verdicts.sort(key=lambda v: v.rank + (v.fits,), reverse=True)
    return verdicts, len(set(voters))


def format_tests():
    """[(format, test of one line)]: each format's test, the line's address field (bytes) in
    it, None for a line of another format (auto, format_hint.py)."""
    from . import json_logs, text_logs      # auto only
    return [('combined', combined_address), ('vhost_combined', lambda line: combined_address(line.partition(b' ')[2])),
            ('traefik', text_logs.traefik_address), ('haproxy', text_logs.haproxy_address)] + json_logs.ADDRESSES


class Watch:
    """A follower's check that the format auto chose for a log still fits its new lines: of
    the last SAMPLE_LINES of them, most must (a new log's first odd lines do not fix its format)."""

    def __init__(self, name):
        self.name = name
        self.recent = []        # (line, fits) of the last SAMPLE_LINES new lines; longer lines are passed over

    def see(self, data, whole_start):
        """The new whole lines of ``data`` (its first is whole when ``whole_start``)."""
        lines = data.split(b'\n')[:-1]
        if not whole_start:
            lines = lines[1:]
        lines = [line for line in lines[-SAMPLE_LINES:] if line.strip() and len(line) <= HEAD_BYTES]
        test = dict(format_tests()).get(self.name, lambda line: True)      # w3c: any line
        self.recent = (self.recent + [(line, test(line) is not None) for line in lines])[-SAMPLE_LINES:]

    def astray(self):
        """Whether most of the recent lines (at least SAMPLE_LINES // 2 of them) no longer fit."""
        return len(self.recent) >= SAMPLE_LINES // 2 and 2 * sum(1 for dummy, fit in self.recent if fit) < len(self.recent)

    def redecide(self, path):
        """The format the recent lines fit (raises as detect does); the window starts anew. A
        follower is never switched to a format whose address field holds no address: it would
        stop counting the log."""
        lines, self.recent = [line for line, dummy in self.recent], []
        name = detect(b'\n'.join(lines) + b'\n', path, least=FEW)
        if name != self.name and name != 'w3c' and not judge(lines)[0][0].addresses:
            raise bad_option('log_format auto: the address field of %s as %s holds no address' % (path, name))
        return name
