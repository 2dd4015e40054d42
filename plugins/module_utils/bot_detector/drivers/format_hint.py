# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A log read as combined whose first lines mostly are not: which ``log_format`` would read
it. The run warns (standard error); its standard output stays the reference's, whose
``Skipping {"time_local": ...`` lines are all a JSON log read as combined would say. A
combined log costs one read of its first 64 KiB and no format's code."""

from __future__ import absolute_import, division, print_function

from ..values.log_formats import combined_address, holds_address

__metaclass__ = type

LINES = 20      # the first whole lines looked at, as auto does
HEAD = 64 * 1024


def _head(path):
    try:
        with open(path, 'rb') as handle:
            head = handle.read(HEAD)
    except (IOError, OSError):
        return b''
    if head[:2] == b'\x1f\x8b':
        from ..formats.choice import head_of        # a gzip log given as a log: rare
        return head_of(path)
    return head


def not_combined(path):
    """The format most of the first whole lines of ``path`` parse as, when most are not combined
    lines with an address; else None (combined, or lines no format reads: a timestamp spelled
    otherwise, which the reference reads all the same, is no reason to warn). Never a format
    under which the log's addresses stop counting: its address field must hold more distinct
    addresses than combined's, as auto judges (formats/choice.judge), whatever a client wrote."""
    lines = [line for line in _head(path).split(b'\n')[:-1] if line.strip()][:LINES]
    fields = [combined_address(line) for line in lines]
    if not lines or 2 * sum(1 for field in fields if field is not None and holds_address(field)) > len(lines):
        return None
    if 2 * sum(1 for field in fields if field is not None) > len(lines) and not any(
            holds_address(combined_address(line.partition(b' ')[2]) or b'') for line in lines):
        return None     # combined lines without an address (nginx behind a Unix socket: 'unix:'): no format reads more
    if any(line.startswith(b'#Fields:') for line in lines):
        return 'w3c'
    from ..formats.choice import judge       # a log that is not combined only
    verdicts, dummy = judge(lines)
    best = verdicts[0]
    if best.name == 'combined' or not best.addresses or 2 * best.fits <= len(lines):
        return None
    return best.name
