# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bytes and text. The log side works on bytes, as ``LC_ALL=C grep -a`` does, so no input
can make the core raise a decoding error; surrogateescape keeps every byte when a log's
bytes must be shown as text."""

from __future__ import absolute_import, division, print_function

import os
import re

from .errors import bad_option

__metaclass__ = type

# A byte that bytes.strip() leaves: a line without one is blank.
NOT_WHITESPACE = re.compile(br'[^ \t\n\r\x0b\x0c]')


def write_all(fd, data):
    """Every byte of ``data`` to ``fd`` (os.write may take a part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def to_bytes(value):
    if isinstance(value, bytes):
        return value
    return value.encode('utf-8', 'surrogateescape')


def to_text(value):
    """Bytes from the log as text; printing it back with surrogateescape is byte-exact."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    return value


# A line named in a message by its start: a client or a writer may make one megabytes long.
NAMED_START = 80


def named_by_start(text):
    """``text`` as a message names it: its first NAMED_START characters, '...' after a longer one."""
    return text if len(text) <= NAMED_START else text[:NAMED_START] + '...'


def printable(value):
    """``value`` (str, list or dict) with undecodable bytes shown as escapes, for JSON."""
    if isinstance(value, dict):
        return dict((k, printable(v)) for k, v in value.items())
    if isinstance(value, list):
        return [printable(v) for v in value]
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')
    return value


def quote_item(item):
    """A list item on its own line: JSON-quoted when blanks around it, a leading quote or a
    comment character would otherwise change it (``GET /job/`` ends in a space)."""
    import json     # json: only config files and docs need it, not every run
    if item != item.strip() or item[:1] in ('"', '#', ';') or json.dumps(item)[1:-1] != item:
        return json.dumps(item)
    return item


def unquote_item(line, where):
    """A list item of the config file, its JSON quotes (quote_item's) removed."""
    line = line.strip()
    if not line.startswith('"'):
        return line
    import json     # a quoted list item only
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise bad_option('%s: a quoted item must be one JSON string, got %r' % (where, line))
    return value
