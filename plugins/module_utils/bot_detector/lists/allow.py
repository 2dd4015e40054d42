# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exclusion list (allow-list) read for a decision, and what is said when it cannot be.

The spec's rules count a list they cannot read (a directory, a file the user may not read)
as empty, as the reference's failed grep does: kept, but said, by a warning on standard
error and the metric ``bot_detector_list_unreadable{list="exclusions"}`` (metrics.py).
The precise rules do not decide without their allow-list: the run ends with exit status 3.
A missing file, or the null device (/dev/null), is an empty list in both (the setting's help says so).
"""

from __future__ import absolute_import, division, print_function

from ..base import messages
from ..base.errors import BotDetectorError
from .content import parsed_list, read_list

__metaclass__ = type


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
        if not any(messages.EXCLUSIONS_UNREADABLE % exc.message == line for line in result.warnings):
            result.warn(messages.EXCLUSIONS_UNREADABLE % exc.message)
        return b'' if parse is None else parse(b'')
    result.unreadable_lists.pop('exclusions', None)
    return content
