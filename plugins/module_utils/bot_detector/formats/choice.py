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
from ..values.log_formats import FORMATS, format_of, looks_combined as _looks_combined
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


def head_of(path):
    """The first HEAD_BYTES of a log (decompressed when it is gzip), b'' when unreadable; and
    past them to the end of its first line where that is longer, up to the longest line read
    whole (chunks.LONG_LINE_READ; a longer one is unparsed): auto and the layouts are told
    from whole lines."""
    head, whole, most = bytearray(), False, max(HEAD_BYTES, chunks.LONG_LINE_READ + 1)    # a longest line and its newline
    try:
        with open(path, 'rb') as handle:
            raw = handle.read(HEAD_BYTES)
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if raw[:2] == b'\x1f\x8b' else None
            while raw and len(head) < most and not (whole and len(head) >= HEAD_BYTES):
                piece = raw if inflate is None else inflate.decompress(raw, min(HEAD_BYTES, most - len(head)))
                head += piece[:most - len(head)]
                whole = whole or b'\n' in piece
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
        head = head_of(path) if head is None else head
        if not has_whole_line(head):
            sibling = rotated_sibling(path)
            sibling_head = head_of(sibling) if sibling else b''
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
    """The format of a log, from its first lines in ``head`` (up to SAMPLE_LINES): the one that
    fits at least MOST of them, and more of them than any other. One client's request (a user
    name with a space, which nginx writes unescaped) or another program's line among them
    neither refuses the log nor chooses its format: such lines are counted as unparsed, as
    anywhere in a log. Raises the refusal (exit status 2) when no format fits most lines, two
    fit as many, fewer than ``least`` fit, or there is no line yet."""
    lines = [line for line in head.split(b'\n')[:-1] if line.strip()][:SAMPLE_LINES] if b'\n' in head else []
    if lines and all(line.startswith(b'#') for line in lines[:1]):
        fields = [line for line in lines if line.startswith(b'#Fields:')]
        if fields:
            return 'w3c'
    if not lines:
        raise bad_option('log_format auto: %s has no whole line yet to tell its format from; set log_format' % path)
    fits = {}
    for name, test in format_tests():
        fits[name] = sum(1 for line in lines if test(line))
    most = max(fits.values())
    best = [name for name, count in fits.items() if count == most]
    if most < max(MOST * len(lines), least) or len(best) != 1:
        raise bad_option('log_format auto: cannot tell the format of %s from its first lines (%s); set log_format'
                         % (path, 'fits ' + ' and '.join(best) if most and len(best) > 1 else 'none fits most of them'))
    return best[0]


def format_tests():
    """[(format, test of one line)]: each format's own test (auto, hint.py)."""
    from . import json_logs, text_logs      # auto only
    return [('combined', _looks_combined), ('vhost_combined', lambda line: _looks_combined(line.partition(b' ')[2])),
            ('traefik', lambda line: text_logs.TRAEFIK.match(line) is not None and not _looks_combined(line)),
            ('haproxy', lambda line: text_logs.HAPROXY.search(line) is not None)] + json_logs.DETECTORS


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
        self.recent = (self.recent + [(line, test(line)) for line in lines])[-SAMPLE_LINES:]

    def astray(self):
        """Whether most of the recent lines (at least SAMPLE_LINES // 2 of them) no longer fit."""
        return len(self.recent) >= SAMPLE_LINES // 2 and 2 * sum(1 for dummy, fit in self.recent if fit) < len(self.recent)

    def redecide(self, path):
        """The format the recent lines fit (raises as detect does); the window starts anew."""
        lines, self.recent = [line for line, dummy in self.recent], []
        return detect(b'\n'.join(lines) + b'\n', path, least=FEW)
