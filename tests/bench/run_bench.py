"""`make bench`: the host command against the reference pipeline (tests/reference) on
generated logs, in one run, with alternating repetitions; median wall time and peak RSS
of each, and their ratio. Writes docs/benchmarks.md.

Peak RSS is that of the largest single process of the command (for the reference, of
its pipeline's processes), as GNU time reports it: wait4(2) run from this process would
report this process's own size, which a forked child inherits. Runs are warm-cache: each
log is read once (by cat) before timing.
"""
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
NOW = '2026-11-21 04:13:43'
CASES = [  # (label, hours, shuffled, repetitions)
    ('24 h, time-ordered', 24, False, 5),
    ('24 h, shuffled (not in time order)', 24, True, 3),
    ('6 h, time-ordered', 6, False, 5),
    ('96 h, time-ordered', 96, False, 3),
]


def log_path(hours, shuffled):
    path = os.path.join(CACHE, 'log%d%s.txt' % (hours, '-shuffled' if shuffled else ''))
    if not os.path.exists(path):
        print('generating %s ...' % path, flush=True)
        subprocess.run([sys.executable, GENERATE, str(hours), path + '.tmp'] + (['--shuffled'] if shuffled else []), check=True)
        os.rename(path + '.tmp', path)
    return path


def measure(argv, env):
    """(wall seconds, peak RSS MiB) of one run, stdout discarded."""
    with tempfile.NamedTemporaryFile('r') as report:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, '-o', report.name, '-f', '%M'] + argv, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit('%s failed: %s' % (argv[0], proc.stderr.decode()))
        return wall, int(report.read().split()[-1]) / 1024.0


def run_case(log, reps):
    scratch = tempfile.mkdtemp()
    try:
        env = dict(os.environ, TZ='UTC', LC_ALL='C')
        results = {'reference': [], 'command': []}
        subprocess.run(['cat', log], stdout=subprocess.DEVNULL, check=True)     # warm the page cache
        for rep in range(reps):
            order = ('reference', 'command') if rep % 2 == 0 else ('command', 'reference')
            for who in order:
                d = os.path.join(scratch, '%s-%d' % (who, rep))
                os.mkdir(d)
                lists = [os.path.join(d, n) for n in ('blocklist', 'exclusions', 'activity.log')]
                if who == 'reference':
                    run_env = dict(env, BD_BLOCKLIST=lists[0], BD_EXCLUSIONS=lists[1], BD_ACTIVITY_LOG=lists[2],
                                   BD_SERVER_IP='10.0.0.5', BD_NOW=NOW)
                    results[who].append(measure([REFERENCE, log], run_env))
                else:
                    results[who].append(measure([sys.executable, CORE, '--blocklist', lists[0], '--exclusions', lists[1],
                                                 '--activity-log', lists[2], '--server-ip', '10.0.0.5', '--now', NOW, log], env))
        return dict((who, (statistics.median(w for w, m in runs), max(m for w, m in runs))) for who, runs in results.items())
    finally:
        shutil.rmtree(scratch)


def machine():
    model = 'unknown CPU'
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    with open('/proc/meminfo') as f:
        mem_kb = int(f.readline().split()[1])
    return '%s, %d cores, %.0f GiB RAM; Linux %s; Python %s; %s' % (
        model, os.cpu_count(), mem_kb / 1024 / 1024, platform.release(), platform.python_version(),
        subprocess.run(['grep', '--version'], stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()[0])


def main():
    os.makedirs(CACHE, exist_ok=True)
    rows = []
    for label, hours, shuffled, reps in CASES:
        log = log_path(hours, shuffled)
        size = os.path.getsize(log)
        result = run_case(log, reps)
        ref_wall, ref_rss = result['reference']
        cmd_wall, cmd_rss = result['command']
        rows.append((label, size, reps, ref_wall, cmd_wall, ref_wall / cmd_wall, ref_rss, cmd_rss))
        print('%-36s %7.0f MB  reference %.3f s  command %.3f s  speed-up %.1fx  peak RSS %.1f / %.1f MiB' % (
            label, size / 1e6, ref_wall, cmd_wall, ref_wall / cmd_wall, ref_rss, cmd_rss), flush=True)
    table = ['| log | size | runs | reference: median wall | command: median wall | speed-up | reference: peak RSS | command: peak RSS |',
             '|---|---|---|---|---|---|---|---|']
    for label, size, reps, ref_wall, cmd_wall, ratio, ref_rss, cmd_rss in rows:
        table.append('| %s | %.0f MB | %d + %d | %.3f s | %.3f s | **%.1f×** | %.1f MiB | %.1f MiB |' % (
            label, size / 1e6, reps, reps, ref_wall, cmd_wall, ratio, ref_rss, cmd_rss))
    with open(os.path.join(ROOT, 'docs', 'benchmarks.md.in')) as f:
        template = f.read()
    text = template.replace('@MACHINE@', machine()).replace('@DATE@', time.strftime('%Y-%m-%d')).replace('@TABLE@', '\n'.join(table))
    with open(os.path.join(ROOT, 'docs', 'benchmarks.md'), 'w') as f:
        f.write(text)
    print('wrote docs/benchmarks.md')


if __name__ == '__main__':
    main()
