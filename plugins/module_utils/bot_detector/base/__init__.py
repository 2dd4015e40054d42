# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ground every stage stands on, and imports nothing of the others: the one exception
type and the exit statuses (errors.py), bytes and text (text.py), every console and activity
log line (messages.py: each stage speaks, so the words sit below all of them), and time:
the hour windows of rule 5.2, the activity log's date, durations, local time (clock.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
