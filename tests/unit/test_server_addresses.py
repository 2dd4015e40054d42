"""The server's own addresses (issue 10, finding 10). One address: the spec's rule, records
holding it as a substring are dropped (tested against the reference in tests/equivalence).
Several (`hostname -i` printing `::1 127.0.1.1`): each is matched as a whole address, never
as a substring of another, against an independent oracle (sort, uniq, awk)."""
import os
import random
import subprocess

import loggen
from conftest import CORE, Files, in_timezone, mask_duration, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def oracle(addresses, servers, top):
    """sort | uniq -c | sort -nr, then awk drops the records whose address is one of
    ``servers`` exactly, then head."""
    program = '!(%s)' % ' || '.join('$2 == "%s"' % server.decode() for server in servers)
    out = subprocess.run('sort | uniq -c | sort -nr | awk \'%s\' | head -n %d' % (program, top), shell=True,
                         input=b''.join(a + b'\n' for a in addresses), stdout=subprocess.PIPE,
                         env=dict(os.environ, LC_ALL='C'), check=True).stdout
    return [(int(count), address) for count, address in (line.split() for line in out.splitlines())]


def test_several_server_addresses_are_whole_addresses():
    rng = random.Random(10)
    pool = [b'::1', b'127.0.1.1', b'2001:db8::1a', b'2001:db8::1', b'127.0.1.10', b'10.0.0.5', b'::10', b'1::1']
    pool += [b'198.51.100.%d' % i for i in range(30)]
    addresses = [rng.choice(pool) for dummy in range(6000)]
    counter = {}
    for address in addresses:
        counter[address] = counter.get(address, 0) + 1
    for servers in ([b'::1', b'127.0.1.1'], [b'::1', b'127.0.1.1', b'10.0.0.5'], [b'2001:db8::1', b'1::1']):
        for top in (5, 20, 100):
            assert rules.top_records(counter, servers, top) == oracle(addresses, servers, top)
    kept = [address for count, address in rules.top_records(counter, [b'::1', b'127.0.1.1'], 100)]
    assert b'2001:db8::1a' in kept and b'127.0.1.10' in kept and b'::10' in kept
    assert b'::1' not in kept and b'127.0.1.1' not in kept


def test_several_server_addresses_match_in_any_spelling():
    counter = {b'2001:db8::5': 3000, b'2001:DB8:0::5': 2000, b'2001:db8::50': 1000}
    assert rules.top_records(counter, [b'2001:db8:0:0::5', b'127.0.1.1'], 20) == [(1000, b'2001:db8::50')]


def test_one_server_address_keeps_the_spec_substring_rule():
    counter = {b'10.0.0.5': 5000, b'10.0.0.51': 4000, b'110.0.0.5': 3000, b'8.8.8.8': 2000}
    assert rules.top_records(counter, [b'10.0.0.5'], 20) == [(2000, b'8.8.8.8')]


def test_hostname_i_printing_several_addresses(tmp_path):
    """The finding as it happens: `hostname -i` prints `::1 127.0.1.1`; 2001:db8::1a must be
    examined and blocked, the two server addresses never."""
    fake = tmp_path / 'bin'
    fake.mkdir()
    (fake / 'hostname').write_text('#!/bin/sh\necho "::1 127.0.1.1"\n')
    (fake / 'hostname').chmod(0o755)
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={
        '2001:db8::1a': 1500, '::1': 5000, '127.0.1.1': 4000, '127.0.1.10': 1200})))
    files = Files(tmp_path / 'files')
    env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8', PATH='%s:%s' % (fake, os.environ['PATH']))
    import sys
    got = subprocess.run([sys.executable, str(CORE)] + [str(a) for a in files.options()] + ['--now', NOW, str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
    assert got.returncode == 0, got.stderr
    assert mask_duration(got.stdout).decode().splitlines() == [
        'Checking the previous hour...',
        'Blocking IP address: 2001:db8::1a (1500 requests)',
        'Blocking IP address: 127.0.1.10 (1200 requests)',
        'Checking the current hour...',
        'Execution time: N seconds',
    ]
    # The spec itself drops the records holding the whole text '::1 127.0.1.1': none, so
    # it blocks the server's own addresses too (the reference, given that text).
    ref_files = Files(tmp_path / 'reference')
    ref = run_reference(log, ref_files.blocklist, ref_files.exclusions, ref_files.activity_log, ['::1', '127.0.1.1'], NOW)
    assert b'Blocking IP address: ::1 (5000 requests)' in ref.stdout
