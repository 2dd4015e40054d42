# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core's one exception type and the command's exit statuses."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Exit statuses of the command. 1 is the spec's; the others are ours.
EXIT_OK = 0
EXIT_SPEC_ERROR = 1     # no argument, log missing or not readable (docs/contract.md)
EXIT_BAD_OPTION = 2     # a bad option, option value or config file; nothing was read or written
EXIT_RUN_FAILED = 3     # the run failed part-way: host address or date query, lock, read or append
EXIT_ENFORCEMENT_FAILED = 4     # the run did its work, but the enforcement point is not equal to the blocklist


class BotDetectorError(Exception):
    """A failure that ends the run; ``exit_status`` is the command's exit code."""

    def __init__(self, message, exit_status=EXIT_RUN_FAILED):
        super(BotDetectorError, self).__init__(message)
        self.message = message
        self.exit_status = exit_status


def bad_option(message):
    """The error for a value the run cannot mean: exit 2, before anything is read or written."""
    return BotDetectorError(message, EXIT_BAD_OPTION)


class Interrupted(Exception):
    """A long read given up at its caller's word (a follower's SIGTERM in a NUL run,
    reading/holes.py): nothing of that line counted; ``position``, where set
    (chunks.count_range), is its start: the lines before it are counted."""
    position = None
