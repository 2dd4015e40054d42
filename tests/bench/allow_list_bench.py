"""A 100,000-line allow-list, read again and again (issue 44, item 9): a follower rechecks its
enforcement every 5 s and decides every few seconds, each time with the allow-list.

Measures in one /usr/bin/python3 process, CPU time (time.process_time), median of ROUNDS:
- the parse of the file, as every sync and every precise decision made it before: the
  enforcement's never-blocked spans (decision.never_blocked.NeverBlocked, read with sync's
  line reading), the precise rules' networks (decision.ranges.Networks);
- the same while the file is unchanged: the enforcement reads and hashes it (NeverBlocked keeps
  the spans of the same lines), the precise rules stat it (lists.content.parsed_list);
- and once the file was appended to: the parse again (the first use after a change).
The share of a core a follower pays for it at a recheck every 5 s follows from both.
Rewrites its section of docs/benchmarks.md (between the allow-list markers). Not part of make
test: it measures, it does not judge.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time

import run_bench

sys.path.insert(0, os.path.join(run_bench.ROOT, '.build'))
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.ranges import Networks  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import never_blocked  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.precise import PreciseRules  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import sync  # noqa: E402
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import content  # noqa: E402

LINES = 100000
RECHECK_SECONDS = 5


def allow_list(path, lines, seed=44):
    """A third each: IPv4 addresses, IPv4 /24 networks, IPv6 addresses."""
    rng = random.Random(seed)
    with open(path, 'w') as handle:
        for i in range(lines):
            if i % 3 == 0:
                handle.write('10.%d.%d.0/24\n' % (rng.randrange(256), rng.randrange(256)))
            elif i % 3 == 1:
                handle.write('2001:db8:%x::%x\n' % (rng.randrange(65536), rng.randrange(65536)))
            else:
                handle.write('192.%d.%d.%d\n' % (rng.randrange(256), rng.randrange(256), rng.randrange(256)))


def exempt_spans(path):
    """What a sync makes of the allow-list: its digest (the load's, enforce.sync.digest_of), then its
    never-blocked spans, merged (kept for the process under that digest)."""
    exempt = never_blocked.NeverBlocked([], never_blocked.read_allow_list(path), sync._span)  # pylint: disable=protected-access
    assert exempt.key
    return exempt.spans


def exempt_spans_afresh(path):
    never_blocked._KEPT.clear()     # pylint: disable=protected-access
    return exempt_spans(path)


def networks_kept(path):
    return content.parsed_list(path, PreciseRules.parse_exclusions)


def networks_afresh(path):
    return Networks(content.read_list(path))


def cpu(fn, rounds):
    """Median CPU seconds of ``fn()`` over ``rounds``."""
    found = []
    for dummy in range(rounds):
        started = time.process_time()
        fn()
        found.append(time.process_time() - started)
    return statistics.median(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--no-write', action='store_true')
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix='bd-allow-bench-')
    try:
        path = os.path.join(scratch, 'allow.txt')
        allow_list(path, LINES)
        rows = ['| what is made of it | parsed at every use (before) | kept while unchanged: a recheck | after an append '
                '| a follower\'s share of a core, a recheck every %d s: before / now |' % RECHECK_SECONDS,
                '|---|---|---|---|---|']
        for name, afresh, kept_use in (('enforcement: never-blocked spans (a sync)', exempt_spans_afresh, exempt_spans),
                                       ('precise rules: networks (run.py: every decision)', networks_afresh, networks_kept)):
            before = cpu(lambda: afresh(path), args.rounds)       # noqa: B023
            kept_use(path)
            kept = cpu(lambda: [kept_use(path) for dummy in range(100)], args.rounds) / 100   # noqa: B023

            def appended():
                with open(path, 'a') as handle:
                    handle.write('192.0.2.%d\n' % random.randrange(256))
                kept_use(path)        # noqa: B023
            after = cpu(appended, args.rounds)
            rows.append('| %s | %.0f ms | %.3f ms (%.0f× less) | %.0f ms | %.2f %% / %.4f %% |' % (
                name, before * 1000, kept * 1000, before / kept, after * 1000,
                100 * before / RECHECK_SECONDS, 100 * kept / RECHECK_SECONDS))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = '\n'.join(rows)
    print(table)
    if args.no_write:
        return
    section = ('<!-- BEGIN allow-list (generated by tests/bench/allow_list_bench.py) -->\n'
               '`make bench` runs `tests/bench/allow_list_bench.py`: a %s-line allow-list (a third each IPv4 addresses, '
               'IPv4 /24 networks, IPv6 addresses), CPU time (user + system) of one `/usr/bin/python3` process, median '
               'of %d rounds, on %s. "Before" parses the file at every use, as every sync and every precise decision '
               'did; now a sync reads and hashes the file and keeps its spans while its lines are the same '
               '(`decision/never_blocked.py`), and the precise rules keep their parse while the file keeps its identity, size, '
               'modification and change times (`lists.content.parsed_list`). The reference greps the file at every use.\n\n%s\n<!-- END allow-list -->'
               % ('{:,}'.format(LINES), args.rounds, run_bench.machine(), table))
    for doc in ('benchmarks.md', 'benchmarks.md.in'):
        target = os.path.join(run_bench.ROOT, 'docs', doc)
        if not os.path.exists(target):
            continue
        text = open(target).read()
        if '<!-- BEGIN allow-list' in text:
            text = re.sub(r'<!-- BEGIN allow-list.*?<!-- END allow-list -->', lambda m: section, text, flags=re.S)
        else:
            text = text.rstrip('\n') + '\n\n## A large allow-list, read again and again\n\n' + section + '\n'
        with open(target, 'w') as handle:
            handle.write(text)
    print('wrote the allow-list section of docs/benchmarks.md')


if __name__ == '__main__':
    sys.exit(main())
