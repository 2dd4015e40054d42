"""Issue 39 §7: past count_budget, a log's state is kept anyway, its counts in parts
(reading/kept.py), so that a busy site's next cron run reads only the new bytes and counts
exactly as a cold run would. Each run with the state is checked against a cold run with
the same settings and, when the cold run reads the log alone, against the reference
pipeline (tests/reference), through test_incremental's Afternoon; the budgets here are
tiny (1 to 20 distinct addresses), so that every window spills and the kept parts are
exercised by a few hundred lines."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings as hsettings, strategies as st

from unit.test_incremental import SERVER, THRESHOLD, TOP, ZONE_STARTS, Afternoon, local, step
from conftest import CORE
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import kept, saves, state


class BusyAfternoon(Afternoon):
    """An afternoon whose runs (with a state, cold, and the killed ones) hold at most
    ``budget`` distinct addresses in memory."""

    budget = 5

    def settings(self, **changed):
        changed.setdefault('count_budget', self.budget)
        return Afternoon.settings(self, **changed)

    def run(self, now, killed=False, **changed):
        result = Afternoon.run(self, now, killed, **changed)
        assert not [w for w in result.warnings if 'not kept' in w], result.warnings
        if not killed and result.scans:
            kept, warning = saves.load(str(self.state_dir), os.path.abspath(str(self.log)))
            assert warning is None and kept is not None
        return result


def kept_parts(day):
    """The number of hours the state of ``day``'s log keeps in parts (kept.py)."""
    kept, dummy = saves.load(str(day.state_dir), os.path.abspath(str(day.log)))
    return sum(1 for segment in kept.files for stamp in segment.counts.unparsed()
               if isinstance(segment.counts._raw[stamp][1], list))   # pylint: disable=protected-access


@pytest.mark.parametrize('budget', [1, 5, 20])
def test_past_count_budget_the_state_is_kept_and_runs_read_only_the_new_bytes(tmp_path, budget):
    """Cold, appends, an hour boundary, a rename, a compression and a copytruncate: each run
    prints what a cold run and the reference print; the state is kept (no "not kept: more
    than count_budget" warning), its hours in parts, and a run reads only the bytes
    appended since the last."""
    day = BusyAfternoon(tmp_path, budget, rotated=True)
    day.budget = budget
    day.write(day.log, 50, 30)
    first = day.run(day.clock)
    assert [scan['mode'] for scan in first.scans] == ['seek'] and kept_parts(day) >= 1
    for minutes in (10, 10, 45):        # the third crosses an hour boundary
        size = day.log.stat().st_size
        day.write(day.log, minutes, 30)
        later = day.run(day.clock)
        assert [(scan['mode'], scan['start'], scan['bytes_read']) for scan in later.scans] == [
            ('incremental', size, day.log.stat().st_size - size)]
        assert kept_parts(day) >= 1
    for how in ('rename', 'compress', 'copytruncate'):
        day.rotate(how, 2 if how == 'rename' else 0)
        day.write(day.log, 7, 30)
        later = day.run(day.clock)
        assert all(scan['mode'] == 'incremental' for scan in later.scans), later.scans
    day.write(day.log, 5, 30)
    day.run(day.clock, killed=True)
    day.write(day.log, 5, 30)
    day.run(day.clock)
    assert day.compared['reference'] >= 4


@hsettings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), rotated=st.booleans(), steps=st.lists(step, min_size=3, max_size=10),
       zone=st.sampled_from(ZONE_STARTS), budget=st.sampled_from([1, 3, 40]))
@example(seed=1, rotated=False, zone=ZONE_STARTS[2], budget=1,                # New York: runs in both 01:xx hours
         steps=[('run', 0, 0), ('write', 30, 20), ('run', 0, 0), ('write', 30, 20), ('run', 0, 0)])
def test_past_count_budget_runs_with_a_state_equal_cold_runs_and_the_reference(tmp_path_factory, seed, rotated, steps, zone,
                                                                               budget):
    """test_incremental's afternoon (appends, rotations, truncations, half lines, replaced
    logs, killed runs, runs at an earlier time or with other settings), every run past the budget."""
    day = BusyAfternoon(tmp_path_factory.mktemp('busy'), seed, rotated, *zone)
    day.budget = budget
    day.write(day.log, 50, 25)
    day.run(day.clock)
    for kind, a, b in steps + [('write', 12, 20), ('run', 0, 0)]:
        if kind == 'write':
            day.write(day.log, a, b)
        elif kind in ('run', 'run earlier'):
            day.clock += a * 60 if kind == 'run' else 0
            day.run(day.clock - (a * 60 if kind == 'run earlier' else 0))
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
        else:
            day.run(day.clock, search_engine='Bing')
    assert day.compared['cold'] >= 2


def test_a_run_killed_while_it_saves_a_kept_state_costs_at_most_a_cold_start(tmp_path):
    """A real process with a budget of 3, killed with SIGKILL at a random moment (reading,
    writing its parts, renaming the state), over and over: the state file is the old one or
    the new one, whole (its parts are in it, under one rename), never one that counts twice;
    the next run with the state prints what a cold run prints."""
    day = BusyAfternoon(tmp_path, 5, rotated=False)
    day.budget = 3
    day.write(day.log, 90, 60)
    day.run(day.clock)
    rng = random.Random(5)
    for attempt in range(8):
        day.write(day.log, 5, 60)
        env = dict(os.environ, TZ='UTC')
        proc = subprocess.Popen([sys.executable, str(CORE)] + day.lists.options() + [
            '--server-ip', SERVER, '--threshold', str(THRESHOLD), '--top', str(TOP), '--now', local(day.clock),
            '--count-budget', '3', '--state-dir', str(day.state_dir), str(day.log)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        day.run(day.clock)           # checks the state run against a cold one and the reference
    assert day.compared['reference'] >= 4


def test_a_kept_part_that_does_not_parse_is_a_damaged_state():
    """A part whose checksum is right but whose content is not counts (a bug, not a disk):
    the state file is reported damaged, never counted as it is."""
    counter = kept.KeptCounter([b'[]\nabc\n' + b'\x01' * 7], state.Sections)
    with pytest.raises(Exception, match='state file is damaged'):
        list(counter.parts())


def test_concurrent_runs_with_a_kept_state_leave_one_that_counts_each_line_once(tmp_path):
    """Three real runs at once on the same log and state directory, budget 2 (every hour in
    parts), the log growing between rounds: whichever state is left, each is whole and read
    only to its own offset, so the next run prints what a cold run and the reference print."""
    day = BusyAfternoon(tmp_path, 9, rotated=False)
    day.budget = 2
    day.write(day.log, 60, 40)
    day.run(day.clock)
    for attempt in range(3):
        day.write(day.log, 4, 40)
        env = dict(os.environ, TZ='UTC')
        procs = [subprocess.Popen([sys.executable, str(CORE)] + day.lists.options() + [
            '--server-ip', SERVER, '--threshold', str(THRESHOLD), '--top', str(TOP), '--now', local(day.clock),
            '--count-budget', '2', '--state-dir', str(day.state_dir), str(day.log)], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for dummy in range(3)]
        for proc in procs:
            assert proc.wait() == 0, proc.stderr.read()
            proc.stderr.close()
        day.write(day.log, 3, 40)
        day.run(day.clock)           # checks the state run against a cold one and the reference
    assert day.compared['reference'] >= 3


def test_a_kept_state_with_a_damaged_part_is_ignored_with_one_warning_and_the_run_is_exact(tmp_path):
    """A byte of a part changed on disk (its CRC-32 no longer matches), or the file cut in
    the middle of its parts: the state is ignored with one warning, and the run counts cold."""
    for how in ('flip', 'cut'):
        (tmp_path / how).mkdir()
        day = BusyAfternoon(tmp_path / how, 3, rotated=False)
        day.budget = 2
        day.write(day.log, 50, 30)
        day.run(day.clock)
        assert kept_parts(day) >= 1
        [name] = [n for n in os.listdir(str(day.state_dir)) if not n.startswith('.') and n != 'spill']
        path = day.state_dir / name
        data = bytearray(path.read_bytes())
        if how == 'flip':
            data[-5] ^= 0x01        # in the last part's counts
        else:
            del data[len(data) - len(data) // 4:]
        path.write_bytes(bytes(data))
        day.write(day.log, 5, 30)
        result = Afternoon.run(day, day.clock)        # checked against a cold run and the reference
        assert [w for w in result.warnings if 'ignored' in w and 'damaged or cut short' in w], result.warnings
        assert [scan['mode'] for scan in result.scans] != ['incremental']
