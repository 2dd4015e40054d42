# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hours, dates and durations: the windows of rule 5.2, the activity log's date (written
and read back), the durations of ban expiry, and instants as the combined format's local
time text (LocalTime: the other formats' twins, as nginx writes $time_local)."""

from __future__ import absolute_import, division, print_function

import os
import re
import time

from .errors import BotDetectorError, bad_option
from .messages import HEADINGS

__metaclass__ = type

# English names whatever the locale: the hour stamp is what the access log holds.
MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')
# Durations: whole seconds, or a number with a unit, or several ('1d12h'). This pattern and the
# next two are compiled at their first use (re's cache): most runs use none of them.
DURATION_UNITS = (('d', 86400), ('h', 3600), ('m', 60), ('s', 1))
_DURATION_PART = r'(\d+)([wdhms])'
_DURATION_SECONDS = dict(DURATION_UNITS + (('w', 604800),))
# Reading the activity log's dates back (DateReader): a clock time, 04:13:43; a year, 1970 on.
_CLOCK = br'(?<!\d)(\d{1,2})([:.])(\d{2})\2(\d{2})(?!\d)'
_YEAR = br'(?<!\d)(19[7-9]\d|2\d{3})(?!\d)'
_UTC_NAMES = (b'UTC', b'GMT')


# The combined format's local time, 21/Nov/2026:04:13:43 +0000 (a pattern: formats' bytes too);
# ISO-8601 with an optional fraction and zone; a month's number by its name.
CLF_TIME = r'\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [-+]\d{4}'
_CLF_TIME = re.compile(CLF_TIME + '$')
_ISO = re.compile(r'(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?(Z|[+-]\d{2}:?\d{2})?$')
_MONTH_NUMBER = dict((m, i + 1) for i, m in enumerate(MONTHS))


def utc_seconds(year, month, day, hour, minute, second):
    """calendar.timegm of these fields (the proleptic Gregorian calendar; a day past the
    month's end runs on into the next), by arithmetic: calendar's import costs every run
    more than this, and it refuses year 0."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468
    return ((days * 24 + hour) * 60 + minute) * 60 + second


def _offset(t):
    return t.tm_gmtoff if hasattr(t, 'tm_gmtoff') else -time.timezone


def _cut(offset):
    """A UTC offset in seconds cut to whole minutes towards zero, as nginx (C's division) does."""
    return -(-offset // 60) * 60 if offset < 0 else offset // 60 * 60


def _zone_text(offset):
    """A UTC offset as the combined format writes it: +0100 (its seconds cut, as nginx does)."""
    offset = _cut(offset)
    return '%s%02d%02d' % ('-' if offset < 0 else '+', abs(offset) // 3600, abs(offset) % 3600 // 60)


def _clf_text(year, month, day, hour, minute, second, offset):
    """A clock and its UTC offset as the combined format writes them: 21/Nov/2026:05:13:43 +0100."""
    return '%02d/%s/%04d:%02d:%02d:%02d %s' % (day, MONTHS[month - 1], year, hour, minute, second, _zone_text(offset))


def _local_text(t):
    """The combined format's text of local time ``t``, as nginx writes its $time_local."""
    return _clf_text(t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, _offset(t))


def _minute_text(minute):
    """The local text of the UTC minute ``minute`` (epoch seconds // 60), its second left to
    fill in ('%02d'), where its clock reads :00 at its first second and :59 at its last on one
    local minute and offset; else '' (an offset with seconds, a POSIX TZ such as XXX-0:07:30 or
    an old date's local mean time; a change of offset within the minute; a zone counting leap
    seconds): each second is read on its own."""
    first, last = time.localtime(minute * 60), time.localtime(minute * 60 + 59)
    if first.tm_sec != 0 or last.tm_sec != 59 or first[:5] != last[:5] or _offset(first) != _offset(last):
        return ''
    text = _local_text(first)
    return text[:18] + '%02d' + text[20:]


class LocalTime:
    """Instants as the combined format's local time text, 21/Nov/2026:05:13:43 +0100, as nginx
    writes its $time_local: cached per minute where its clock runs with UTC's seconds."""

    def __init__(self):
        self.minutes = {}
        self.iso = {}

    def epoch(self, seconds):
        seconds = int(seconds)
        minute = seconds // 60
        text = self.minutes.get(minute)
        if text is None:
            if len(self.minutes) > 4096:
                self.minutes.clear()
            text = self.minutes[minute] = _minute_text(minute)
        return text % (seconds % 60) if text else _local_text(time.localtime(seconds))

    def iso8601(self, text):
        """'2026-11-21T04:13:43+00:00' (or Z, or a fraction): its local text; None without
        a zone (it cannot be placed in time) or when it is no time."""
        if not isinstance(text, str):
            return None
        match = _ISO.match(text)
        if match is None or match.group(7) is None:
            return None
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        zone = match.group(7)
        offset = 0 if zone == 'Z' else (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60) * (-1 if zone[0] == '-' else 1)
        if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second <= 60):
            return None
        at = utc_seconds(year, month, day, hour, minute, second) - offset
        local = _offset(time.localtime(at))
        if zone != 'Z' and local % 60 and _cut(local) == offset and second < 60:
            # This host's local clock, its offset (which has seconds) cut to whole minutes as nginx
            # (C's division) and Go write it: not quite the instant it names; its twin has the same
            # clock and zone.
            return _clf_text(year, month, day, hour, minute, second, offset)
        return self.epoch(at)

    def clf(self, text):
        """A time already in the combined format's form (nginx's $time_local)."""
        return text if isinstance(text, str) and _CLF_TIME.match(text) else None

    def utc_fields(self, year, month, day, hour, minute, second):
        return self.epoch(utc_seconds(year, month, day, hour, minute, second))

    def local_fields(self, day, month, year, clock):
        """A time without a zone, in this host's local time (HAProxy's): the zone added."""
        key = (day, month, year, clock[:2])
        zone = self.iso.get(key)
        if zone is None:
            t = time.localtime(time.mktime((int(year), _MONTH_NUMBER.get(month, 1), int(day), int(clock[:2]), 0, 0, 0, 1, -1)))
            zone = self.iso[key] = _zone_text(_offset(t))
        return '%s/%s/%s:%s %s' % (day, month, year, clock, zone)


class Window:
    """One hourly window: its name, console heading, hour stamp (bytes) and start (seconds since
    the epoch: the fleet store's key, the same in every zone and apart in a DST night)."""

    def __init__(self, name, heading, stamp, start=None):
        self.name = name
        self.heading = heading
        self.stamp = stamp
        self.start = start


def parse_now(text):
    """'YYYY-MM-DD HH:MM:SS' in local time, or '@SECONDS' since the epoch (as ``date -d``
    takes it; unambiguous in a DST night) -> seconds since the epoch.

    The canonical form with valid fields is read directly; anything else goes through
    time.strptime (whose import costs a replayed run more than its counting of ten
    minutes of log), which then accepts or rejects it as it always has."""
    fields = _canonical_fields(text)
    try:
        if text.startswith('@') and text[1:].isdigit():
            return float(text[1:])
        if fields is not None:
            return time.mktime(fields + (0, 1, -1))
        return time.mktime(time.strptime(text, '%Y-%m-%d %H:%M:%S'))
    except (ValueError, OverflowError):
        raise bad_option("now must be 'YYYY-MM-DD HH:MM:SS' or '@SECONDS', got %r" % (text,))


def _canonical_fields(text):
    """(year, month, day, hour, minute, second) of 'YYYY-MM-DD HH:MM:SS' when every field
    is in the range strptime accepts, else None."""
    if len(text) != 19 or text[4] != '-' or text[7] != '-' or text[10] != ' ' or text[13] != ':' or text[16] != ':':
        return None
    parts = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    if not all(part.isdigit() and part.isascii() for part in parts):
        return None
    year, month, day, hour, minute, second = [int(part) for part in parts]
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not (1900 <= year and 1 <= month <= 12 and 1 <= day <= days[month - 1] and hour <= 23 and minute <= 59 and second <= 61):
        return None
    return (year, month, day, hour, minute, second)


def hour_stamp(epoch):
    """``date -d @epoch +%d/%b/%Y:%H`` with English month names, in local time."""
    t = time.localtime(epoch)
    return '%02d/%s/%04d:%02d' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour)


def date_default_format(epoch=None):
    """What ``date`` prints in its default format, in this process's locale and zone (the
    spec's activity-log date): 'Sat Nov 21 04:13:43 UTC 2026' under the C locale,
    'Sa 21. Nov 04:13:43 UTC 2026' under de_DE.UTF-8. It is ``date`` itself that prints it
    (``date -d @EPOCH`` for another moment than now): each locale has its own format.
    Under the C locale (cron's, when nothing sets one), whose format glibc fixes, it is
    written here, as ``date`` would: a process less for every address blocked."""
    if _time_locale(os.environ) in ('C', 'POSIX'):
        # time.time(), the clock ``date`` reads: localtime() alone reads a coarser one, which
        # can still show the last second for a few milliseconds after the next began.
        return time.strftime(C_DATE_FORMAT, time.localtime(time.time() if epoch is None else epoch))
    # What ``date`` prints depends on the second, the zone and the locale.
    key = (int(time.time()),) + tuple(os.environ.get(name) for name in _DATE_ENVIRONMENT) if epoch is None else None
    if key in _DATES:
        return _DATES[key]
    import subprocess       # date(1) only: not under the C locale
    args = ['date'] if epoch is None else ['date', '-d', '@%d' % int(epoch)]
    try:
        # The core is also the host command, run without Ansible: no AnsibleModule.run_command.
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BotDetectorError('cannot take the date for the activity log: date: %s' % exc)
    if proc.returncode != 0 or not proc.stdout.strip():
        detail = proc.stderr.decode('utf-8', 'replace').strip() or 'exit status %d' % proc.returncode
        raise BotDetectorError('cannot take the date for the activity log: date: %s' % detail)
    text = proc.stdout.rstrip(b'\n').decode('utf-8', 'surrogateescape')
    if key is not None and int(time.time()) == key[0]:
        _DATES[key] = text          # ``date`` ran within this second: it printed this second
    return text


def _time_locale(environment):
    """The locale of dates (LC_TIME) the environment gives a program: LC_ALL, LC_TIME or
    LANG, the first set and not empty; the C locale without them."""
    for name in ('LC_ALL', 'LC_TIME', 'LANG'):
        if environment.get(name):
            return environment[name]
    return 'C'


# ``date``'s format under the C locale (nl_langinfo(_DATE_FMT) there), fixed by glibc.
C_DATE_FORMAT = '%a %b %e %H:%M:%S %Z %Y'

# What ``date`` printed in a second of this process: the next block in the same second,
# zone and locale would print the same text, without a process of its own.
_DATES = {}
_DATE_ENVIRONMENT = ('TZ', 'LC_ALL', 'LC_TIME', 'LANG', 'LANGUAGE')


class DateReader:
    """Reads back the dates ``date`` wrote in the activity log (date_default_format): the
    seconds since the epoch, or None.

    Each locale has its own default format, so none is assumed: ``date`` itself renders
    every day of the year in question (at 06:00 and 18:00, which tells a 12-hour clock),
    in the run's own locale and in the C locale, and a date is read only when it is one of
    those renderings, its clock time and zone aside. The zone must be this host's (either
    abbreviation, which tells the two readings of a fall-back hour apart) or UTC/GMT. A
    date written in another locale or zone (the locale changed since), or anything else,
    is None: ban expiry keeps such an entry rather than guess."""

    def __init__(self, environments=None):
        self.environments = environments or [dict(os.environ), dict(os.environ, LC_ALL='C')]
        names = [name.encode('ascii', 'replace') for name in time.tzname]
        self.zones = names + [name for name in _UTC_NAMES if name not in names]
        longest_first = sorted(set(self.zones), key=len, reverse=True)
        self._zone = re.compile(b'(?<![A-Za-z])(' + b'|'.join(re.escape(name) for name in longest_first) + b')(?![A-Za-z])')
        self._years = {}        # year -> {masked rendering: (month, day, half)}; half: None (24-hour), 'am', 'pm'
        self._read = {}         # date text -> epoch or None

    def epoch(self, text):
        if text not in self._read:      # a run's lines share their dates: each is read once
            self._read[text] = self._epoch(text)
        return self._read[text]

    def _epoch(self, text):
        masked = self._masked(text.strip())
        if masked is None:
            return None
        key, clock, zone = masked
        years = set(re.findall(_YEAR, key))
        if len(years) != 1:
            return None
        year = int(years.pop())
        found = self._days(year).get(key)
        if found is None:
            return None
        month, day, half = found
        hour, minute, second = int(clock.group(1)), int(clock.group(3)), int(clock.group(4))
        if half is not None:
            if not 1 <= hour <= 12:
                return None
            hour = hour % 12 + (12 if half == 'pm' else 0)
        if hour > 23 or minute > 59 or second > 60:
            return None
        fields = (year, month, day, hour, minute, second)
        try:
            if zone in _UTC_NAMES and zone not in self.zones[:2]:
                import calendar     # a UTC date read back only (calendar loads datetime and locale)
                return calendar.timegm(fields + (0, 0, 0))
            standard, summer = self.zones[:2]
            dst = -1 if standard == summer else (1 if zone == summer else 0)
            return int(time.mktime(fields + (0, 0, dst)))
        except (ValueError, OverflowError):
            return None

    def _masked(self, text):
        """``text`` with its clock time and zone replaced by markers, and both; None unless it
        holds exactly one of each."""
        clocks = list(re.finditer(_CLOCK, text))
        if len(clocks) != 1:
            return None
        clock = clocks[0]
        rest = text[:clock.start()] + b'\x00' + text[clock.end():]
        zones = list(self._zone.finditer(rest))
        if len(zones) != 1:
            return None
        zone = zones[0]
        return rest[:zone.start()] + b'\x01' + rest[zone.end():], clock, zone.group(1)

    def _days(self, year):
        """Every day of ``year`` as ``date`` renders it, masked, in each environment (one
        ``date -f -`` each): {masked rendering: (month, day, half)}. A rendering that two
        days share (no locale does that) reads as none of them."""
        if year in self._years:
            return self._years[year]
        import subprocess       # date(1): a locale whose format must be learnt only
        days = []
        for month in range(1, 13):
            for day in range(1, 32):
                if day > 28 and time.localtime(time.mktime((year, month, day, 12, 0, 0, 0, 0, -1))).tm_mon != month:
                    break
                days += [(month, day, 6), (month, day, 18)]
        epochs = b''.join(b'@%d\n' % int(time.mktime((year, month, day, hour, 0, 0, 0, 0, -1)))
                          for month, day, hour in days)
        table = {}
        for environment in self.environments:
            try:
                proc = subprocess.run(['date', '-f', '-'], input=epochs,  # pylint: disable=ansible-bad-function
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, timeout=30, check=False)
            except (OSError, subprocess.SubprocessError):
                continue
            lines = proc.stdout.split(b'\n')[:len(days)]
            if proc.returncode != 0 or len(lines) != len(days):
                continue
            masked = [self._masked(line.strip()) for line in lines]
            if masked[1] is None:
                continue
            twelve = int(masked[1][1].group(1)) == 6        # 18:00 shown as 6: a 12-hour clock
            for (month, day, hour), found in zip(days, masked):
                if found is not None:
                    value = (month, day, ('am' if hour < 12 else 'pm') if twelve else None)
                    table[found[0]] = value if table.get(found[0], value) == value else None
        self._years[year] = table
        return table


def hour_windows(now):
    """The previous hour, then the current hour. '1 hour ago' is 3600 s earlier, as in GNU date."""
    return [
        Window('previous', HEADINGS['previous'], hour_stamp(now - 3600).encode('ascii'), window_start(now - 3600)),
        Window('current', HEADINGS['current'], hour_stamp(now).encode('ascii'), window_start(now)),
    ]


def stamp_holds_another_hour(window, windows):
    """Whether ``window``'s hour stamp, by which its lines are counted, names another hour too
    whose lines may be in its counts: the clock went back (a DST night: 02:00 twice) and the
    stamp's other hour has begun (another of ``windows`` has the stamp, or the hour before the
    window's start has). The fleet store keeps the hours apart, by their starts: such counts are
    never pushed as one hour's."""
    return window.start is not None and (hour_stamp(window.start - 3600).encode('ascii') == window.stamp
                                         or sum(1 for other in windows if other.stamp == window.stamp) > 1)


def window_start(epoch):
    """The start of the local clock hour holding ``epoch``."""
    t = time.localtime(epoch)
    return int(epoch) - t.tm_min * 60 - t.tm_sec


def parse_duration(text, where):
    """Seconds of a duration: '3600', '90m', '12h', '7d', '2w', '1d12h'."""
    compact = text.strip().lower()
    if compact.isdigit():
        return int(compact, 10)
    parts = re.findall(_DURATION_PART, compact)
    if not compact or ''.join(n + u for n, u in parts) != compact:
        raise bad_option('%s: must be a duration (seconds, or a number with a unit s, m, h, d or w: '
                         '90m, 12h, 7d), got %r' % (where, text))
    return sum(int(n, 10) * _DURATION_SECONDS[u] for n, u in parts)


def format_duration(seconds):
    """The shortest text ``parse_duration`` reads back as ``seconds``: 5400 -> '90m', 86400 -> '1d'."""
    for unit, size in DURATION_UNITS:
        if seconds % size == 0:
            return '%d%s' % (seconds // size, unit)
    return '%ds' % seconds
