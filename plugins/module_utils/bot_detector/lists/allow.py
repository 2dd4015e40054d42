# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exclusion list (allow-list) read for a decision, and what is said when it cannot be.

The spec's rules count a list they cannot read (a directory, a file the user may not read)
as empty, as the reference's failed grep does (a device or a FIFO too, where the reference's
grep never ends, and the warning says so): kept, but said, by a warning on standard
error and the metric ``bot_detector_list_unreadable{list="exclusions"}`` (metrics.py).
The precise rules do not decide without their allow-list: the run ends with exit status 3.
A missing file, or the null device (/dev/null), is an empty list in both (the setting's help says so).
"""

from __future__ import absolute_import, division, print_function

import os
import stat

from ..base import messages
from ..base.errors import BotDetectorError
from .content import parsed_list, read_list

__metaclass__ = type


def _endless(path):
    """Whether ``path`` is a device or a FIFO: what the reference's grep reads without end
    (/dev/zero), or waits on (a FIFO), where a directory or an unreadable file fails at once."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


def read_exclusions(settings, result, parse=None):
    """The exclusion list's content, or with ``parse`` what parse made of it (made once while
    the file stays the same: content.parsed_list); an unreadable one is empty and a warning
    (spec rules) or a BotDetectorError, exit status 3 (precise rules). ``result.unreadable_lists``
    records it."""
    if result.unreadable_lists is None:
        result.unreadable_lists = {}
    try:
        if parse is None:
            content = read_list(settings.exclusions_file, strict=True)
        else:
            content = parsed_list(settings.exclusions_file, parse, strict=True)
    except BotDetectorError as exc:     # 'cannot read <path>: <reason>'
        result.unreadable_lists['exclusions'] = exc.message
        if settings.rules == 'precise':
            raise BotDetectorError(messages.EXCLUSIONS_REQUIRED % exc.message)
        line = (messages.EXCLUSIONS_ENDLESS if _endless(settings.exclusions_file) else messages.EXCLUSIONS_UNREADABLE) % exc.message
        if line not in result.warnings:
            result.warn(line)
        return b'' if parse is None else parse(b'')
    result.unreadable_lists.pop('exclusions', None)
    return content
