"""A faked wall clock for the processes a test starts: libfaketime (Debian's faketime package)
preloaded into them, so the command's Python (time.time()), the date(1) it runs and any other
child read the same faked clock, ticking on from the instant the test chose.

The faked instants (NOWS) are every day of a month, at hours spread over the day, and the
nights Europe/Berlin's clocks change: a test of what depends on today's date runs on each, so
it holds on any day (the 1st to the 9th print a one-digit day, the 31st has no next day in
some months, a DST night repeats or skips an hour).

The clock is given to libfaketime as an offset from the real one (FAKETIME='+N' seconds): every
process started with the same environment reads the same faked time, whenever it starts. Its
monotonic clock is faked along (libfaketime's default): sleeping under a faked realtime clock
and a real monotonic one fails with EINVAL."""
import calendar
import glob
import os
import re
import time

# Debian's libfaketime, in the multiarch directory (x86_64-linux-gnu, aarch64-linux-gnu, ...).
LIBRARY_PATTERN = '/usr/lib/*/faketime/libfaketime.so.1'


def _utc(year, month, day, hour, minute, second):
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))


def _days_of_a_month():
    """Each day of December 2026 (UTC), its hour and minute stepping through the day: 00:00:05 on
    the 1st, 23:59:50 on the 31st (UTC's year ends within the test)."""
    nows = []
    for day in range(1, 32):
        hour, minute = (day * 7) % 24, (day * 13) % 60
        nows.append(('2026-12-%02d' % day, _utc(2026, 12, day, hour, minute, 5)))
    nows[0] = ('2026-12-01', _utc(2026, 12, 1, 0, 0, 5))
    nows[-1] = ('2026-12-31', _utc(2026, 12, 31, 23, 59, 50))
    return nows


NOWS = _days_of_a_month() + [
    # Europe/Berlin's DST nights of 2026: seconds before the skipped hour (01:59:55 CET on 29 March),
    # and inside the repeated one (02:30 CEST, then 02:30 CET, on 25 October).
    ('dst-spring-berlin', 1774745995),
    ('dst-fall-berlin-cest', 1792888200),
    ('dst-fall-berlin-cet', 1792891800),
]
NOW_IDS = [name for name, epoch in NOWS]
NOW_EPOCHS = [epoch for name, epoch in NOWS]


def library():
    """libfaketime's path; under CI=true its absence fails the test, else skips it."""
    found = sorted(glob.glob(LIBRARY_PATTERN))
    if not found:
        message = 'libfaketime is missing (%s): tests/tools/install-prereqs.sh installs Debian\'s faketime' % LIBRARY_PATTERN
        import pytest       # here: the benchmarks import this module without pytest
        if os.environ.get('CI') == 'true':
            pytest.fail(message)
        pytest.skip(message)
    return found[0]


def _real_time():
    """The real clock, also in a process on a faked one already (tests/tools/on-faked-days.sh)."""
    outer = os.environ.get('FAKETIME', '')
    if 'faketime' in os.environ.get('LD_PRELOAD', '') and re.match(r'^[-+]\d+$', outer):
        return time.time() - int(outer)
    return time.time()


class FakeClock:
    """A wall clock reading ``epoch`` now and ticking on; ``env(base)`` is the environment that
    puts a process on it, ``now()`` what it reads at this moment, ``advance(seconds)`` moves it."""

    def __init__(self, epoch):
        self.library = library()
        self.offset = int(epoch) - int(_real_time())

    def now(self):
        return _real_time() + self.offset

    def advance(self, seconds):
        self.offset += int(seconds)

    def env(self, base=None):
        env = dict(os.environ if base is None else base)
        preload = [self.library] + [p for p in env.get('LD_PRELOAD', '').split() if p and p != self.library]
        env.update(LD_PRELOAD=' '.join(preload), FAKETIME='%+d' % self.offset)
        return env
