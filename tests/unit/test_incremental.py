"""Incremental runs (--state-dir) against cold runs and the reference.

A hypothesis property drives a web server's afternoon: lines appended in time order with
up to five minutes of disorder (some carrying the previous hour's stamp in a referrer),
logrotate (rename, rename and compress, copytruncate, with the old writer going on for a
while), truncation, replacement, runs killed before their state was saved, and runs at
random times (now and then earlier than the last). At every run, from the same lists,
the run with a state, a cold run with the same settings and (when the cold run read only
the log itself, as the reference does) the reference pipeline must print the same lines
and leave the same blocklist."""
import gzip
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from hypothesis import HealthCheck, Phase, event, example, given, settings as hsettings, strategies as st

import loggen
import logformats
from conftest import CORE, Files, in_timezone, mask_duration, run_core, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import saves
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

START = 1795255200          # 2026-11-21 10:00:00 UTC
SERVER = '10.0.0.5'
HEAVY = ['203.0.113.%d' % i for i in range(1, 7)] + ['2001:db8::%x' % i for i in range(1, 3)]
THRESHOLD, TOP = 40, 6


def local(epoch):
    return time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(epoch))


# Afternoons in these zones start 75 minutes before a DST switch (the runs' windows then
# cross it: the fall-back hour twice, the spring-forward hour missing, Lord Howe's half hour).
ZONE_STARTS = [('UTC', START), ('Europe/Berlin', 1792890000 - 4500), ('America/New_York', 1793512800 - 4500),
               ('Australia/Lord_Howe', 1775314800 - 4500), ('Europe/Berlin', 1774746000 - 4500)]


class Afternoon:
    """The log directory, the writer's clock and the lists every side starts a run from."""

    def __init__(self, base, seed, rotated, tz='UTC', start=START):
        self.base = base
        self.tz = tz                # the zone of the web server, the runs and the reference
        self.rng = random.Random(seed)
        self.noise = loggen.Scenario(seed, start)     # its requests that a rule drops
        self.rotated = rotated
        self.log = base / 'access.log'
        self.log.write_bytes(b'')
        self.clock = start
        self.lists = Files(base / 'lists')
        self.lists.blocklist.write_bytes(b'203.0.113.6\n')
        self.lists.exclusions.write_bytes(b'2001:db8::2\n')
        self.lists.activity_log.write_bytes(b'')
        self.state_dir = base / 'state'
        self.unfinished = b''       # the rest of a line the writer is in the middle of
        self.runs = 0
        self.compared = {'reference': 0, 'cold': 0}
        self.modes = set()          # how the runs with a state read the files, for hypothesis's statistics

    # ---- the web server

    def line(self, written):
        rng = self.rng
        stamp = written - rng.randrange(300)                    # disorder within the margin
        roll = rng.random()
        referer = '-'
        if rng.random() < 0.05:                                  # a referrer with the previous hour's stamp
            referer = 'https://example.com/?t=%s' % loggen.clf_time(stamp - 3600)
        if roll < 0.55:
            return loggen.line(rng.choice(HEAVY), stamp, path='/job/%d' % rng.randrange(999), referer=referer)
        if roll < 0.75:
            return loggen.line(loggen.ipv4(rng), stamp, path='/jobs/%d' % rng.randrange(999), referer=referer)
        return self.noise.noise(rng.choice(HEAVY), stamp)

    def write(self, path, minutes, per_minute):
        """Append ``minutes`` of traffic to ``path`` (the clock moves on)."""
        def append():
            with open(str(path), 'ab') as handle:
                handle.write(self.unfinished)
                self.unfinished = b''
                for dummy in range(minutes):
                    self.clock += 60
                    handle.write(b''.join(self.line(self.clock - self.rng.randrange(60)) for dummy2 in range(per_minute)))
        in_timezone(self.tz, append)

    def write_half_a_line(self):
        """The writer is in the middle of a line (two writes): a run sees its first part."""
        line = in_timezone(self.tz, lambda: loggen.line(HEAVY[0], self.clock, path='/job/half'))
        cut = self.rng.randrange(1, len(line) - 1)
        with open(str(self.log), 'ab') as handle:
            handle.write(self.unfinished + line[:cut])
        self.unfinished = line[cut:]

    def rotate(self, how, old_writer_minutes):
        one, gz = self.base / 'access.log.1', self.base / 'access.log.1.gz'
        for stale in (one, gz):
            if stale.exists():
                stale.unlink()
        if how == 'copytruncate':
            shutil.copyfile(str(self.log), str(one))
            with open(str(self.log), 'r+b') as handle:
                handle.truncate(0)
            return
        os.rename(str(self.log), str(one))
        if old_writer_minutes:
            self.write(one, old_writer_minutes, 20)         # nginx writes on until it reopens
        self.log.write_bytes(b'')
        if how == 'compress':
            gz.write_bytes(gzip.compress(one.read_bytes()))
            one.unlink()

    def truncate(self):
        with open(str(self.log), 'r+b') as handle:
            handle.truncate(self.rng.randrange(max(1, self.log.stat().st_size)))

    def replace(self):
        self.log.unlink()
        self.write(self.log, 5, 30)

    # ---- the runs

    def settings(self, **changed):
        values = dict(server_ips=[SERVER], threshold=THRESHOLD, top=TOP, rotated=self.rotated)
        values.update(changed)
        return settings.Settings(**values)

    def detect(self, name, now, state_dir=None, **changed):
        files = Files(self.base / ('run%d' % self.runs) / name)
        for attribute in ('blocklist', 'exclusions', 'activity_log'):
            shutil.copyfile(str(getattr(self.lists, attribute)), str(getattr(files, attribute)))
        lines = []
        chosen = self.settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                               activity_log=str(files.activity_log),
                               state_dir=None if state_dir is None else str(state_dir), **changed)
        result = in_timezone(self.tz, lambda: run.detect(chosen, self.logs(), now=now, emit=lines.append))
        return result, mask_duration(('\n'.join(lines) + '\n').encode()), files

    def logs(self):
        """The logs a run is given."""
        return [str(self.log)]

    def run(self, now, killed=False, **changed):
        """One run with the state, checked against a cold run (and the reference)."""
        self.runs += 1
        saved = self.base / 'saved-state'
        if killed:
            shutil.rmtree(str(saved), ignore_errors=True)
            if self.state_dir.exists():
                shutil.copytree(str(self.state_dir), str(saved))
        result, printed, files = self.detect('incremental', now, self.state_dir, **changed)
        self.modes.add(' + '.join(scan['mode'] for scan in result.scans))
        cold, cold_printed, cold_files = self.detect('cold', now, **changed)
        assert printed == cold_printed
        assert files.read('blocklist') == cold_files.read('blocklist')
        assert result.windows == cold.windows          # the examined records, counts included
        self.compared['cold'] += 1
        if [scan['path'] for scan in cold.scans] == [str(self.log)] and not changed:
            reference = Files(self.base / ('run%d' % self.runs) / 'reference')
            for attribute in ('blocklist', 'exclusions'):
                shutil.copyfile(str(getattr(self.lists, attribute)), str(getattr(reference, attribute)))
            ref = run_reference(self.log, reference.blocklist, reference.exclusions, reference.activity_log,
                                [SERVER], '@%d' % now, tz=self.tz, extra_env={'BD_THRESHOLD': str(THRESHOLD), 'BD_TOP': str(TOP)})
            assert ref.returncode == 0, ref.stderr
            assert mask_duration(ref.stdout) == printed
            assert reference.read('blocklist') == files.read('blocklist')
            self.compared['reference'] += 1
        for attribute in ('blocklist', 'activity_log'):     # the next run starts from this one's lists
            if getattr(files, attribute).exists():
                shutil.copyfile(str(getattr(files, attribute)), str(getattr(self.lists, attribute)))
        if killed:       # killed after its appends, before its state replaced the old one
            shutil.rmtree(str(self.state_dir), ignore_errors=True)
            if saved.exists():
                shutil.copytree(str(saved), str(self.state_dir))
            (self.state_dir / ('.tmp-%d-x.json' % 4194399)).write_bytes(b'{"half')
        return result


step = st.one_of(
    st.tuples(st.just('write'), st.integers(1, 40), st.integers(5, 30)),
    st.tuples(st.just('run'), st.integers(0, 20), st.just(0)),
    st.tuples(st.just('rotate'), st.sampled_from(['rename', 'compress', 'copytruncate']), st.integers(0, 3)),
    st.tuples(st.just('truncate'), st.just(0), st.just(0)),
    st.tuples(st.just('half a line'), st.just(0), st.just(0)),
    st.tuples(st.just('replace'), st.just(0), st.just(0)),
    st.tuples(st.just('killed run'), st.just(0), st.just(0)),
    st.tuples(st.just('run earlier'), st.integers(1, 90), st.just(0)),
    st.tuples(st.just('run, other settings'), st.just(0), st.just(0)),
)


@hsettings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), rotated=st.booleans(), steps=st.lists(step, min_size=3, max_size=14),
       zone=st.sampled_from(ZONE_STARTS))
@example(seed=1, rotated=False, zone=ZONE_STARTS[2],                # New York: runs in both 01:xx hours
         steps=[('run', 0, 0), ('write', 30, 20), ('run', 0, 0), ('write', 30, 20), ('run', 0, 0)])
@example(seed=469, rotated=True, zone=ZONE_STARTS[2],               # an empty LOG.1.gz's inode reused by the next
         steps=[('rotate', 'copytruncate', 2), ('rotate', 'compress', 0), ('run earlier', 7, 0), ('rotate', 'rename', 1),
                ('rotate', 'compress', 3), ('write', 34, 18)])
def test_runs_with_a_state_equal_cold_runs_and_the_reference(tmp_path_factory, seed, rotated, steps, zone):
    day = Afternoon(tmp_path_factory.mktemp('afternoon'), seed, rotated, *zone)
    day.write(day.log, 50, 25)
    day.run(day.clock)
    for kind, a, b in steps + [('write', 12, 20), ('run', 0, 0)]:
        if kind == 'write':
            day.write(day.log, a, b)
        elif kind == 'run':
            day.clock += a * 60
            day.run(day.clock)
        elif kind == 'rotate':
            day.rotate(a, b)
        elif kind == 'truncate':
            day.truncate()
        elif kind == 'half a line':
            day.write_half_a_line()
        elif kind == 'replace':
            day.replace()
        elif kind == 'killed run':
            day.run(day.clock, killed=True)
        elif kind == 'run earlier':
            day.run(day.clock - a * 60)
        else:
            day.run(day.clock, search_engine='Bing')
    assert day.compared['cold'] >= 2
    for mode in sorted(day.modes):
        event('read: %s' % mode)
    event('compared with the reference: %s' % ('yes' if day.compared['reference'] else 'no'))
    event('zone: %s' % zone[0])


def test_a_run_reads_only_what_was_appended_since_the_last(tmp_path):
    day = Afternoon(tmp_path, 1, rotated=True)
    day.write(day.log, 70, 30)
    first = day.run(day.clock)
    assert [scan['mode'] for scan in first.scans] == ['seek']
    size = day.log.stat().st_size
    day.write(day.log, 10, 30)
    second = day.run(day.clock)
    assert [(scan['mode'], scan['start']) for scan in second.scans] == [('incremental', size)]
    assert second.scans[0]['bytes_read'] == day.log.stat().st_size - size
    day.rotate('rename', 2)
    day.write(day.log, 3, 30)
    third = day.run(day.clock)
    assert [scan['mode'] for scan in third.scans] == ['incremental', 'incremental']
    assert [scan['path'] for scan in third.scans] == [str(day.log), str(day.log) + '.1']


def test_a_compressed_rotated_file_on_the_inode_of_the_one_the_state_read_is_read_again(tmp_path):
    """A compressed file is finished, so the state skips one it read (same device and inode);
    but a deleted file's inode is soon another file's, and a LOG.1.gz written after the state's
    was deleted may get it (found by the property test above: an empty LOG.1.gz, deleted at the
    next rotation, its inode given to the next LOG.1.gz, whose lines were never counted). The
    same inode with other bytes, here the file rewritten in place: the run reads it again and
    prints what a cold run prints."""
    for before in (b'', None):          # the file the state read: empty, or some lines
        base = tmp_path / ('empty' if before == b'' else 'lines')
        base.mkdir()
        day = Afternoon(base, 6, rotated=True)
        day.write(day.log, 50, 25)
        day.rotate('compress', 0)
        gz = day.base / 'access.log.1.gz'
        if before is not None:
            gz.write_bytes(gzip.compress(before))
        day.run(day.clock)
        inode = gz.stat().st_ino
        day.write(day.base / 'more.log', 20, 25)
        with open(str(gz), 'r+b') as handle:        # the same inode, other bytes
            handle.write(gzip.compress(gzip.decompress(gz.read_bytes()) + (day.base / 'more.log').read_bytes()))
            handle.truncate()
        assert gz.stat().st_ino == inode
        day.write(day.log, 5, 25)
        result = day.run(day.clock)         # asserts it prints what a cold run prints
        assert [scan['path'] for scan in result.scans] == [str(day.log), str(gz)]


def test_the_state_is_bounded_and_private(tmp_path):
    day = Afternoon(tmp_path, 2, rotated=False)
    day.write(day.log, 30, 30)
    day.run(day.clock)
    sizes = []
    for hour in range(5):
        day.write(day.log, 60, 30)
        day.run(day.clock)
        [name] = os.listdir(str(day.state_dir))
        path = day.state_dir / name
        sizes.append(path.stat().st_size)
        assert oct(path.stat().st_mode & 0o777) == '0o600'
        kept = saves.load(str(day.state_dir), str(day.log))[0]
        assert len(kept.stamps) <= 27                       # the hours in play, and no more
        assert kept.stamps[0] == in_timezone('UTC', lambda: time.strftime('%d/%b/%Y:%H', time.gmtime(day.clock - 3600))).encode()
    assert max(sizes) < 2 * min(sizes)                       # two hours of counts, whatever the log's length


def test_a_damaged_state_is_ignored_with_one_warning(tmp_path):
    day = Afternoon(tmp_path, 3, rotated=False)
    day.write(day.log, 30, 30)
    day.run(day.clock)
    [name] = os.listdir(str(day.state_dir))
    path = day.state_dir / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))
    day.write(day.log, 10, 30)
    warnings = []
    result = day.run(day.clock)
    warnings = result.warnings
    assert len(warnings) == 1 and 'ignored' in warnings[0] and name in warnings[0]
    assert [scan['mode'] for scan in result.scans] == ['seek']                # cold
    assert saves.load(str(day.state_dir), str(day.log))[1] is None           # replaced by a sound one


def test_a_state_dir_that_cannot_be_written_is_a_warning_not_a_failure(tmp_path):
    day = Afternoon(tmp_path, 4, rotated=False)
    day.write(day.log, 30, 30)
    day.state_dir = tmp_path / 'not-a-dir'
    day.state_dir.write_bytes(b'')
    result = day.run(day.clock)
    assert any('state' in w for w in result.warnings)


def test_a_killed_run_costs_at_most_a_cold_start(tmp_path):
    """A real process, killed with SIGKILL at a random moment, over and over: the next run
    with the state prints what a cold run prints."""
    day = Afternoon(tmp_path, 5, rotated=False)
    day.write(day.log, 90, 60)
    rng = random.Random(5)
    for attempt in range(6):
        day.write(day.log, 5, 60)
        env = dict(os.environ, TZ='UTC')
        proc = subprocess.Popen([sys.executable, str(CORE)] + day.lists.options() + [
            '--server-ip', SERVER, '--threshold', str(THRESHOLD), '--top', str(TOP), '--now', local(day.clock),
            '--state-dir', str(day.state_dir), str(day.log)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        day.run(day.clock)           # checks the state run against a cold one


def test_a_log_truncated_and_written_past_the_old_offset_is_counted_cold(tmp_path):
    """Its first bytes are still the same, and it is longer than where the state read up
    to: only the bytes before that offset tell that they are not the ones counted."""
    day = Afternoon(tmp_path, 6, rotated=False)
    day.write(day.log, 60, 30)
    day.run(day.clock)
    offset = day.log.stat().st_size
    with open(str(day.log), 'r+b') as handle:
        handle.truncate(offset // 2)
    day.write(day.log, 30, 60)
    assert day.log.stat().st_size > offset
    result = day.run(day.clock)
    assert [scan['mode'] for scan in result.scans] != ['incremental']


def test_precise_rules_with_a_state_verify_as_a_cold_run_does(tmp_path):
    """Crawler claims are counted apart (address, crawler) and carried so; each run verifies
    the claimers that reach its records, with or without a state."""
    from test_precise import GOOGLEBOT, FakeResolver
    day = Afternoon(tmp_path, 7, rotated=False)
    resolver = FakeResolver(reverse={'66.249.66.1': ['crawl-66-249-66-1.googlebot.com']},
                            forward={'crawl-66-249-66-1.googlebot.com': ['66.249.66.1']})

    def crawl(minutes):
        def append():
            with open(str(day.log), 'ab') as handle:
                for dummy in range(minutes):
                    day.clock += 60
                    for address in ('66.249.66.1', '66.249.66.2'):      # the second claims Google falsely
                        handle.write(b''.join(loggen.line(address, day.clock - 30, path='/job/%d' % i, agent=GOOGLEBOT)
                                              for i in range(3)))
        in_timezone('UTC', append)
    for dummy in range(4):
        crawl(20)
        day.write(day.log, 5, 20)
        outputs = []
        for name, state_dir in (('with', day.state_dir), ('cold', None)):
            files = Files(tmp_path / name)
            chosen = day.settings(rules='precise', state_dir=None if state_dir is None else str(state_dir),
                                  blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                                  activity_log=str(files.activity_log))
            result = in_timezone('UTC', lambda: run.detect(chosen, [str(day.log)], now=day.clock, resolver=resolver))
            outputs.append((result.windows, result.messages[:-1], result.by_verdict, files.read('blocklist')))
        assert outputs[0] == outputs[1]
    assert any(record['address'] == '66.249.66.2' for window in outputs[0][0] for record in window['records'])
    assert not any(record['address'] == '66.249.66.1' for window in outputs[0][0] for record in window['records'])


def test_report_mode_reads_the_state_and_writes_none(tmp_path):
    day = Afternoon(tmp_path, 8, rotated=True)
    day.write(day.log, 70, 30)
    day.run(day.clock)
    [name] = os.listdir(str(day.state_dir))
    before = (day.state_dir / name).read_bytes()
    day.write(day.log, 10, 30)
    counts = []
    for state_dir in (day.state_dir, None):
        chosen = day.settings(state_dir=None if state_dir is None else str(state_dir))
        counts.append(in_timezone('UTC', lambda: run.report(chosen, [str(day.log)], floor=1, now=day.clock)).counts)
    assert counts[0] == counts[1] and counts[0]['previous']
    assert (day.state_dir / name).read_bytes() == before


def test_several_logs_each_keep_a_state_and_are_summed(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    first, second = Afternoon(tmp_path / 'a', 9, rotated=False), Afternoon(tmp_path / 'b', 10, rotated=False)
    for minutes in (60, 10, 10):
        first.write(first.log, minutes, 20)
        second.clock = first.clock - minutes * 60
        second.write(second.log, minutes, 20)
        printed = []
        for name, state_dir in (('with', tmp_path / 'state'), ('cold', None)):
            files = Files(tmp_path / name)
            chosen = first.settings(state_dir=None if state_dir is None else str(state_dir),
                                    blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                                    activity_log=str(files.activity_log))
            result = in_timezone('UTC', lambda: run.detect(chosen, [str(first.log), str(second.log)], now=first.clock))
            printed.append((result.messages[:-1], result.windows, files.read('blocklist')))
        assert printed[0] == printed[1]
    assert sorted(os.listdir(str(tmp_path / 'state'))) == sorted(
        os.path.basename(saves.state_path('', str(log))) for log in (first.log, second.log))


def test_a_fall_back_night_whose_two_windows_share_an_hour_counts_it_once(tmp_path):
    """At 01:00 EST on 1 November 2026 (New York falls back), 'one hour ago' is 01:00 EDT:
    both windows are the hour 01/Nov/2026:01. A run with a state made during the first
    01:xx must count that hour once, as a run without a state and the reference do."""
    first = 1793509200                   # 2026-11-01 05:00 UTC, 01:00 EDT
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(b'203.0.113.9 - - [01/Nov/2026:01:%02d:%02d -0400] "GET /jobs/%d HTTP/1.1" 200 5 "-" "M"\n'
                             % (second // 60, second % 60, second) for second in range(0, 3600, 4)))  # 900 lines
    state_dir = tmp_path / 'state'

    def run(name, now, *extra):
        lists = Files(tmp_path / name)
        return run_core(['--blocklist', lists.blocklist, '--exclusions', lists.exclusions, '--activity-log', lists.activity_log,
                         '--server-ip', SERVER, '--threshold', '1000', '--now', '@%d' % now, log] + list(extra), tz='America/New_York')

    run('before', first + 3000, '--state-dir', state_dir)            # 01:50 EDT: keeps a state
    fall_back = first + 3600                                          # 01:00 EST
    cold = run('cold', fall_back)
    incremental = run('incremental', fall_back, '--state-dir', state_dir)
    ref = run_reference(log, tmp_path / 'ref-bl', tmp_path / 'ref-ex', tmp_path / 'ref-act', [SERVER], '@%d' % fall_back,
                        tz='America/New_York')
    assert mask_duration(ref.stdout) == mask_duration(cold.stdout) == (
        b'Checking the previous hour...\nChecking the current hour...\nExecution time: N seconds\n')
    assert mask_duration(incremental.stdout) == mask_duration(cold.stdout)
    assert not (tmp_path / 'incremental' / 'ipblocklist.txt').exists()


# ---- found by a hunt for runs with a state that print otherwise than cold runs (each failed before its fix)

def lines(day, spans):
    """Lines, time-ordered, of each (address, first, last, step) in ``spans``: one every
    ``step`` seconds from epoch ``first`` to before ``last``."""
    found = sorted((t, address) for address, first, last, step in spans for t in range(first, last, step))
    return in_timezone(day.tz, lambda: b''.join(loggen.line(address, t, path='/job/%d' % (t % 997)) for t, address in found))


def test_an_unfinished_last_line_of_a_log_1_a_cold_run_does_not_read_is_not_counted(tmp_path):
    """LOG.1 (the log rotated at 10:50, the old worker writing on until 11:10, stopped in the
    middle of a line stamped 11:10) and a new log whose lines start at 10:50. At 12:05 the
    windows are 11 and 12, the log starts before they can (10:50 = target): a cold run does
    not read LOG.1 at all, the reference neither. The run with a state follows the rotation
    into LOG.1 and adds LOG.1's unfinished last line (Reading.tail) to this run's counts
    although it leaves LOG.1's counts out (use_rotated False): 203.0.113.1 has 39 requests
    in the hour 11 in the log, 40 with that line, and is blocked at the threshold of 40.
    Expected: LOG.1's unfinished line counts only when LOG.1's counts do (as a cold run);
    got: 'Blocking IP address: 203.0.113.1 (40 requests)' from the run with the state only."""
    day = Afternoon(tmp_path, 21, rotated=True)
    day.log.write_bytes(lines(day, [(HEAVY[1], START, START + 3000, 20)]))
    day.run(START + 3000)                                # 10:50: a state of the log
    one = day.base / 'access.log.1'
    os.rename(str(day.log), str(one))                 # logrotate at 10:50; a new log
    day.log.write_bytes(lines(day, [(HEAVY[1], START + 3000, START + 7500, 20), (HEAVY[0], START + 4800, START + 4800 + 39 * 60, 60)]))
    with open(str(one), 'ab') as handle:              # the old worker: on until 11:10, then half a line
        handle.write(lines(day, [(HEAVY[2], START + 3000, START + 4200, 20)]))
        handle.write(lines(day, [(HEAVY[0], START + 4200, START + 4201, 1)])[:-40])
    day.run(START + 7500)                                # 12:05 (asserts it prints what a cold run prints)


def test_a_log_truncated_written_past_the_offset_then_compressed_is_not_read_on(tmp_path):
    """The log read to its end at 10:50 (offset X), then truncated to half and written on past
    X (other lines), then rotated and compressed: LOG.1.gz and a new, empty log. A cold run
    (and the reference on a log) reads LOG.1.gz whole: 203.0.113.1 has 89 requests in the hour
    10 and is blocked. The run with a state takes LOG.1.gz for its old log because its first
    KiB is the state's head (Reading._read_on_gzip checks only that and the length), keeps the
    counts of the bytes truncated away and counts only what lies past X: it prints no block.
    A plain LOG.1 (rotate 'rename') is caught by the bytes before the offset (Segment.before)
    and counted cold; a compressed one is not. Expected: the same lines as the cold run, with
    'Blocking IP address: 203.0.113.1 (89 requests)'; got: no such line, no block."""
    day = Afternoon(tmp_path, 22, rotated=True)
    day.log.write_bytes(lines(day, [(HEAVY[1], START, START + 3000, 20)]))
    day.run(START + 3000)                                # 10:50: a state of the log, read to its end
    size = day.log.stat().st_size
    with open(str(day.log), 'r+b') as handle:         # truncated to its first half...
        handle.truncate(size // 2)
    with open(str(day.log), 'ab') as handle:          # ... and written on past the state's offset
        handle.write(lines(day, [(HEAVY[0], START + 1500, START + 3300, 20)]))
    assert day.log.stat().st_size > size
    day.rotate('compress', 0)                         # LOG.1.gz; a new, empty log
    day.run(START + 3360)


class TwoLogs(Afternoon):
    """An Afternoon whose runs are given the log and its LOG.1 (access.log access.log.1, as a glob gives them)."""

    def logs(self):
        return [str(self.log), str(self.log) + '.1']


def test_a_log_1_given_as_a_log_too_is_counted_when_the_log_does_not_need_it(tmp_path):
    """The run is given access.log and access.log.1 (rotated on). A file already read is not
    read again (same device and inode): a cold run reads access.log.1 through the log only
    when the log starts after the windows can begin; otherwise it reads it as the second log.
    At 12:05 (windows 11 and 12, target 10:50) the log, rotated at 10:50, starts at 10:50: a
    cold run reads LOG.1 as a log of its own and counts its old worker's lines of the hour
    11, 80 of 203.0.113.1, and blocks it. The run with a state follows the rotation into
    LOG.1 (Reading._follow; _recheck likewise on later runs) and claims its inode
    (_first_time) although it leaves its counts out (use_rotated False); the second log is
    then 'seen' and counted by no one. Expected: 'Blocking IP address: 203.0.113.1 (80
    requests)' as the cold run prints; got: no such line, 203.0.113.1 not in the records."""
    day = TwoLogs(tmp_path, 23, rotated=True)
    one = day.base / 'access.log.1'
    one.write_bytes(lines(day, [(HEAVY[2], START - 7200, START - 3600, 20)]))       # an older rotation
    day.log.write_bytes(lines(day, [(HEAVY[1], START, START + 3000, 20)]))
    day.run(START + 3000)                                # 10:50: a state of the log (and of its LOG.1)
    one.unlink()
    os.rename(str(day.log), str(one))                 # logrotate at 10:50; a new log
    day.log.write_bytes(lines(day, [(HEAVY[1], START + 3000, START + 7500, 20)]))
    with open(str(one), 'ab') as handle:              # the old worker writes on until 11:20
        handle.write(lines(day, [(HEAVY[0], START + 3000, START + 4800, 15)]))
    day.run(START + 7500)                                # 12:05: windows 11 and 12; the log starts at 10:50


def test_a_copytruncate_after_a_state_of_an_empty_log_does_not_hide_log_1(tmp_path):
    """A state made when the log was empty and had no LOG.1 (a first run on a fresh log):
    offset 0, an empty head, no rotated file. Then the log is written (10:00-10:50) and
    rotated with copytruncate (LOG.1 a copy, the log truncated: the same inode) and written
    again (10:50-10:55). A cold run at 10:55 finds the log starts after the windows can begin
    and reads LOG.1 too: it blocks five addresses of the hour 10. The run with a state takes
    the log for the same file grown (same inode; an empty head and offset 0 match any file:
    Segment.matches), has no rotated file to recheck, and never looks at LOG.1. Expected: the
    cold run's five 'Blocking IP address: ...' lines; got: none (nothing of the hour 10)."""
    day = Afternoon(tmp_path, 25, rotated=True)
    inode = day.log.stat().st_ino
    day.run(START)                                       # 10:00: the log is empty, no LOG.1: a state of an empty log
    day.write(day.log, 50, 25)                        # 10:00-10:50
    day.rotate('copytruncate', 0)                     # LOG.1 a copy; the log truncated, the same inode
    day.write(day.log, 5, 25)                         # 10:50-10:55
    assert day.log.stat().st_ino == inode
    day.run(day.clock)


def test_a_new_log_on_the_inode_of_an_empty_log_the_state_read_does_not_hide_log_1_gz(tmp_path):
    """The same with LOG.1.gz: a state of the empty log, no LOG.1; the log written 10:00-10:50
    and compressed to LOG.1.gz, then a new log on the inode the state read (as a filesystem
    hands a freed inode to the next file: here the log emptied in place, so that the test does
    not depend on the filesystem), 10:50-10:55. A cold run reads LOG.1.gz and blocks five
    addresses; the run with a state took the new log for the empty one grown and never read
    LOG.1.gz. Expected: the cold run's lines; got: no block."""
    day = Afternoon(tmp_path, 24, rotated=True)
    inode = day.log.stat().st_ino
    day.run(START)                                    # 10:00: the log is empty, no LOG.1: a state of an empty log
    day.write(day.log, 50, 25)                        # 10:00-10:50
    (day.base / 'access.log.1.gz').write_bytes(gzip.compress(day.log.read_bytes()))
    with open(str(day.log), 'r+b') as handle:         # a new log on the inode the state read
        handle.truncate(0)
    day.write(day.log, 5, 25)                         # 10:50-10:55
    assert day.log.stat().st_ino == inode
    day.run(day.clock)


def test_log_format_auto_a_log_rotated_into_another_format_is_counted_as_a_cold_run_does(tmp_path):
    """log_format auto. At 10:50 the log is combined (auto tells combined): a state. Then the
    server switches to nginx JSON and the log is rotated: LOG.1 combined (10:00-10:50), the
    new log JSON (10:50-10:55). At 10:55 auto tells nginx_json from the log's first lines; a
    cold run reads the log and LOG.1 (the log starts after the windows can begin) with that
    reader: LOG.1's combined lines parse as nothing, and 203.0.113.1 has no record. The run
    with a state keeps LOG.1's counts made as combined (the state is 'made under the same
    counting settings': log_format auto, not the format auto decided) and adds them: it
    prints 'IP address 203.0.113.1 is already blocked.', which the cold run does not.
    Expected: the cold run's lines (the state knows which format its counts were made in, and
    counts cold when auto now tells another); got: a record the cold run does not have."""
    day = Afternoon(tmp_path, 26, rotated=True)
    day.log.write_bytes(lines(day, [(HEAVY[0], START, START + 3000, 20)]))         # combined, 10:00-10:50
    day.run(START + 3000, log_format='auto')             # 10:50: auto tells combined; a state
    day.rotate('rename', 0)                           # LOG.1; the server now logs JSON
    new = lines(day, [(HEAVY[1], START + 3000, START + 3300, 20)])
    day.log.write_bytes(in_timezone(day.tz, lambda: logformats.render_log('nginx_json', new, vary=False)[0]))
    day.run(START + 3300, log_format='auto')             # 10:55: auto tells nginx_json
