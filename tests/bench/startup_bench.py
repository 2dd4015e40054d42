"""Start-up of the host command, as cron pays it 144 times a day on every host.

Measures, interleaved, the CPU time (user + system, of the process) of:
- the floor: ``/usr/bin/python3 -S -c 'import argparse, json, re'``, what any command line
  in Python pays;
- ``bot-detector.sh --version`` (the command line built from the settings table, nothing
  more), and a default cron run on an empty log (combined, the spec's rules, state_dir:
  everything a run loads, nothing read);
each for this tree and, with ``--before REV``, for the core as it was at REV (taken out of
git into a scratch directory). Also lists, with ``python3 -X importtime``, what the cron run
imports of the core. Rewrites its section of docs/benchmarks.md (between the start-up
markers). Not part of make test: it measures, it does not judge.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

import run_bench

PYTHON = '/usr/bin/python3'
FLOOR = [PYTHON, '-S', '-c', 'import argparse, json, re']


def cpu_ms(argv, cwd, env):
    """CPU milliseconds (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000.0 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def core_at(rev, scratch):
    """The core package as it was at ``rev``: its directory in ``scratch``."""
    archive = subprocess.run(['git', 'archive', rev, 'plugins/module_utils/bot_detector'], cwd=run_bench.ROOT,
                             stdout=subprocess.PIPE, check=True).stdout
    path = os.path.join(scratch, 'archive.tar')
    with open(path, 'wb') as handle:
        handle.write(archive)
    with tarfile.open(path) as tar:
        tar.extractall(os.path.join(scratch, rev))
    return os.path.join(scratch, rev, 'plugins', 'module_utils', 'bot_detector')


def commands(core, scratch, name):
    """{case: argv} of one core."""
    files = os.path.join(scratch, name)
    os.makedirs(files)
    log = os.path.join(files, 'access.log')
    open(log, 'wb').close()
    main = [PYTHON, '-S', os.path.join(core, '__main__.py')]
    run = main + ['--blocklist', os.path.join(files, 'blocklist'), '--exclusions', os.path.join(files, 'exclusions'),
                  '--activity-log', os.path.join(files, 'activity.log'), '--server-ip', '10.0.0.5',
                  '--state-dir', os.path.join(files, 'state'), '--now', '2026-11-21 04:13:43', log]
    return {'--version': main + ['--version'], 'cron run, empty log': run}


def cron_imports(argv, env):
    """The core's modules a run imports, and their number."""
    out = subprocess.run([argv[0], '-X', 'importtime'] + argv[1:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         check=True).stderr.decode()
    return sorted(set(m for m in re.findall(r'\|\s+(bot_detector[\w.]*)\s*$', out, re.M)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--before', help='a git revision whose core is measured beside this one')
    parser.add_argument('--rounds', type=int, default=60)
    parser.add_argument('--no-write', action='store_true')
    args = parser.parse_args()
    # As on a host after its first run: the .pyc files written (where PYTHONDONTWRITEBYTECODE is
    # set, every run would compile the whole core, and that is what would be measured).
    env = dict((k, v) for k, v in os.environ.items() if k != 'PYTHONDONTWRITEBYTECODE')
    env.update(TZ='UTC', LC_ALL='C')
    scratch = tempfile.mkdtemp(prefix='bd-startup-')
    try:
        cores = {'now': run_bench.CORE}
        if args.before:
            cores['before'] = core_at(args.before, scratch)
        for core in cores.values():
            subprocess.run([PYTHON, '-m', 'compileall', '-q', core], env=env, check=True)
        cases = {('floor', 'floor'): FLOOR}
        for name, core in cores.items():
            for case, argv in commands(core, scratch, name).items():
                cases[(name, case)] = argv
        times = dict((key, []) for key in cases)
        for argv in cases.values():        # warm-up: the files' pages and the .pyc files
            cpu_ms(argv, scratch, env)
        for dummy in range(args.rounds):
            for key, argv in cases.items():
                times[key].append(cpu_ms(argv, scratch, env))
        medians = dict((key, statistics.median(values)) for key, values in times.items())
        imported = dict((name, cron_imports(cases[(name, 'cron run, empty log')], env)) for name in cores)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor = medians[('floor', 'floor')]
    rows = ['| core | case | CPU, median of %d (ms) | over the floor (ms) | core modules imported |' % args.rounds,
            '|---|---|---|---|---|',
            '| (the floor) | `python3 -S -c \'import argparse, json, re\'` | %.1f | 0 | |' % floor]
    for name in cores:
        label = 'this tree' if name == 'now' else 'before (%s)' % args.before
        for case in ('--version', 'cron run, empty log'):
            value = medians[(name, case)]
            modules = len(imported[name]) if case != '--version' else ''
            rows.append('| %s | %s | %.1f | %+.1f | %s |' % (label, case, value, value - floor, modules))
    table = '\n'.join(rows)
    print(table)
    print('\nthe cron run imports (this tree): ' + ', '.join(imported['now']))
    if args.no_write:
        return
    section = ('<!-- BEGIN startup (generated by tests/bench/startup_bench.py) -->\n'
               '`make bench` runs `tests/bench/startup_bench.py --before %s`: the CPU time (user + system) of the host '
               'command\'s start, with `/usr/bin/python3 -S` as the role runs it, against the floor of any Python '
               'command line, all cases interleaved, %d rounds, on %s. "before" is the core as it was at %s (the flat '
               'layout of 37 files, before the stages). The cron run reads an empty log with `--state-dir`: all it '
               'loads, nothing read. The .pyc files are written first, as a host\'s first run writes them.\n\n%s\n<!-- END startup -->'
               % (args.before, args.rounds, run_bench.machine(), args.before, table))
    for doc in ('benchmarks.md', 'benchmarks.md.in'):
        path = os.path.join(run_bench.ROOT, 'docs', doc)
        text = open(path).read()
        if '<!-- BEGIN startup' in text:
            text = re.sub(r'<!-- BEGIN startup.*?<!-- END startup -->', lambda m: section, text, flags=re.S)
        else:
            text = text.rstrip('\n') + '\n\n## Start-up\n\n' + section + '\n'
        with open(path, 'w') as handle:
            handle.write(text)
    print('wrote the start-up section of docs/benchmarks.md')


if __name__ == '__main__':
    sys.exit(main())
