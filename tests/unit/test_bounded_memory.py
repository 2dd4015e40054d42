"""Issue 19: bounded memory whatever the number of client addresses, decisions exact.

Past ``count_budget`` distinct addresses the spec rules spill their counts to
hash-partitioned files (spill.py) and rank them a part at a time. The tests drive that
path with small budgets (a few hundred addresses, or 1) so that it is exercised quickly;
the 1, 5 and 10 million address hours are `make bench`'s (tests/bench/run_bench.py).
The reference pipeline (tests/reference) is the oracle; the plain in-memory path is run
beside the bounded one on the same inputs."""
import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from operator import itemgetter

import pytest
from hypothesis import HealthCheck, Phase, given, settings as hsettings, strategies as st

import loggen
from unit.test_incremental import Afternoon
from conftest import CORE, Files, in_timezone, mask_duration, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, spill, tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SERVER = '10.0.0.5'


def churn_log(path, distinct, threshold, seed, ipv6=True, server_like=0, previous=0.2):
    """An hour (and some of the previous one) of ``distinct`` one-request addresses, with
    scrapers at threshold - 1, threshold (a tie of several, across the top cut) and
    threshold + 1, and ``server_like`` addresses holding the server address as a substring
    (rule 5.3.8 drops them), some over the threshold."""
    rng = random.Random(seed)
    stamps = {}

    def line(address, epoch, path='/job/1'):
        text = stamps.get(epoch)
        if text is None:
            text = stamps[epoch] = in_timezone('UTC', lambda: loggen.clf_time(epoch))
        return ('%s - - [%s] "GET %s HTTP/1.1" 200 600 "-" "%s"\n' % (address, text, path, loggen.BROWSERS[0])).encode()

    def when():
        return NOW_EPOCH - rng.randint(0, 800) if rng.random() > previous else NOW_EPOCH - 3600 - rng.randint(0, 800)

    lines = []
    for i in range(distinct):
        address = ('2001:db8:1:2:%x:%x::%x' % (i >> 16, i & 0xffff, rng.randint(1, 0xffff)) if ipv6
                   else '%d.%d.%d.%d' % (11 + (i >> 24) % 200, (i >> 16) & 255, (i >> 8) & 255, i & 255))
        lines.append(line(address, when(), rng.choice(['/job/%d' % i, '/jobs/x', '/stellen/y'])))
    planted = [('203.0.113.%d' % n, threshold) for n in range(1, 9)]       # a tie of 8, around the top cut
    planted += [('198.51.100.1', threshold - 1), ('198.51.100.2', threshold + 1), ('198.51.100.20', threshold + 1)]
    planted += [('%s%d' % (SERVER, n), threshold + rng.randint(-1, 2)) for n in range(server_like)]
    planted += [('1%s' % SERVER, threshold + 3)]
    for address, count in planted:
        epoch = NOW_EPOCH - rng.randint(0, 800)
        lines.extend(line(address, epoch - rng.randint(0, 60), '/stelle/%d' % k) for k in range(count))
    rng.shuffle(lines)
    path.write_bytes(b''.join(lines))
    return path


def run_command(files, log, threshold, top, extra=(), tmpdir=None):
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')
    if tmpdir is not None:
        env['TMPDIR'] = str(tmpdir)
    args = files.options() + ['--server-ip', SERVER, '--threshold', str(threshold), '--top', str(top), '--now', NOW]
    return subprocess.run([sys.executable, str(CORE)] + [str(a) for a in args + list(extra) + [log]],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)


def reference(tmp_path, log, threshold, top, name='reference'):
    theirs = Files(tmp_path / name)
    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log, [SERVER], NOW,
                        extra_env={'BD_THRESHOLD': str(threshold), 'BD_TOP': str(top)})
    assert ref.returncode == 0, ref.stderr
    return mask_duration(ref.stdout), theirs.read('blocklist')


@pytest.mark.parametrize('distinct,ipv6,server_like,top,budget', [
    (3000, True, 0, 20, 500),
    (3000, False, 40, 5, 200),
    (2000, True, 300, 10, 1),          # every key spilled as soon as it is counted
    (20000, True, 5, 6, 2000),
])
def test_a_churn_hour_gives_the_reference_output(tmp_path, distinct, ipv6, server_like, top, budget):
    threshold = 7
    log = churn_log(tmp_path / 'access.log', distinct, threshold, seed=distinct + budget, ipv6=ipv6, server_like=server_like)
    expected = reference(tmp_path, log, threshold, top)
    scratch = tmp_path / 'tmp'
    scratch.mkdir()
    for name, extra in (('bounded', ['--count-budget', str(budget)]), ('plain', [])):
        ours = Files(tmp_path / name)
        got = run_command(ours, log, threshold, top, extra, tmpdir=scratch)
        assert got.returncode == 0, got.stderr
        assert (mask_duration(got.stdout), ours.read('blocklist')) == expected, name
        assert got.stderr == b''
        assert os.listdir(str(scratch)) == []          # the spill directory is gone


def test_with_a_state_over_count_budget_the_state_is_kept_and_the_next_run_is_exact(tmp_path):
    """Issue 39 §7: past count_budget the state is kept, its counts in parts (kept.py), with
    no warning (it was dropped: "not kept: more than count_budget"); each run is exact."""
    threshold, top = 6, 20
    log = churn_log(tmp_path / 'access.log', 3000, threshold, seed=3)
    state_dir = tmp_path / 'state'
    ours = Files(tmp_path / 'ours')
    expected = reference(tmp_path, log, threshold, top)
    for attempt in range(2):
        ours = Files(tmp_path / ('ours%d' % attempt))
        got = run_command(ours, log, threshold, top, ['--count-budget', '300', '--state-dir', state_dir])
        assert got.returncode == 0, got.stderr
        assert got.stderr == b''
        assert len([n for n in os.listdir(str(state_dir)) if not n.startswith('.') and n != 'spill']) == 1
        assert os.listdir(str(state_dir / 'spill')) == []       # it spilled there (issue 44), and left nothing
        assert (mask_duration(got.stdout), ours.read('blocklist')) == expected
    # A state larger than state_budget: not written, one warning.
    small, state_dir = Files(tmp_path / 'small'), tmp_path / 'small-state'
    got = run_command(small, log, threshold, top, ['--state-dir', state_dir, '--state-budget', '1000'])
    assert got.returncode == 0, got.stderr
    assert 'larger than state_budget' in got.stderr.decode() and len(got.stderr.decode().splitlines()) == 1
    assert [name for name in os.listdir(str(state_dir)) if not name.startswith('.') and name != 'spill'] == []
    assert (mask_duration(got.stdout), small.read('blocklist')) == reference(tmp_path, log, threshold, top, 'ref2')


def test_a_state_file_over_state_budget_is_not_read(tmp_path):
    threshold, top = 6, 20
    log = churn_log(tmp_path / 'access.log', 500, threshold, seed=4)
    state_dir = tmp_path / 'state'
    ours = Files(tmp_path / 'ours')
    assert run_command(ours, log, threshold, top, ['--state-dir', state_dir]).returncode == 0
    [name] = os.listdir(str(state_dir))
    size = (state_dir / name).stat().st_size
    again = Files(tmp_path / 'again')
    got = run_command(again, log, threshold, top, ['--state-dir', state_dir, '--state-budget', str(size - 1)])
    assert got.returncode == 0
    assert 'ignored: larger than %d bytes' % (size - 1) in got.stderr.decode()
    assert (mask_duration(got.stdout), again.read('blocklist')) == reference(tmp_path, log, threshold, top)


# ---- the bounded path against the plain one, on random counts


KEYS = st.one_of(st.sampled_from([b'10.0.0.5', b'10.0.0.50', b'110.0.0.5', b'1.2.3.4', b'2001:db8::5', b'a', b'b']),
                 st.binary(min_size=1, max_size=5).filter(lambda k: b'\n' not in k))


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(KEYS, max_size=40), max_size=12), budget=st.integers(1, 30), top=st.integers(1, 12),
       servers=st.sampled_from([[], [b'10.0.0.5'], [b'0.0'], [b'10.0.0.5', b'::1']]), floor=st.integers(1, 6),
       summaries=st.booleans())
def test_spilled_counts_rank_as_the_whole_counter(tmp_path_factory, batches, budget, top, servers, floor, summaries):
    whole = Counter()
    with spill.Session(budget, str(tmp_path_factory.getbasetemp() / 'state')) as session:
        session.summaries = summaries       # a follower's: ranked from a summary of the files when exact
        counter = session.counter()
        for batch in batches:
            counter.update(batch)
            whole.update(batch)
            if len(counter) > budget:
                counter.spill()
            if spill.spilled(counter):      # ranked between batches, as a follower does
                assert rules.top_records(counter, servers, top) == rules.top_records(whole, servers, top)
                # A follower's ranking: only the records at or over the threshold.
                assert rules.top_records(counter, servers, top, floor) == rules.top_records(whole, servers, top, floor)
        ordered = sorted(whole.items(), key=itemgetter(1, 0), reverse=True)
        assert rules.top_records(counter, servers, top) == rules.top_records(whole, servers, top)
        is_server = rules.server_test(servers) or (lambda count, key: False)
        expected = [(c, k) for k, c in ordered if not is_server(c, k)][:top]
        assert rules.top_records(whole, servers, top) == expected
        for ranked in (counter, whole):
            assert rules.top_records(ranked, servers, top, floor) == [(c, k) for c, k in expected if c >= floor]
        assert rules.counts_at_least(counter, servers, floor) == dict(
            (k, c) for k, c in whole.items() if c >= floor and not is_server(c, k))
        asked = list(whole)[:5] + [b'never counted']
        assert rules.counts_of(counter, servers, asked) == dict(
            (k, 0 if is_server(whole[k], k) else whole[k]) for k in asked)
        merged = Counter()
        for part in spill.parts(counter):
            assert not set(part) & set(merged)          # disjoint parts
            merged.update(part)
        assert merged == whole


def test_a_follower_ranks_spilled_counts_from_a_summary_read_once_per_spill(tmp_path, monkeypatch):
    """Churn (one request each) past the budget, a few heavy keys: ranked again and again
    with new entries in memory, the files are read once per spill, the records exact."""
    reads = []
    original = spill._read_keys           # pylint: disable=protected-access
    monkeypatch.setattr(spill, '_read_keys', lambda path, codec: reads.append(path) or original(path, codec))
    whole = Counter()
    with spill.Session(300, str(tmp_path / 'state')) as session:
        session.summaries = True
        counter = session.counter()
        for round_ in range(40):
            batch = [b'10.1.%d.%d' % (round_, i) for i in range(100)] + [b'198.51.100.%d' % (i % 5) for i in range(30)]
            counter.update(batch)
            whole.update(batch)
            spills = len(counter) > 300
            if spills:
                counter.spill()
            before = len(reads)
            assert rules.top_records(counter, [], 5) == rules.top_records(whole, [], 5)
            assert rules.top_records(counter, [], 5) == rules.top_records(whole, [], 5)
            if round_ > 3 and not spills:
                assert len(reads) == before, 'the files were read again without a spill'


def test_a_partition_larger_than_the_budget_is_split_again(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, 'FANOUT', 4)         # partitions of three budgets' keys, quickly
    with spill.Session(50, str(tmp_path)) as session:
        counter = session.counter()
        keys = [b'k%d' % i for i in range(50 * spill.FANOUT * 3)]
        for start in range(0, len(keys), 40):
            counter.update(keys[start:start + 40])
            counter.update([b'hot'] * 3)
            if len(counter) > 50:
                counter.spill()
        sizes = [len(part) for part in counter.parts()]
        assert len(sizes) > spill.FANOUT and max(sizes) <= 50 + spill.READ_BYTES     # split again; within the budget
        assert sum(sizes) == len(keys) + 1
        assert rules.top_records(counter, [], 2) == [(3 * len(range(0, len(keys), 40)), b'hot'), (1, max(keys))]


def test_the_spill_directory_is_private_and_removed_even_on_failure(tmp_path, monkeypatch):
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    with pytest.raises(RuntimeError):
        with spill.Session(1) as session:
            counter = session.counter()
            counter.update([b'a', b'b'])
            counter.spill()
            assert os.path.dirname(session.directory) == str(tmp_path)
            assert oct(os.stat(session.directory).st_mode & 0o777) == '0o700'
            assert os.listdir(session.directory)
            raise RuntimeError('the run fails')
    assert os.listdir(str(tmp_path)) == []


def test_without_a_temporary_directory_the_counts_stay_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv('TMPDIR', str(tmp_path / 'missing'))
    log = churn_log(tmp_path / 'access.log', 300, 5, seed=2)
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    windows = clock.hour_windows(NOW_EPOCH)
    plain = in_timezone('UTC', lambda: tally.count_windows([str(log)], windows, line_filter))
    with spill.Session(10) as session:
        counted = in_timezone('UTC', lambda: tally.count_windows([str(log)], windows, line_filter, session=session))
        assert [counter for dummy, counter in counted] == [counter for dummy, counter in plain]
        assert not session.usable


def test_forked_workers_hand_over_spilled_counts(tmp_path, monkeypatch):
    """The parallel reading (one forked worker per idle core) with a small budget: the
    workers' files and counts add up to the counts of one process without a budget."""
    log = churn_log(tmp_path / 'access.log', 4000, 5, seed=9)
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    windows = clock.hour_windows(NOW_EPOCH)
    plain = in_timezone('UTC', lambda: tally.count_windows([str(log)], windows, line_filter))
    monkeypatch.setattr(chunks, 'workers_for', lambda size: 3)
    with spill.Session(100, str(tmp_path / 'state')) as session:
        counted = in_timezone('UTC', lambda: tally.count_windows([str(log)], windows, line_filter, session=session))
        for (window, mine), (dummy, theirs) in zip(counted, plain):
            assert spill.spilled(mine)
            total = Counter()
            for part in spill.parts(mine):
                total.update(part)
            assert total == theirs


@pytest.mark.parametrize('rules', [{}, {'rules': 'precise'}, {'rules': 'precise', 'ipv6_prefix': 96}])
def test_the_fleet_report_is_the_same_in_bounded_memory(tmp_path, rules):
    threshold = 6
    log = churn_log(tmp_path / 'access.log', 3000, threshold, seed=11, server_like=20)
    reports = []
    for budget in (100, 10 ** 9):
        chosen = settings.Settings(server_ips=[SERVER], threshold=threshold, count_budget=budget, **rules)
        first = in_timezone('UTC', lambda: run.report(chosen, [str(log)], floor=2, now=NOW_EPOCH))
        asked = dict((name, sorted(counts)[:7] + ['2001:db8:1:2:0:1::5', SERVER + '1']) for name, counts in first.counts.items())
        second = in_timezone('UTC', lambda: run.report(chosen, [str(log)], candidates=asked, now=NOW_EPOCH))
        reports.append((first.counts, second.counts))
    assert reports[0] == reports[1]
    assert reports[0][0]['current'] and all(count >= 2 for count in reports[0][0]['current'].values())
    if rules:       # the precise rules drop the server's own key, the spec rules any key holding it (5.3.8)
        assert SERVER not in reports[0][0]['current']
        assert sorted(reports[0][1]['current']) == sorted(set(asked['current']))
        assert sorted(reports[0][1]['current'].values())[-1] >= 2
    else:
        assert not any(SERVER in key for key in reports[0][0]['current'])


def test_a_precise_report_asked_for_escaped_keys_counts_them(tmp_path):
    """Phase 2 is asked for keys as phase 1 returned them, undecodable bytes escaped
    (printable): each is found again by its bytes, in the precise rules as in the spec ones."""
    stamp = in_timezone('UTC', lambda: loggen.clf_time(NOW_EPOCH - 60)).encode()
    log = tmp_path / 'access.log'
    lines = [(b'caf\xc3\xa9', 9), (b'bad\xff', 8), (b'lit\\xff', 7), (b'192.0.2.7', 6)]
    log.write_bytes(b''.join(b'%s - - [%s] "GET /job/1 HTTP/1.1" 200 9 "-" "curl"\n' % (field, stamp)
                             for field, n in lines for dummy in range(n)))
    for rules in ('spec', 'precise'):
        for budget in (1, 10 ** 9):
            chosen = settings.Settings(server_ips=[SERVER], threshold=5, count_budget=budget, rules=rules)
            first = in_timezone('UTC', lambda: run.report(chosen, [str(log)], floor=2, now=NOW_EPOCH))
            assert first.counts['current'] == {u'caf\xe9': 9, u'bad\\xff': 8, u'lit\\xff': 7, u'192.0.2.7': 6}
            asked = {'current': sorted(first.counts['current']) + [u'none\\xfe']}
            second = in_timezone('UTC', lambda: run.report(chosen, [str(log)], candidates=asked, now=NOW_EPOCH))
            # Two keys print as 'bad\xff' and 'lit\xff'; one asked text is each of its spellings' sum.
            assert second.counts['current'] == dict(first.counts['current'], **{u'none\\xfe': 0}), (rules, budget)


# ---- memory


PEAK = textwrap.dedent('''
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)
    print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
''')


def peak_rss(argv, env):
    """(exit status, peak RSS in KiB of the largest process) of a run, measured by a
    wrapper process of its own (this one's children would mix in)."""
    out = subprocess.run([sys.executable, '-c', PEAK] + argv, stdout=subprocess.PIPE, env=env, check=True).stdout.split()
    return int(out[0]), int(out[1])


def test_peak_memory_stays_bounded_with_many_addresses(tmp_path):
    """200,000 distinct addresses: within the budget's memory, where counting them all in
    memory takes some 25 MiB more (about 130 bytes an address)."""
    python = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable
    log = tmp_path / 'access.log'
    with open(str(log), 'wb') as out:
        stamp = in_timezone('UTC', lambda: loggen.clf_time(NOW_EPOCH - 60)).encode()
        for start in range(0, 200000, 10000):
            out.write(b''.join(b'2001:db8:1:2:%x::%x - - [%s] "GET /job/1 HTTP/1.1" 200 9 "-" "curl"\n' % (i, i % 7, stamp)
                               for i in range(start, start + 10000)))
    env = dict(os.environ, TZ='UTC', TMPDIR=str(tmp_path))
    peaks = {}
    for budget in (5000, 10 ** 9):
        files = Files(tmp_path / str(budget))
        argv = [python, '-S', str(CORE / '__main__.py')] + [str(a) for a in files.options()] + [
            '--server-ip', SERVER, '--now', NOW, '--count-budget', str(budget), str(log)]
        status, peaks[budget] = peak_rss(argv, env)
        assert status == 0
    assert peaks[5000] + 15 * 1024 < peaks[10 ** 9], peaks


REPORT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from bot_detector.drivers import run
    from bot_detector.values import settings
    chosen = settings.Settings(rules='precise', server_ips=['10.0.0.5'], count_budget=int(sys.argv[2]))
    candidates = json.loads(sys.argv[4])
    done = run.report(chosen, [sys.argv[3]], floor=2, candidates=candidates, now=int(sys.argv[5]))
    sys.exit(0 if done.counts['current'] else 1)
''')


@pytest.mark.parametrize('phase', [1, 2])
def test_the_precise_fleet_report_stays_bounded_with_many_addresses(tmp_path, phase):
    """The fleet's report phases with the precise rules (each address its own key: no
    ipv6_prefix) keep what they rank bounded, as the command's runs do: phase 1 the keys at
    or over its floor, phase 2 the keys asked, a part of spilled counts at a time. From
    20,000 to 200,000 distinct addresses the peak grows by a few MiB (the reading's
    buffers); ranking every key, as before, it grew by some 48 MiB."""
    python = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable
    stamp = in_timezone('UTC', lambda: loggen.clf_time(NOW_EPOCH - 60)).encode()
    candidates = 'null' if phase == 1 else json.dumps({'current': ['192.0.2.9', '2001:db8:1:2:5::5']})
    env = dict(os.environ, TZ='UTC', TMPDIR=str(tmp_path))
    peaks = {}
    for distinct in (20000, 200000):
        log = tmp_path / ('access-%d.log' % distinct)
        with open(str(log), 'wb') as out:
            for start in range(0, distinct, 10000):
                out.write(b''.join(b'2001:db8:1:2:%x::%x - - [%s] "GET /job/1 HTTP/1.1" 200 9 "-" "curl"\n'
                                   % (i, i % 7, stamp) for i in range(start, start + 10000)))
            out.write(b'192.0.2.9 - - [%s] "GET /job/1 HTTP/1.1" 200 9 "-" "curl"\n' % stamp * 3)
        status, peaks[distinct] = peak_rss([python, '-S', '-c', REPORT, str(CORE.parent), '5000', str(log), candidates,
                                            str(NOW_EPOCH)], env)
        assert status == 0
    assert peaks[200000] < peaks[20000] + 16 * 1024, peaks


# ---- with a state: the bounded path across runs, rotations and restarts


@hsettings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), budget=st.sampled_from([1, 7, 40, 10 ** 6]), rotated=st.booleans(),
       rotation=st.sampled_from(['rename', 'compress', 'copytruncate']))
def test_runs_with_a_state_and_a_small_budget_equal_cold_runs_and_the_reference(tmp_path_factory, seed, budget,
                                                                                rotated, rotation):
    """test_incremental's afternoon of runs, every run (with a state, and the cold run and
    the reference it is compared with) under ``count_budget``: a state is kept, past the
    budget in parts (kept.py); the decisions and the examined records are the same throughout."""
    day = Afternoon(tmp_path_factory.mktemp('afternoon'), seed, rotated)
    plain = day.settings
    day.settings = lambda **changed: plain(**dict({'count_budget': budget}, **changed))
    day.write(day.log, 50, 25)
    day.run(day.clock)
    for minutes in (10, 5):
        day.write(day.log, minutes, 20)
        day.clock += minutes * 60
        day.run(day.clock)
    day.rotate(rotation, 1)
    day.write(day.log, 8, 20)
    day.write_half_a_line()
    day.clock += 480
    day.run(day.clock)
    assert day.compared['cold'] == 4 and day.compared['reference'] >= 1


# ---- a run killed while it spills leaves its directory: the next run removes it


def spill_dirs(base):
    return sorted(name for name in os.listdir(str(base)) if name.startswith(spill.PREFIX))


def test_a_run_killed_with_sigkill_leaves_a_directory_the_next_run_removes(tmp_path):
    """A real run, killed with kill -9 while its counts spill, leaves its spill directory;
    the next run (one that spills nothing) removes it. Directories that are not a dead
    run's stay: a live process's, one whose owner file is locked (a run of another pid
    namespace), another kind of name, a link, a file."""
    spills = tmp_path / 'tmp'
    spills.mkdir()
    log = churn_log(tmp_path / 'access.log', 300000, 50, seed=4)
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', TMPDIR=str(spills))
    files = Files(tmp_path / 'killed')
    proc = subprocess.Popen([sys.executable, str(CORE)] + [str(a) for a in files.options()] + [
        '--server-ip', SERVER, '--now', NOW, '--count-budget', '1000', str(log)], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            found = spill_dirs(spills)
            if found and any(name != spill.OWNER_FILE for name in os.listdir(str(spills / found[0]))):
                break
            time.sleep(0.002)
        assert proc.poll() is None, 'the run ended before it spilled'
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    stale = spill_dirs(spills)
    assert len(stale) == 1 and str(proc.pid) in stale[0] and len(os.listdir(str(spills / stale[0]))) > 1
    # Beside it, what must stay.
    live = spills / ('%s%d-%s' % (spill.PREFIX, os.getpid(), 'a' * 12))         # this process runs
    held = spills / ('%s%d-%s' % (spill.PREFIX, proc.pid, 'b' * 12))             # dead pid, lock held
    for directory in (live, held):
        directory.mkdir()
        (directory / spill.OWNER_FILE).write_bytes(b'')
    holder = os.open(str(held / spill.OWNER_FILE), os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    other = spills / ('%sx%d-%s' % (spill.PREFIX, proc.pid, 'c' * 12))
    other.mkdir()
    (spills / ('%s%d-%s' % (spill.PREFIX, proc.pid, 'd' * 12))).write_bytes(b'a file')
    (spills / ('%s%d-%s' % (spill.PREFIX, proc.pid, 'e' * 12))).symlink_to(str(other))
    small = tmp_path / 'small.log'
    small.write_bytes(b'')
    try:
        done = run_command(Files(tmp_path / 'next'), small, 50, 20, tmpdir=spills)
        assert done.returncode == 0, done.stderr
    finally:
        os.close(holder)
    assert stale[0] not in spill_dirs(spills)
    assert spill_dirs(spills) == sorted([p.name for p in (live, held, other)] + [
        '%s%d-%s' % (spill.PREFIX, proc.pid, c * 12) for c in 'de'])
    assert (live / spill.OWNER_FILE).exists() and (held / spill.OWNER_FILE).exists()
