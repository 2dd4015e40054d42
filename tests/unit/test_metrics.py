"""--metrics-file: Prometheus text format, read here by prometheus_client's parser; written
atomically after every run; one file shared by the runs of several logs, unblocks and
the fleet's applies."""
import json
import os
import stat
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import loggen
from conftest import in_timezone, run_core
from test_expiry import added
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run as entry
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
FAMILIES = {
    'bot_detector_last_run_timestamp_seconds': 'gauge', 'bot_detector_last_run_success': 'gauge',
    'bot_detector_last_run_duration_seconds': 'gauge', 'bot_detector_last_run_read_bytes': 'gauge',
    'bot_detector_last_run_read_lines': 'gauge', 'bot_detector_last_run_top_requests': 'gauge',
    'bot_detector_threshold': 'gauge', 'bot_detector_additions': 'counter', 'bot_detector_removals': 'counter',
    'bot_detector_blocklist_entries': 'gauge', 'bot_detector_list_unreadable': 'gauge',
    'bot_detector_follow_behind_seconds': 'gauge', 'bot_detector_follow_behind_bytes': 'gauge',
    'bot_detector_follow_unparsed_lines': 'gauge',
}


def metrics(path):
    """{sample name: {frozenset(labels): value}}, parsed by prometheus_client; every family
    has its HELP and TYPE."""
    samples = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.documentation and FAMILIES[family.name] == family.type, family
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples


def value(found, name, **labels):
    return found[name][frozenset(labels.items())]


def write_log(path, **windows):
    path.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, **windows)))
    return path


def detect(files, log, prom, *extra):
    return run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom]
                    + list(extra) + [log])


def test_metrics_of_runs_of_two_logs_an_unblock_and_a_failure(tmp_path, files):
    prom = tmp_path / 'bot_detector.prom'
    first = write_log(tmp_path / 'a.log', previous={'203.0.113.7': 1450, '198.51.100.9': 20}, current={'2001:db8::7': 1000})
    second = write_log(tmp_path / 'b.log', current={'192.0.2.33': 1100})
    files.blocklist.write_bytes(b'# feed\n192.0.2.1\n')
    started = time.time()
    got = detect(files, first, prom, '--full-scan')
    assert got.returncode == 0 and got.stderr == b'', got.stderr
    found = metrics(prom)
    log = str(first)
    assert value(found, 'bot_detector_last_run_success', log=log) == 1
    assert started <= value(found, 'bot_detector_last_run_timestamp_seconds', log=log) <= time.time()
    assert 0 <= value(found, 'bot_detector_last_run_duration_seconds', log=log) < 60
    assert value(found, 'bot_detector_last_run_read_bytes', log=log) == first.stat().st_size
    assert value(found, 'bot_detector_last_run_read_lines', log=log) == first.read_bytes().count(b'\n') == 2470
    assert value(found, 'bot_detector_last_run_top_requests', log=log, window='previous') == 1450
    assert value(found, 'bot_detector_last_run_top_requests', log=log, window='current') == 1000
    assert value(found, 'bot_detector_threshold', log=log) == 1000
    assert found['bot_detector_additions_total'] == {frozenset({('reason', 'own')}): 2, frozenset({('reason', 'fleet')}): 0,
                                                     frozenset({('reason', 'sync')}): 0}
    assert value(found, 'bot_detector_removals_total', reason='unblock') == 0
    assert value(found, 'bot_detector_blocklist_entries') == 3
    assert value(found, 'bot_detector_list_unreadable', list='exclusions') == 0
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    inode = prom.stat().st_ino

    # The other log's run keeps the first one's series and adds to the counters.
    assert detect(files, second, prom, '--threshold', '1100').returncode == 0
    found = metrics(prom)
    assert value(found, 'bot_detector_last_run_top_requests', log=log, window='previous') == 1450
    assert value(found, 'bot_detector_last_run_top_requests', log=str(second), window='current') == 1100
    assert value(found, 'bot_detector_threshold', log=str(second)) == 1100
    assert value(found, 'bot_detector_additions_total', reason='own') == 3
    assert value(found, 'bot_detector_blocklist_entries') == 4
    assert prom.stat().st_ino != inode                  # replaced, never rewritten in place

    # An unblock counts its removals.
    got = run_core(files.options() + ['--metrics-file', prom, '--unblock', '203.0.113.7', '--unblock', '192.0.2.1'])
    assert got.returncode == 0
    found = metrics(prom)
    assert value(found, 'bot_detector_removals_total', reason='unblock') == 2
    assert value(found, 'bot_detector_blocklist_entries') == 2
    assert value(found, 'bot_detector_last_run_success', log=str(second)) == 1

    # A failed run: success 0, its other series gone, the counters kept.
    second.chmod(0o000)
    os.rename(str(second), str(second) + '.gone')
    failed = detect(files, second, prom)
    assert failed.returncode == 1
    found = metrics(prom)
    assert value(found, 'bot_detector_last_run_success', log=str(second)) == 0
    assert frozenset({('log', str(second))}) not in found['bot_detector_last_run_read_bytes']
    assert value(found, 'bot_detector_additions_total', reason='own') == 3

    # Check mode writes no metrics.
    before = prom.read_bytes()
    assert detect(files, first, prom, '--check').returncode == 0
    assert prom.read_bytes() == before


def test_expiry_and_the_fleets_applies_are_counted(tmp_path, files):
    prom = tmp_path / 'm.prom'
    files.blocklist.write_bytes(b'203.0.113.1\n')
    files.activity_log.write_bytes(added('203.0.113.1', 3))
    log = write_log(tmp_path / 'a.log', previous={'198.51.100.1': 3})
    assert detect(files, log, prom, '--ban-time', '1h').returncode == 0
    assert value(metrics(prom), 'bot_detector_removals_total', reason='expired') == 1
    chosen = settings.Settings(blocklist=str(files.blocklist), exclusions=str(files.exclusions),
                               activity_log=str(files.activity_log), metrics_file=str(prom))
    entry.apply(chosen, [{'address': '192.0.2.7', 'count': 3000, 'reason': 'fleet'},
                         {'address': '192.0.2.8', 'count': 1200, 'reason': 'sync'}])
    found = metrics(prom)
    assert value(found, 'bot_detector_additions_total', reason='fleet') == 1
    assert value(found, 'bot_detector_additions_total', reason='sync') == 1
    assert value(found, 'bot_detector_blocklist_entries') == 2
    assert value(found, 'bot_detector_last_run_success', log=str(log)) == 1


def test_series_of_a_log_no_run_renewed_for_a_day_are_dropped(tmp_path, files):
    prom = tmp_path / 'm.prom'
    now = time.time()
    prom.write_text(
        '# HELP bot_detector_last_run_success x\n# TYPE bot_detector_last_run_success gauge\n'
        'bot_detector_last_run_success{log="/old \\"quoted\\" \\\\ log"} 1\n'
        'bot_detector_last_run_success{log="/recent.log"} 1\n'
        'bot_detector_last_run_timestamp_seconds{log="/old \\"quoted\\" \\\\ log"} %d\n'
        'bot_detector_last_run_timestamp_seconds{log="/recent.log"} %d\n'
        'bot_detector_additions_total{reason="own"} 41\n' % (now - 2 * 86400, now - 3600))
    log = write_log(tmp_path / 'a.log', previous={'203.0.113.7': 1000})
    assert detect(files, log, prom).returncode == 0
    found = metrics(prom)
    assert set(dict(labels)['log'] for labels in found['bot_detector_last_run_success']) == {'/recent.log', str(log)}
    assert value(found, 'bot_detector_additions_total', reason='own') == 42


def test_an_unwritable_metrics_file_is_a_warning_not_a_failure(tmp_path, files):
    log = write_log(tmp_path / 'a.log', previous={'203.0.113.7': 1000})
    prom = tmp_path / 'missing-dir' / 'm.prom'
    got = detect(files, log, prom)
    assert got.returncode == 0
    assert got.stdout.split(b'\n')[1] == b'Blocking IP address: 203.0.113.7 (1000 requests)'
    assert got.stderr == b'bot-detector: warning: metrics not written: cannot replace %s: No such file or directory\n' % bytes(prom)
    assert files.read('blocklist') == b'203.0.113.7\n'


@pytest.mark.parametrize('stamped_part', ['first', 'last', 'none'])
def test_lines_and_stamps_are_counted_across_forked_workers(tmp_path, monkeypatch, stamped_part):
    """The lines read, and whether any carries an access-log timestamp, add up over the forked
    workers' parts as over one process's reading."""
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 4096)
    monkeypatch.setattr(chunks, 'READ_CHUNK', 4096)
    monkeypatch.setattr(chunks, 'idle_cores', lambda: 3)             # workers fork, whatever the load
    forks = []
    real_fork = os.fork

    def fork():
        forks.append(1)
        return real_fork()
    monkeypatch.setattr(os, 'fork', fork)
    monkeypatch.setenv('TZ', 'UTC')
    time.tzset()
    plain = b''.join(b'203.0.113.%d - - 2026-11-21T03:10:00Z "GET /job/%d HTTP/1.1" 200 1 "-" "x"\n' % (i % 200, i)
                     for i in range(3000))
    stamped = loggen.planted_log(NOW_EPOCH, previous={'198.51.100.1': 40})
    content = {'first': stamped + plain, 'last': plain + stamped, 'none': plain + b'no final newline'}[stamped_part]
    log = tmp_path / 'access.log'
    log.write_bytes(content)
    paths = dict((name, str(tmp_path / name)) for name in ('blocklist', 'exclusions', 'activity_log'))
    chosen = settings.Settings(server_ips=['10.0.0.5'], seek=False, metrics_file=str(tmp_path / 'm.prom'), **paths)
    result = entry.detect(chosen, [str(log)], now=NOW_EPOCH, check_mode=True)
    (scan,) = result.as_dict()['scans']
    assert len(forks) == 2
    assert scan['lines'] == content.count(b'\n') + (0 if content.endswith(b'\n') else 1)
    # Without a metrics file the lines are not counted: that pass is saved.
    unmetered = entry.detect(settings.Settings(server_ips=['10.0.0.5'], seek=False, **paths), [str(log)], now=NOW_EPOCH,
                             check_mode=True)
    time.tzset()
    assert unmetered.as_dict()['scans'][0]['lines'] is None and unmetered.warnings == result.warnings
    assert bool(result.warnings) == (stamped_part == 'none')
    assert json.dumps(result.as_dict())


def test_runs_with_a_state_report_the_lines_they_read(tmp_path, files):
    """With --state-dir a run reads only what was appended since the last one: its metrics say
    so (a cold first run, the appended lines, nothing, a half-written line, a rotation)."""
    prom, state = tmp_path / 'm.prom', tmp_path / 'state'
    log = write_log(tmp_path / 'a.log', previous={'203.0.113.7': 1450, '198.51.100.9': 20})
    total = log.read_bytes().count(b'\n')

    def run(*extra):
        got = detect(files, log, prom, '--state-dir', state, '--rotated', *extra)
        assert got.returncode == 0 and got.stderr == b'', got.stderr
        found = metrics(prom)
        return (value(found, 'bot_detector_last_run_read_lines', log=str(log)),
                value(found, 'bot_detector_last_run_read_bytes', log=str(log)))
    assert run() == (total, log.stat().st_size)
    more = in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, current={'192.0.2.40': 30}))
    with open(str(log), 'ab') as handle:
        handle.write(more)
    assert run() == (more.count(b'\n'), len(more))
    assert run() == (0, 0)
    half = more.split(b'\n')[0][:40]                         # a line the web server is still writing
    with open(str(log), 'ab') as handle:
        handle.write(half)
    assert run() == (1, len(half))
    rotated = str(log) + '.1'
    os.rename(str(log), rotated)                             # logrotate: the old file goes on as LOG.1
    with open(rotated, 'ab') as handle:
        handle.write(more.split(b'\n', 1)[0][40:] + b'\n')  # its writer finishes the line there
    log.write_bytes(more)
    assert run()[0] == 1 + more.count(b'\n')
