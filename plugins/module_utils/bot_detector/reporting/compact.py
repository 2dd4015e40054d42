# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A window's counts as the modules return them to a fleet run: one text, not thousands of values."""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type


def compact_counts(counts):
    """One window's {key: count} as one text, a line '<count> <key>' each (a record's form,
    as ``uniq -c`` prints it): one value for Ansible to carry instead of thousands. Keys
    hold no blank (a log's first field) and no newline."""
    return ''.join('%d %s\n' % (count, key) for key, count in counts.items())


_COMPACT_LINE = re.compile(r'^([0-9]+) ([^\n]+)$', re.M)


def parse_compact_counts(text):
    """compact_counts' text back to {key: count}; ValueError naming the first bad line."""
    pairs = _COMPACT_LINE.findall(text)
    if len(pairs) != text.count('\n') or not (text.endswith('\n') or not text):
        for line in text.split('\n')[:-1] if text.endswith('\n') else text.split('\n'):
            if not _COMPACT_LINE.match(line):
                raise ValueError('not a line <count> <key>: %r' % line)
    return dict((key, int(count)) for count, key in pairs)
