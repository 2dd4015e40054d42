# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every line the detector prints or logs, declared once. The spec's texts are exact,
"addess" included."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

USAGE_LINES = (
    'Path to log file missing.',
    'Usage: bot-detector.sh <logfile>',
    '    bot-detector.sh /var/log/nginx/access.log',
)
NOT_READABLE = 'File not found or not readable: %s'
NOT_REGULAR = 'Not a regular file: %s'

HEADINGS = {'previous': 'Checking the previous hour...', 'current': 'Checking the current hour...'}
ALREADY_BLOCKED = 'IP address %s is already blocked.'
ALLOW_LISTED = 'IP address %s is allow-listed and will not be blocked.'
INVALID = 'Skipping %s (%d requests): not an IP address.'
EXECUTION_TIME = 'Execution time: %d seconds'

# Warnings (standard error, the module's warnings): the run goes on.
ROTATED_LEFT_OUT = '%s; the run goes on without this rotated file'

# The activity log line of an addition; a note marks a decision not taken by this host's
# own count: 'RPH=3000 (fleet)'.
ACTIVITY_ADDED = '%(date)s | IP addess %(address)s added to the block list, RPH=%(count)d%(note)s'
ACTIVITY_ADDED_PATTERN = br' \| IP addess (\S+) added to the block list, RPH=(\d+)(?: \((\w+)\))?$'


def blocking(address, count, check_mode=False, note=None):
    """'Blocking IP address: <ip> (<count> requests)', the spec's line; check mode says 'Would block'."""
    return '%s IP address: %s (%d requests%s)' % (
        'Would block' if check_mode else 'Blocking', address, count, ', %s' % note if note else '')


def activity_added(date, address, count, note=None):
    return ACTIVITY_ADDED % {'date': date, 'address': address, 'count': count,
                             'note': ' (%s)' % note if note else ''}
