# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operators' lists: the blocklist, the exclusion list and the activity log. The lock
and the appends (writer.py, rule 5.8), reading a list (content.py), removing lines
(removal.py: unblock and expiry, through replace.py's atomic replace), the activity log
read back (history.py) and ban expiry (expiry.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
