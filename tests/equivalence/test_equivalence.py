"""The host command against the reference pipeline (tests/reference), on seeded
generated logs: stdout (but the duration), the blocklist and the activity log
(but the dates) must be the same bytes."""
import os
import random
import subprocess
import time

import pytest

import loggen
from conftest import Files, in_timezone, mask_dates, mask_duration, run_core, run_reference

# (seed, time zone, local 'now'). Zones with DST, and the hours around both switches.
CASES = [(seed, 'UTC', None) for seed in range(24)] + [
    (100, 'Europe/Berlin', '2026-03-29 03:20:00'),   # 02:xx does not exist that night
    (101, 'Europe/Berlin', '2026-10-25 02:40:00'),   # 02:xx happens twice
    (102, 'Europe/Berlin', '2026-10-25 03:05:00'),
    (103, 'America/New_York', '2026-11-01 01:30:00'),
    (104, 'Asia/Kolkata', '2026-06-01 00:10:00'),    # half-hour offset, and a day boundary
    (105, 'UTC', '2027-01-01 00:05:00'),             # the previous hour is last year's
    (106, 'Pacific/Auckland', '2026-02-28 23:59:59'),
]


def epoch_of(local, tz):
    out = subprocess.run(['date', '-d', local, '+%s'], env=dict(os.environ, TZ=tz),
                         stdout=subprocess.PIPE, check=True)
    return int(out.stdout)


@pytest.mark.parametrize('seed,tz,local_now', CASES)
def test_command_equals_reference(tmp_path, seed, tz, local_now):
    if local_now is None:
        rng = random.Random(seed)
        local_now = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(1767225600 + rng.randrange(365 * 86400)))
    now = epoch_of(local_now, tz)
    scenario = in_timezone(tz, lambda: loggen.equivalence_scenario(seed, now))
    order = 'shuffled' if seed % 3 == 0 else 'jitter'
    data = in_timezone(tz, lambda: loggen.render(scenario.entries, scenario.rng, order=order, jitter=seed % 60))
    log = tmp_path / 'access.log'
    log.write_bytes(data)
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    for f in (ours, theirs):
        f.blocklist.write_bytes(scenario.blocklist)
        f.exclusions.write_bytes(scenario.exclusions)

    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log,
                        scenario.server_ips, local_now, tz=tz)
    args = ours.options() + ['--now', local_now] + sum((['--server-ip', ip] for ip in scenario.server_ips), []) + [log]
    got = run_core(args, tz=tz)

    assert ref.returncode == 0, ref.stderr
    assert got.returncode == 0, got.stderr
    assert b'Checking the previous hour...' in ref.stdout
    assert mask_duration(got.stdout) == mask_duration(ref.stdout)
    assert ours.read('blocklist') == theirs.read('blocklist')
    ref_activity = theirs.read('activity_log') or b''
    assert mask_dates(ours.read('activity_log') or b'') == mask_dates(ref_activity)
    # The generator must really exercise blocking, listing and the threshold edges.
    assert ref_activity.count(b'\n') >= 1
    assert b'is already blocked.' in ref.stdout or b'allow-listed' in ref.stdout


NUL_NOW = '2026-11-21 04:13:43'
NUL_EPOCH = 1795234423


@pytest.mark.parametrize('name,fields,blocklist,exclusions', [
    # The reference drops every NUL byte of its records in its command substitution (bash:
    # "ignored null byte"), after counting and ranking them with the NULs: a record counted as
    # '\0\0ADDR' is decided, printed and appended as ADDR.
    ('prefix', {b'\x00\x00203.0.113.7': 1200}, b'', b''),
    ('inside', {b'203.0.\x00113.9': 1000, b'2001:db8::\x007': 1100}, b'', b''),
    ('split', {b'\x00198.51.100.3': 600, b'198.51.100.3': 600}, b'', b''),
    ('both over', {b'\x00198.51.100.4': 1000, b'198.51.100.4': 1300}, b'', b''),
    ('listed', {b'\x00\x00203.0.113.7': 1000, b'203.0.113.8\x00': 1000}, b'203.0.113.7\n', b'203.0.113.8\n'),
])
def test_nul_bytes_in_a_record_are_dropped_as_the_reference_drops_them(tmp_path, name, fields, blocklist, exclusions):
    data = in_timezone('UTC', lambda: b''.join(
        loggen.line('10.0.0.1', NUL_EPOCH, path='/jobs/%d' % i).replace(b'10.0.0.1', field, 1)
        for field, count in fields.items() for i in range(count)))
    log = tmp_path / 'access.log'
    log.write_bytes(data)
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    for f in (ours, theirs):
        f.blocklist.write_bytes(blocklist)
        f.exclusions.write_bytes(exclusions)
    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log, ['10.0.0.5'], NUL_NOW)
    got = run_core(ours.options() + ['--now', NUL_NOW, '--server-ip', '10.0.0.5', log])
    assert ref.returncode == got.returncode == 0, got.stderr
    assert mask_duration(got.stdout) == mask_duration(ref.stdout)
    assert ours.read('blocklist') == theirs.read('blocklist')
    assert mask_dates(ours.read('activity_log') or b'') == mask_dates(theirs.read('activity_log') or b'')
    assert b'\x00' not in got.stdout + (ours.read('blocklist') or b'')
