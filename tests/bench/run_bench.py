"""`make bench`: the host command against the reference pipeline (tests/reference) on
generated logs, in one run, with alternating repetitions. Writes docs/benchmarks.md.

- Cold runs: one run on a 6, 24 and 96-hour time-ordered log and on the 24-hour log
  shuffled, and the two 24-hour ones again with both sides pinned to one core; the cases'
  repetitions interleaved; median wall time, CPU time and peak RSS of each, and their ratios.
- The cron day: a log that starts at midnight and grows through the afternoon, with a run
  every 10 minutes from 12:00 to 17:50 (36 runs, --now at each run's time): the reference,
  the command with an incremental state (--state-dir) and the command without one. Every
  run's standard output is compared with the reference's (the duration line aside), and
  so is the blocklist at the end; a difference fails the benchmark.

Both sides run with the interpreter the role uses on hosts, /usr/bin/python3 (BENCH_PYTHON
overrides it), never through a version manager's shim; the command runs as the role's
bot-detector.sh runs it (python3 -S .../bot_detector/__main__.py). CPU time is user + system of the
whole process tree; peak RSS is that of its largest single process, as GNU time reports
them (wait4(2) from this process would count this process's own size, which a forked
child inherits). Runs are warm-cache: each log is read once (by cat) before timing.
"""
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CACHE = os.path.join(ROOT, '.cache', 'bench')
CORE = os.path.join(ROOT, 'plugins', 'module_utils', 'bot_detector')   # the package directory is the command
REFERENCE = os.path.join(ROOT, 'tests', 'reference', 'bot-detector.sh')
GENERATE = os.path.join(ROOT, 'tests', 'bench', 'generate.py')
GNU_TIME = '/usr/bin/time'     # Debian package `time`; `make bench` installs it
PYTHON = os.environ.get('BENCH_PYTHON', '/usr/bin/python3')
SERVER_IP = '10.0.0.5'
NOW = '2026-11-21 04:13:43'
COLD_CASES = [  # (label, hours, shuffled, repetitions)
    ('24 h, time-ordered', 24, False, 5),
    ('24 h, shuffled (not in time order)', 24, True, 3),
    ('6 h, time-ordered', 6, False, 5),
    ('96 h, time-ordered', 96, False, 3),
]
# Runs without a state_dir spill past count_budget to TMPDIR only when only this user writes it
# (issue 44: never /tmp): one of the benchmark's own.
SPILLS = os.path.join(CACHE, 'spill')
ENV = dict(os.environ, TZ='UTC', LC_ALL='C', TMPDIR=SPILLS)
ENV.pop('PYTHONDONTWRITEBYTECODE', None)     # hosts keep the core's compiled files


def generated(name, args):
    path = os.path.join(CACHE, name)
    if not os.path.exists(path):
        print('generating %s ...' % path, flush=True)
        subprocess.run([PYTHON, GENERATE] + args(path + '.tmp'), check=True)
        os.rename(path + '.tmp', path)
    return path


def cold_log(hours, shuffled):
    return generated('log%d%s.txt' % (hours, '-shuffled' if shuffled else ''),
                     lambda out: [str(hours), out] + (['--shuffled'] if shuffled else []))


def day_log():
    index = os.path.join(CACHE, 'day.json')
    log = generated('day.txt', lambda out: ['day', out, '--index', index])
    with open(index) as handle:
        return log, json.load(handle)


def measure(argv, env):
    """One run: {wall, cpu (s), rss (MiB), stdout (bytes)}; a failed run ends the benchmark."""
    with tempfile.NamedTemporaryFile('r') as report, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, '-o', report.name, '-f', '%U %S %M'] + argv, env=env,
                              stdout=out, stderr=subprocess.PIPE, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit('%s failed: %s' % (argv[0], proc.stderr.decode()))
        user, system, rss = report.read().split()[-3:]
        out.seek(0)
        return {'wall': wall, 'cpu': float(user) + float(system), 'rss': int(rss) / 1024.0, 'stdout': out.read()}


class Side:
    """The reference or the command, with its own blocklist, exclusion list and activity log."""

    def __init__(self, who, scratch, state=False, pin=False):
        self.who = who
        self.dir = os.path.join(scratch, who)
        os.makedirs(self.dir)
        self.blocklist, self.exclusions, self.activity = [os.path.join(self.dir, n) for n in ('blocklist', 'exclusions', 'activity.log')]
        self.state_dir = os.path.join(self.dir, 'state') if state else None
        # Pinned to one CPU (util-linux taskset): the reference's pipeline shares it, and
        # the command, whose workers go by the cores it may use, stays in one process.
        self.prefix = ['taskset', '-c', '0'] if pin else []

    def run(self, log, now):
        if self.who.startswith('reference'):
            env = dict(ENV, BD_BLOCKLIST=self.blocklist, BD_EXCLUSIONS=self.exclusions, BD_ACTIVITY_LOG=self.activity,
                       BD_SERVER_IP=SERVER_IP, BD_NOW=now)
            return measure(self.prefix + [REFERENCE, log], env)
        argv = self.prefix + [PYTHON, '-S', os.path.join(CORE, '__main__.py'), '--blocklist', self.blocklist,
                              '--exclusions', self.exclusions, '--activity-log', self.activity,
                              '--server-ip', SERVER_IP, '--now', now]
        if self.state_dir:
            argv += ['--state-dir', self.state_dir]
        return measure(argv + [log], ENV)


def masked(stdout):
    return b'\n'.join(b'Execution time: N seconds' if l.startswith(b'Execution time: ') else l for l in stdout.split(b'\n'))


def run_cold(cases):
    """Cold runs of each case (key, log, repetitions, pinned to one core), interleaved: the
    first repetition of every case, then the second, each with the reference and the
    command in alternating order, so that a slow spell of a shared machine spreads over the
    cases instead of falling on one. {key: {side: median wall, median CPU, peak RSS}}."""
    scratch = tempfile.mkdtemp()
    try:
        for log in sorted(set(case[1] for case in cases)):
            subprocess.run(['cat', log], stdout=subprocess.DEVNULL, check=True)     # warm the page cache
        results = dict((key, {'reference': [], 'command': []}) for key, dummy, dummy, dummy in cases)
        for rep in range(max(case[2] for case in cases)):
            order = ('reference', 'command') if rep % 2 == 0 else ('command', 'reference')
            for key, log, reps, pin in cases:
                if rep >= reps:
                    continue
                mine = results[key]
                for who in order:
                    mine[who].append(Side(who, os.path.join(scratch, '%s-%d' % (key, rep)), pin=pin).run(log, NOW))
                if masked(mine['reference'][-1]['stdout']) != masked(mine['command'][-1]['stdout']):
                    raise SystemExit('%s: the command printed other lines than the reference' % log)
        return dict((key, dict((who, {'wall': statistics.median(r['wall'] for r in runs),
                                      'cpu': statistics.median(r['cpu'] for r in runs),
                                      'rss': max(r['rss'] for r in runs)}) for who, runs in sides.items()))
                    for key, sides in results.items())
    finally:
        shutil.rmtree(scratch)


def run_day():
    """The cron runs on the growing log: totals per side, the runs whose output differs,
    and the state after the last run. The first time of the index is the run before the
    day's (11:50): it is run first, untimed, by each side, so the day's runs find what a
    day of cron runs leaves (the lists, and for --state-dir, the state)."""
    source, sizes = day_log()
    times = sorted(sizes)
    scratch = tempfile.mkdtemp()
    try:
        live = os.path.join(scratch, 'access.log')
        sides = [Side('reference', scratch), Side('command-state', scratch, state=True), Side('command-cold', scratch)]
        totals = dict((side.who, {'wall': 0.0, 'cpu': 0.0, 'rss': 0.0, 'runs': []}) for side in sides)
        differ = []
        subprocess.run(['cat', source], stdout=subprocess.DEVNULL, check=True)
        with open(source, 'rb') as src, open(live, 'wb') as dst:
            for i, now in enumerate(times):
                dst.write(src.read(sizes[now] - dst.tell()))        # the lines completed by this run's time
                dst.flush()
                outputs = {}
                for side in sides[i % 3:] + sides[:i % 3]:
                    result = side.run(live, now)
                    outputs[side.who] = masked(result['stdout'])
                    if i == 0:
                        continue                                    # the warm-up run
                    total = totals[side.who]
                    total['wall'] += result['wall']
                    total['cpu'] += result['cpu']
                    total['rss'] = max(total['rss'], result['rss'])
                    total['runs'].append(result['cpu'])
                for who in ('command-state', 'command-cold'):
                    if outputs[who] != outputs['reference']:
                        differ.append((now, who))
        for side in sides[1:]:
            with open(side.blocklist, 'rb') as mine, open(sides[0].blocklist, 'rb') as theirs:
                if mine.read() != theirs.read():
                    differ.append(('the blocklist at the end', side.who))
        [name] = [n for n in os.listdir(sides[1].state_dir) if n != 'spill']     # spill: where counts past count_budget go
        kept = state_size(os.path.join(sides[1].state_dir, name), live)
        return len(times) - 1, totals, differ, kept
    finally:
        shutil.rmtree(scratch)


def state_size(path, log):
    """(bytes, counts kept, distinct keys) of a state file, read with the core's own parser."""
    sys.path.insert(0, os.path.dirname(CORE))
    from bot_detector.reading import saves, spill  # pylint: disable=import-error
    with open(path, 'rb') as handle:
        data = handle.read()
    kept = saves.loads(data, log)
    counts, keys = 0, set()
    for segment in kept.files:
        for stamp in segment.counts.stamps():
            for part in spill.parts(segment.counts.get(stamp)):     # past count_budget: in parts (kept.py)
                counts += len(part)
                keys.update(part)
    return len(data), counts, len(keys)


def cpu_model():
    """The CPU's model name, as /proc/cpuinfo gives it (also used by fleet_bench.py)."""
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    return 'unknown CPU'


def machine():
    model = cpu_model()
    with open('/proc/meminfo') as f:
        mem_kb = int(f.readline().split()[1])
    version = subprocess.run([PYTHON, '-c', 'import platform; print(platform.python_version())'],
                             stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    return '%s, %d cores, %.0f GiB RAM; Linux %s; %s (Python %s); %s' % (
        model, os.cpu_count(), mem_kb / 1024 / 1024, platform.release(), PYTHON, version,
        subprocess.run(['grep', '--version'], stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()[0])


def main():
    os.makedirs(SPILLS, 0o700, exist_ok=True)     # CACHE, and a private TMPDIR in it
    load_before = os.getloadavg()[0]
    subprocess.run([PYTHON, '-m', 'compileall', '-q', CORE], env=ENV, check=True)
    cold = ['| log | size | runs | reference: wall | command: wall | **wall ratio** | reference: CPU | command: CPU | CPU ratio '
            '| reference: peak RSS | command: peak RSS |',
            '|---|---|---|---|---|---|---|---|---|---|---|']
    one_core = ['| log | reference: wall | command: wall | **wall ratio** |', '|---|---|---|---|']
    cases = []
    for label, hours, shuffled, reps in COLD_CASES:
        log = cold_log(hours, shuffled)
        cases.append((label, log, reps, False))
        if hours == 24:
            cases.append((label + ', one core', log, reps, True))
    results = run_cold(cases)
    for label, log, reps, pin in cases:
        ref, cmd = results[label]['reference'], results[label]['command']
        if pin:
            one_core.append('| %s | %.3f s | %.3f s | **%.1f×** |' % (
                label[:-len(', one core')], ref['wall'], cmd['wall'], ref['wall'] / cmd['wall']))
        else:
            cold.append('| %s | %.0f MB | %d + %d | %.3f s | %.3f s | **%.1f×** | %.3f s | %.3f s | %.1f× | %.1f MiB | %.1f MiB |' % (
                label, os.path.getsize(log) / 1e6, reps, reps, ref['wall'], cmd['wall'], ref['wall'] / cmd['wall'],
                ref['cpu'], cmd['cpu'], ref['cpu'] / cmd['cpu'], ref['rss'], cmd['rss']))
    print('\n'.join(cold + one_core), flush=True)
    runs, totals, differ, (state_bytes, state_counts, state_keys) = run_day()
    ref = totals['reference']
    day = ['| side | runs | CPU, all runs | **CPU ratio** | median CPU per run | wall, all runs | wall ratio | peak RSS | output identical to the reference |',
           '|---|---|---|---|---|---|---|---|---|']
    for who, label in (('reference', 'reference pipeline'), ('command-state', 'command, `--state-dir` (incremental)'),
                       ('command-cold', 'command, no state (a cold run each time)')):
        t = totals[who]
        same = 'the reference' if who == 'reference' else ('%d of %d runs' % (runs - sum(1 for d in differ if d[1] == who), runs))
        day.append('| %s | %d | %.2f s | **%.1f×** | %.3f s | %.2f s | %.1f× | %.1f MiB | %s |' % (
            label, runs, t['cpu'], ref['cpu'] / t['cpu'], statistics.median(t['runs']), t['wall'], ref['wall'] / t['wall'],
            t['rss'], same))
        print(day[-1], flush=True)
    state_line = ('The state after the last run: %d bytes, holding %d counts (address and hour) of %d distinct '
                  'addresses: %.0f bytes per count, %.0f bytes per distinct address.' % (
                      state_bytes, state_counts, state_keys, state_bytes / max(1, state_counts), state_bytes / max(1, state_keys)))
    print(state_line)
    load = 'Load average when the benchmark started: %.2f; when it ended: %.2f.' % (load_before, os.getloadavg()[0])
    with open(os.path.join(ROOT, 'docs', 'benchmarks.md.in')) as f:
        template = f.read()
    text = (template.replace('@MACHINE@', machine()).replace('@DATE@', time.strftime('%Y-%m-%d')).replace('@LOAD@', load)
            .replace('@COLD@', '\n'.join(cold)).replace('@ONE_CORE@', '\n'.join(one_core)).replace('@DAY@', '\n'.join(day)).replace('@STATE@', state_line))
    with open(os.path.join(ROOT, 'docs', 'benchmarks.md'), 'w') as f:
        f.write(text)
    print('wrote docs/benchmarks.md')
    if differ:
        raise SystemExit('outputs differ from the reference: %s' % differ)


if __name__ == '__main__':
    main()
