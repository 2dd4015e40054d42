"""The seek must never change which lines count (issue 10, findings 1 to 4).

The windows match hour-stamp TEXT (spec rule 5.3.1), so across a DST night, in a log
stamped in another zone, after a clock step or with a block of lines written out of
place, the seek must count what the full scan and the reference count. Logs are generated
in real time order and stamped by a clock that may be wrong; the reference pipeline is the
oracle."""
import json
import random
import time

import pytest
from hypothesis import Phase, given, settings, strategies as st

import loggen
from conftest import Files, in_timezone, run_core, run_reference

DST_ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe']
MARGIN = 600


def transitions(tz, year=2026):
    """[(epoch, 'fall-back' | 'spring-forward')] of ``tz`` in ``year``: the first second
    of each new UTC offset."""
    def find():
        start = int(time.mktime((year, 1, 1, 0, 0, 0, 0, 0, -1)))
        found = []
        for epoch in range(start, start + 366 * 86400, 1800):
            before, after = time.localtime(epoch).tm_gmtoff, time.localtime(epoch + 1800).tm_gmtoff
            if before != after:
                low, high = epoch, epoch + 1800          # offset(low) == before, offset(high) == after
                while high - low > 1:
                    middle = (low + high) // 2
                    if time.localtime(middle).tm_gmtoff == before:
                        low = middle
                    else:
                        high = middle
                found.append((high, 'fall-back' if after < before else 'spring-forward'))
        return found
    return in_timezone(tz, find)


def local_text(epoch, tz):
    return in_timezone(tz, lambda: time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(epoch)))


def ambiguous(epoch, tz):
    """True when the local clock text of ``epoch`` names two instants (a fall-back hour):
    ``--now`` could then mean either, so the tests avoid it."""
    text = local_text(epoch, tz)
    return any(local_text(epoch + shift, tz) == text for shift in (-3600, -1800, 1800, 3600))


class Log:
    """Requests in real time order, each stamped by a clock that is ``error(real)`` seconds
    off, rendered in the time zone ``zone``."""

    def __init__(self, seed, zone):
        self.rng = random.Random(seed)
        self.zone = zone
        self.requests = []          # (real epoch, address, path)

    def add(self, address, start, end, count, prefix='/job/'):
        rng = self.rng
        for dummy in range(count):
            self.requests.append((rng.uniform(start, end), address, prefix + str(rng.randint(1, 99999))))

    def background(self, start, end, count):
        rng = self.rng
        for dummy in range(count):
            address = '198.51.%d.%d' % (rng.randrange(100), rng.randrange(1, 255))
            path = rng.choice(loggen.JOB_PATHS + loggen.OTHER_PATHS) + str(rng.randint(1, 9999))
            self.requests.append((rng.uniform(start, end), address, path))

    def render(self, error=lambda real: 0, jitter=0):
        """Bytes of the log: sorted by real time (plus up to ``jitter`` seconds of
        disorder), stamped ``real + error(real)``."""
        rng = self.rng
        ordered = sorted(self.requests, key=lambda r: r[0] + (rng.uniform(0, jitter) if jitter else 0))
        self.times = [real for real, dummy, dummy in ordered]

        def build():
            return [loggen.line(address, int(real + error(real)), path=path) for real, address, path in ordered]
        return in_timezone(self.zone, build)


def run_three(tmp_path, data, now_text, tz):
    """The command with the seek, with --full-scan, and the reference, on the same log.
    Returns (seek JSON, full JSON, reference CompletedProcess, three blocklists)."""
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(data) if isinstance(data, list) else data)
    docs, blocklists = [], []
    for name, extra in (('seek', []), ('full', ['--full-scan'])):
        files = Files(tmp_path / name)
        proc = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', now_text, '--json'] + extra + [log], tz=tz)
        assert proc.returncode == 0, proc.stderr
        docs.append(json.loads(proc.stdout))
        blocklists.append(files.read('blocklist'))
    ref_files = Files(tmp_path / 'reference')
    ref = run_reference(log, ref_files.blocklist, ref_files.exclusions, ref_files.activity_log, ['10.0.0.5'], now_text, tz=tz)
    assert ref.returncode == 0, ref.stderr
    blocklists.append(ref_files.read('blocklist'))
    return docs[0], docs[1], ref, blocklists, log


def assert_same(seek, full, ref, blocklists):
    assert seek['windows'] == full['windows']
    assert seek['messages'][:-1] == full['messages'][:-1] == ref.stdout.decode().splitlines()[:-1]
    assert blocklists[0] == blocklists[1] == blocklists[2]


@pytest.mark.parametrize('tz', DST_ZONES)
def test_fall_back_hour_is_counted_twice_as_the_text_says(tmp_path, tz):
    """Finding 1: the first of the two hours with the same text holds 1200 requests; the
    run an hour after the change matches that text and must count them."""
    change = [epoch for epoch, kind in transitions(tz) if kind == 'fall-back'][0]
    now = change + 70 * 60
    assert not ambiguous(now, tz)
    log = Log(1, tz)
    log.background(change - 20 * 3600, change + 1800, 2000)
    log.add('203.0.113.7', change - 3600, change - 2700, 1200)    # the first of the repeated hours
    seek, full, ref, blocklists, dummy = run_three(tmp_path, log.render(), local_text(now, tz), tz)
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in ref.stdout
    assert_same(seek, full, ref, blocklists)
    assert seek['scans'][0]['mode'] == 'seek' and seek['scans'][0]['start'] > 0


def test_log_stamped_in_utc_read_on_a_berlin_host(tmp_path):
    """Finding 2: the window's text '25/Oct/2026:02' is 02:xx UTC in this log."""
    change = [epoch for epoch, kind in transitions('Europe/Berlin') if kind == 'fall-back'][0]
    now = change + 70 * 60
    log = Log(2, 'UTC')
    log.background(change - 20 * 3600, now, 6000)
    log.add('203.0.113.7', change + 3600, now, 1100)
    seek, full, ref, blocklists, dummy = run_three(tmp_path, log.render(), local_text(now, 'Europe/Berlin'), 'Europe/Berlin')
    assert b'Blocking IP address: 203.0.113.7 (1100 requests)' in ref.stdout
    assert_same(seek, full, ref, blocklists)


def test_clock_stepped_back_two_hours(tmp_path):
    """Finding 3: the clock ran two hours ahead and was stepped back 2.5 hours before the
    run; the lines stamped 10:xx before the step count in the 10:xx window too. A 3-day
    log: the lines after the step that are older than those before it fit between two
    evenly spread probes."""
    now = 1795259623                                   # 2026-11-21 11:13:43 UTC
    step = now - 150 * 60                              # 08:43:43 real, 10:43:43 on the clock
    log = Log(3, 'UTC')
    log.background(now - 72 * 3600, now, 20000)
    log.add('203.0.113.7', step - 1800, step, 150)     # stamped 10:13-10:43
    log.add('203.0.113.7', now - 73 * 60, now - 14 * 60, 950)   # stamped 10:00-10:59 after the step
    data = log.render(error=lambda real: 7200 if real < step else 0)
    seek, full, ref, blocklists, dummy = run_three(tmp_path, data, '2026-11-21 11:13:43', 'UTC')
    assert b'Blocking IP address: 203.0.113.7 (1100 requests)' in ref.stdout
    assert_same(seek, full, ref, blocklists)


def test_block_out_of_order_between_two_probes(tmp_path):
    """Finding 4: 1200 requests of the previous hour written at 29 % of a 20-hour log,
    where neither an evenly spread probe (every 1/32) nor the binary search looked."""
    now = 1795234423                                   # 2026-11-21 04:13:43 UTC
    log = Log(4, 'UTC')
    log.background(now - 20 * 3600, now - 3 * 3600, 40000)
    body = b''.join(log.render())
    late = b''.join(loggen.line('203.0.113.7', now - 3000 + i % 60, path='/job/%d' % i) for i in range(1200))
    cut = body.index(b'\n', int(len(body) * 0.29)) + 1
    seek, full, ref, blocklists, dummy = run_three(tmp_path, body[:cut] + late + body[cut:], '2026-11-21 04:13:43', 'UTC')
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in ref.stdout
    assert_same(seek, full, ref, blocklists)


# ---- properties: seek == full scan == reference over the class, not the examples

def night_log(seed, tz, log_zone, kind, minutes):
    """A log around a DST change of ``tz`` with heavy hitters over the last hours."""
    change = [epoch for epoch, k in transitions(tz) if k == kind][0]
    now = change + minutes * 60
    log = Log(seed, log_zone)
    rng = log.rng
    log.background(now - 30 * 3600, now, 5000)
    for i in range(4):
        span = rng.randint(3600, 3 * 3600)
        start = now - span if rng.random() < 0.7 else change - rng.randint(0, 3600)
        log.add('203.0.113.%d' % (i + 1), start, min(now, start + span), rng.randint(1100, 2600))
    return log, now


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 10 ** 6), tz=st.sampled_from(DST_ZONES), kind=st.sampled_from(['fall-back', 'spring-forward']),
       log_zone=st.sampled_from(['host', 'UTC', 'Asia/Kolkata', 'America/New_York']),
       minutes=st.integers(-90, 200), jitter=st.integers(0, MARGIN))
def test_seek_is_the_full_scan_across_dst_nights_and_zones(tmp_path_factory, seed, tz, kind, log_zone, minutes, jitter):
    log, now = night_log(seed, tz, tz if log_zone == 'host' else log_zone, kind, minutes)
    if ambiguous(now, tz):
        return
    lines = log.render(jitter=jitter)
    seek, full, ref, blocklists, path = run_three(tmp_path_factory.mktemp('dst'), lines, local_text(now, tz), tz)
    assert_same(seek, full, ref, blocklists)
    # In time order within the margin, the seek must really skip the old part (in a log
    # stamped in a zone hours away, the window's text is that many hours back).
    assert seek['scans'][0]['mode'] == 'seek'
    if log_zone == 'host':
        # The windows start less than two hours before now, an hour more with the DST
        # offset, the margin and a probe's spacing (16 KiB, about half an hour here).
        old = next(i for i, real in enumerate(log.times) if real >= now - 4.5 * 3600)
        assert seek['scans'][0]['start'] >= len(b''.join(lines[:old])) > 0


# Clock steps of at most the margin, or far more than margin plus the time between probes
# (docs/docsite/rst/guide_log_formats.rst: a step in between can hide the lines between the two probes around it).
STEPS = [60, 300, MARGIN, 1800, 3600, 2 * 3600, 5 * 3600]


@settings(max_examples=14, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 10 ** 6), tz=st.sampled_from(DST_ZONES + ['UTC']), kind=st.sampled_from(['fall-back', 'spring-forward']),
       minutes=st.integers(-90, 200), disorder=st.sampled_from(['step-back', 'step-forward', 'block']),
       step=st.sampled_from(STEPS), where=st.floats(0.0, 1.0))
def test_seek_is_the_full_scan_with_clock_steps_and_disorder_blocks(tmp_path_factory, seed, tz, kind, minutes, disorder, step, where):
    log, now = night_log(seed, 'Europe/Berlin' if tz == 'UTC' else tz, tz, kind, minutes)
    host = 'Europe/Berlin' if tz == 'UTC' else tz
    if ambiguous(now, host):
        return
    if disorder == 'block':
        # A run of 200 to 800 consecutive lines of the last three hours, moved to a random
        # earlier place (a buffer flushed late, a clock wrong for a while).
        lines = log.render()
        size = len(lines)
        length = log.rng.randint(200, 800)
        first = log.rng.randint(size - 3 * size // 10, size - length)
        block = lines[first:first + length]
        rest = lines[:first] + lines[first + length:]
        at = int(where * first)
        data = rest[:at] + block + rest[at:]
    else:
        moment = now - 6 * 3600 + where * (6 * 3600 - 300)      # the step, in real time
        sign = 1 if disorder == 'step-back' else -1               # ahead before a step back
        data = log.render(error=lambda real: sign * step if real < moment else 0)
    seek, full, ref, blocklists, dummy = run_three(tmp_path_factory.mktemp('disorder'), data, local_text(now, host), host)
    assert_same(seek, full, ref, blocklists)
