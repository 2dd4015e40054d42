# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A log read as combined whose first lines mostly are not: which ``log_format`` would read
it. The run warns (standard error); its standard output stays the reference's, whose
``Skipping {"time_local": ...`` lines are all a JSON log read as combined would say."""

from __future__ import absolute_import, division, print_function

from .choice import _looks_combined, format_tests, head_of

__metaclass__ = type

LINES = 20      # the first whole lines looked at, as auto does


def not_combined(path):
    """The format most of the first whole lines of ``path`` parse as, when most are not combined;
    else None (combined, or lines no format reads: a timestamp spelled otherwise, which the
    reference reads all the same, is no reason to warn)."""
    head = head_of(path)
    lines = [line for line in head.split(b'\n')[:-1] if line.strip()][:LINES]
    if not lines or 2 * sum(1 for line in lines if _looks_combined(line)) > len(lines):
        return None
    if any(line.startswith(b'#Fields:') for line in lines):
        return 'w3c'
    fitting, name = max((sum(1 for line in lines if test(line)), name) for name, test in format_tests() if name != 'combined')
    return name if 2 * fitting > len(lines) else None
