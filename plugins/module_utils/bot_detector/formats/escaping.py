# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fields as nginx escapes them in a combined log (escape=default: \\xHH for ", \\, controls
and non-ASCII bytes): how a twin's field is written (``escaped``, ``text_field``), and what a
raw line holds where its twin holds a stamp (``probe``)."""

from __future__ import absolute_import, division, print_function

import json
import re

from ..base.clock import CLF_TIME

__metaclass__ = type

# Bytes nginx escapes in a combined log's fields (escape=default): ", \, controls, non-ASCII.
_ESCAPE = re.compile(b'[\x00-\x1f"\\\\\x7f-\xff]')
ESCAPE_TEXT = re.compile('[\x00-\x1f"\\\\\x7f-\U0010ffff]')
CLF_BYTES = CLF_TIME.encode('ascii')


# The hex digits of the bytes escaped (escaped): a twin's '\xA2' then '1/Nov/2026:04' holds
# the stamp '21/Nov/2026:04' that its raw line ('\xc2\xa2' then the text) does not.
_ESCAPED_HEX = set(b'%02X' % byte for byte in range(256) if _ESCAPE.match(bytes((byte,))))


def probe(text):
    """What a raw line holds when its twin holds ``text`` (a stamp or date, starting with
    its day's two digits): ``text`` but its first digit, which an escape may end with, or
    both, when they are an escaped byte's hex."""
    return text[2:] if text[:2] in _ESCAPED_HEX else text[1:]


_ESCAPE_RUN = re.compile(_ESCAPE.pattern + b'+')
_ESCAPES = [b'\\x%02X' % byte for byte in range(256)]
# A field is escaped this many bytes at a time: re.sub holds a piece and a Match a run, some
# hundred bytes a byte where runs are short, so a long field (a line read whole: chunks.LONG_LINE_READ)
# costs about its escaped length, not a hundred times its own.
_ESCAPE_PIECE = 64 * 1024


def _escaped_run(match):
    run = match.group(0)
    return _ESCAPES[ord(run)] if len(run) == 1 else b''.join(map(_ESCAPES.__getitem__, bytearray(run)))


def escaped(field):
    """A field's bytes as nginx writes them in a combined log (\\xHH for ", \\, controls, non-ASCII)."""
    if _ESCAPE.search(field) is None:
        return field
    if len(field) <= _ESCAPE_PIECE:
        return _ESCAPE_RUN.sub(_escaped_run, field)
    return b''.join([_ESCAPE_RUN.sub(_escaped_run, field[at:at + _ESCAPE_PIECE])
                     for at in range(0, len(field), _ESCAPE_PIECE)])


def text_field(value):
    """A decoded (JSON) value as escaped text: '-' when absent or empty."""
    if value is None or value == '':
        return '-'
    if isinstance(value, (list, dict)):     # as JSON: Python's repr would escape with any hex digits
        value = json.dumps(value, ensure_ascii=False)
    elif not isinstance(value, str):
        value = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)     # NaN: 'nan'
    if ESCAPE_TEXT.search(value) is None:
        return value
    return escaped(value.encode('utf-8', 'surrogateescape')).decode('ascii')
