# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hours and dates: the windows of rule 5.2 and the activity log's date."""

from __future__ import absolute_import, division, print_function

import time

from .errors import BotDetectorError, bad_option

__metaclass__ = type

# English names whatever the locale: the hour stamp is what the access log holds.
MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')


class Window:
    """One hourly window: its name, console heading and hour stamp (bytes)."""

    def __init__(self, name, heading, stamp):
        self.name = name
        self.heading = heading
        self.stamp = stamp


def parse_now(text):
    """'YYYY-MM-DD HH:MM:SS' in local time, or '@SECONDS' since the epoch (as ``date -d``
    takes it; unambiguous in a DST night) -> seconds since the epoch."""
    try:
        if text.startswith('@') and text[1:].isdigit():
            return float(text[1:])
        return time.mktime(time.strptime(text, '%Y-%m-%d %H:%M:%S'))
    except (ValueError, OverflowError):
        raise bad_option("now must be 'YYYY-MM-DD HH:MM:SS' or '@SECONDS', got %r" % (text,))


def hour_stamp(epoch):
    """``date -d @epoch +%d/%b/%Y:%H`` with English month names, in local time."""
    t = time.localtime(epoch)
    return '%02d/%s/%04d:%02d' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour)


def date_default_format(epoch=None):
    """What ``date`` prints in its default format, in this process's locale and zone (the
    spec's activity-log date): 'Sat Nov 21 04:13:43 UTC 2026' under the C locale,
    'Sa 21. Nov 04:13:43 UTC 2026' under de_DE.UTF-8. It is ``date`` itself that prints it
    (``date -d @EPOCH`` for another moment than now): each locale has its own format."""
    import subprocess
    args = ['date'] if epoch is None else ['date', '-d', '@%d' % int(epoch)]
    try:
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('cannot take the date for the activity log: date: %s' % exc)
    if proc.returncode != 0 or not proc.stdout.strip():
        detail = proc.stderr.decode('utf-8', 'replace').strip() or 'exit status %d' % proc.returncode
        raise BotDetectorError('cannot take the date for the activity log: date: %s' % detail)
    return proc.stdout.rstrip(b'\n').decode('utf-8', 'surrogateescape')


def hour_windows(now):
    """The previous hour, then the current hour. '1 hour ago' is 3600 s earlier, as in GNU date."""
    from .messages import HEADINGS
    return [
        Window('previous', HEADINGS['previous'], hour_stamp(now - 3600).encode('ascii')),
        Window('current', HEADINGS['current'], hour_stamp(now).encode('ascii')),
    ]


def window_start(epoch):
    """The start of the local clock hour holding ``epoch``."""
    t = time.localtime(epoch)
    return int(epoch) - t.tm_min * 60 - t.tm_sec
