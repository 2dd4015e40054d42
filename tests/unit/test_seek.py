"""Seeking to the windows, rotated logs and several logs: the results must be the
full scan's (and so the reference's) whenever lines are out of order by no more than
the margin, and the seek must really skip the old part of the log."""
import gzip
import json
import os

import pytest
from hypothesis import Phase, given, settings, strategies as st

import loggen
from conftest import Files, in_timezone, mask_duration, run_core, run_reference

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SERVER = ['10.0.0.5']


def with_utc(fn):
    return in_timezone('UTC', fn)


def old_traffic(rng, hours_back, count):
    """Ordinary requests from ``hours_back`` hours before NOW up to three hours before."""
    start = NOW_EPOCH - hours_back * 3600
    return [(start + i * (hours_back - 3) * 3600 // count,
             loggen.line(loggen.ipv4(rng), start + i * (hours_back - 3) * 3600 // count, path='/job/%d' % i))
            for i in range(count)]


def run_json(tmp_path, name, log, extra=()):
    files = Files(tmp_path / name)
    logs = [str(l) for l in (log if isinstance(log, list) else [log])]
    proc = run_core(files.options() + ['--server-ip', SERVER[0], '--now', NOW, '--json'] + list(extra) + logs)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), files


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no slow shrinking
@given(seed=st.integers(0, 10 ** 6), jitter=st.integers(0, 600))
def test_seek_equals_full_scan_equals_reference(tmp_path_factory, seed, jitter):
    tmp_path = tmp_path_factory.mktemp('seek')

    def build():
        scenario = loggen.equivalence_scenario(seed, NOW_EPOCH)
        scenario.entries += old_traffic(scenario.rng, 30, 40000)
        return scenario, loggen.render(scenario.entries, scenario.rng, order='jitter', jitter=jitter)
    scenario, data = with_utc(build)
    log = tmp_path / 'access.log'
    log.write_bytes(data)
    results = {}
    for name, extra in (('seek', []), ('full', ['--full-scan'])):
        files = Files(tmp_path / name)
        files.blocklist.write_bytes(scenario.blocklist)
        files.exclusions.write_bytes(scenario.exclusions)
        proc = run_core(files.options() + ['--server-ip', scenario.server_ips[0], '--now', NOW] + extra + [log])
        assert proc.returncode == 0, proc.stderr
        results[name] = (mask_duration(proc.stdout), files.read('blocklist'))
    reference = Files(tmp_path / 'reference')
    reference.blocklist.write_bytes(scenario.blocklist)
    reference.exclusions.write_bytes(scenario.exclusions)
    ref = run_reference(log, reference.blocklist, reference.exclusions, reference.activity_log, scenario.server_ips[:1], NOW)
    assert results['seek'] == results['full'] == (mask_duration(ref.stdout), reference.read('blocklist'))
    # ... and the seek did skip the old traffic.
    doc, dummy = run_json(tmp_path, 'scan', log, ['--check'])
    assert doc['scans'][0]['mode'] == 'seek'
    assert doc['scans'][0]['bytes_read'] < len(data) * 0.8


def test_out_of_order_log_falls_back_to_full_scan(tmp_path):
    def build():
        scenario = loggen.equivalence_scenario(5, NOW_EPOCH)
        scenario.entries += old_traffic(scenario.rng, 30, 20000)
        return loggen.render(scenario.entries, scenario.rng, order='shuffled')
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(build))
    seek, dummy = run_json(tmp_path, 'a', log)
    full, dummy = run_json(tmp_path, 'b', log, ['--full-scan'])
    assert seek['scans'][0]['mode'] == 'full' and seek['scans'][0]['bytes_read'] == os.path.getsize(log)
    assert seek['windows'] == full['windows'] and seek['messages'][:-1] == full['messages'][:-1]


def test_disorder_beyond_the_margin_is_detected(tmp_path):
    # A block of the previous hour written far after its time: a seek would miss it.
    def build():
        rng = loggen.random.Random(3)
        entries = old_traffic(rng, 20, 20000)
        late = b''.join(loggen.line('203.0.113.7', NOW_EPOCH - 3000, path='/job/%d' % i) for i in range(1200))
        body = b''.join(data for dummy, data in sorted(entries))
        middle = body.index(b'\n', len(body) // 2) + 1
        return body[:middle] + late + body[middle:]
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(build))
    doc, dummy = run_json(tmp_path, 'a', log)
    assert doc['scans'][0]['mode'] == 'full'
    assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1200, 'window': 'previous'}]


def test_rotated_log_is_read_after_logrotate(tmp_path):
    # logrotate ran at 04:00: the previous hour is in access.log.1, the current in access.log.
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(lambda: loggen.planted_log(NOW_EPOCH, current={'198.51.100.1': 600})))
    rotated = with_utc(lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1100, '198.51.100.1': 500}))
    for name in ('access.log.1', 'access.log.1.gz'):
        for other in ('access.log.1', 'access.log.1.gz'):
            if (tmp_path / other).exists():
                (tmp_path / other).unlink()
        (tmp_path / name).write_bytes(gzip.compress(rotated) if name.endswith('.gz') else rotated)
        without, dummy = run_json(tmp_path, 'without-' + name, log)
        assert without['blocked'] == [] and len(without['scans']) == 1
        doc, files = run_json(tmp_path, 'with-' + name, log, ['--rotated'])
        assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1100, 'window': 'previous'}]
        assert [s['path'] for s in doc['scans']] == [str(log), str(tmp_path / name)]
        assert doc['scans'][1]['mode'] == ('full-gzip' if name.endswith('.gz') else 'seek')


def test_rotated_log_is_not_read_when_the_log_covers_the_windows(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(lambda: b''.join(data for dummy, data in sorted(old_traffic(loggen.random.Random(1), 8, 100)))
                             + loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1000})))
    (tmp_path / 'access.log.1').write_bytes(with_utc(lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.8': 5000})))
    doc, dummy = run_json(tmp_path, 'a', log, ['--rotated'])
    assert [s['path'] for s in doc['scans']] == [str(log)]
    assert [b['address'] for b in doc['blocked']] == ['203.0.113.7']


def test_several_logs_are_summed(tmp_path):
    first, second = tmp_path / 'a.log', tmp_path / 'b.log'
    first.write_bytes(with_utc(lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 600})))
    second.write_bytes(with_utc(lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 400})))
    doc, files = run_json(tmp_path, 'a', [first, second])
    assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1000, 'window': 'previous'}]
    assert files.read('blocklist') == b'203.0.113.7\n'


def test_parallel_parts_count_what_one_process_counts(tmp_path, monkeypatch):
    """Forked workers over line-aligned parts, with chunks far smaller than lines at times."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock, errors
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

    def build():
        scenario = loggen.equivalence_scenario(11, NOW_EPOCH)
        return loggen.render(scenario.entries, scenario.rng, order='shuffled')
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(build))
    windows = clock.hour_windows(NOW_EPOCH)
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    counted = tally.count_windows([str(log)], windows, line_filter)
    single, dummy = counted.counters, counted.scans
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1)
    monkeypatch.setattr(chunks, 'MAX_WORKERS', 4)
    monkeypatch.setattr(chunks, 'idle_cores', lambda: 3)               # idle cores: workers fork
    for chunk in (4096, 100 * 1024):
        monkeypatch.setattr(chunks, 'READ_CHUNK', chunk)
        counted = tally.count_windows([str(log)], windows, line_filter)
        parallel, dummy = counted.counters, counted.scans
        assert parallel == single
    assert sum(single[0].values()) > 1000 and sum(single[1].values()) > 1000


def test_seek_reads_stamps_as_local_text_whatever_their_offset(tmp_path):
    """The windows match '21/Nov/2026:03' as text in local time; a log written with another
    zone's offset must be sought on the same text, or the seek would skip what counts."""
    def build():
        body = b''.join(data for dummy, data in sorted(old_traffic(loggen.random.Random(2), 30, 30000)))
        return (body + loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1100})).replace(b' +0000]', b' +0500]')
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(build))
    seek, dummy = run_json(tmp_path, 'seek', log)
    full, dummy = run_json(tmp_path, 'full', log, ['--full-scan'])
    assert seek['scans'][0]['mode'] == 'seek' and seek['scans'][0]['start'] > 0
    assert seek['blocked'] == full['blocked'] == [{'address': '203.0.113.7', 'count': 1100, 'window': 'previous'}]


def test_failed_parallel_part_reaps_its_workers_and_names_the_log(tmp_path, monkeypatch):
    import pytest
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock, errors
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 3000})))
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1)
    monkeypatch.setattr(chunks, 'idle_cores', lambda: 3)

    def failing_range(*args):
        raise OSError(5, 'Input/output error')
    monkeypatch.setattr(chunks, 'count_range', failing_range)
    before = _children()        # what other tests of this process left running is theirs
    with pytest.raises(errors.BotDetectorError) as err:
        tally.count_windows([str(log)], clock.hour_windows(NOW_EPOCH), rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google'))
    assert str(log) in err.value.message
    assert _children() <= before          # no worker left behind, running or unreaped


def _children():
    """This process's children, zombies included (/proc/self/task/*/children)."""
    found = set()
    for task in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/children' % task) as handle:
                found.update(int(pid) for pid in handle.read().split())
        except OSError:         # a thread that ended meanwhile
            pass
    return found


def _time_ordered_log(seed, count, hours=3):
    """A time-ordered combined log of ``hours`` up to NOW: the windows' lines lie together at its end."""
    rng = loggen.random.Random(seed)
    start = NOW_EPOCH - hours * 3600
    return b''.join(loggen.line('198.51.100.%d' % rng.randint(1, 30), start + i * hours * 3600 // count,
                                path=rng.choice(['/job/%d' % i, '/static/a.js', '/stellen/%d' % i]),
                                agent=rng.choice(list(loggen.BROWSERS[:2]) + ['Googlebot/2.1']))
                    for i in range(count))


def test_a_full_scan_deals_the_range_out_in_stripes(tmp_path, monkeypatch):
    """Where the lines that count lie is not known (a full scan): each worker gets every
    n-th stripe of the range, line-aligned, and together they cover it once. With where they
    begin (a seek), or for a format whose parts search back (w3c), one range each."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    log = tmp_path / 'access.log'
    log.write_bytes(with_utc(lambda: _time_ordered_log(1, 3000)))
    data = log.read_bytes()
    monkeypatch.setattr(chunks, 'STRIPE_BYTES', 8192)
    with open(str(log), 'rb') as handle:
        for workers in (2, 3):
            parts = chunks._parts(handle, 100, len(data), workers, None, False)  # pylint: disable=protected-access
            stripes = sorted(sum(parts, []))
            assert len(stripes) >= 6 * workers and len(parts) == workers
            assert stripes[0][0] == 100 and stripes[-1][1] == len(data)
            assert all(a[1] == b[0] for a, b in zip(stripes, stripes[1:]))          # no gap, no overlap
            assert all(data[low - 1:low] == b'\n' for low, high in stripes[1:])      # each starts a line
            assert [part[0] for part in parts] == stripes[:workers]                  # dealt in turn
            assert all(part == stripes[worker::workers] for worker, part in enumerate(parts))
            for counted_from, contiguous in ((len(data) // 2, False), (None, True)):
                parts = chunks._parts(handle, 0, len(data), workers, counted_from, contiguous)  # pylint: disable=protected-access
                assert [len(part) for part in parts] == [1] * workers
                assert parts[0][0][0] == 0 and parts[-1][0][1] == len(data)


@pytest.mark.parametrize('fmt', ['combined', 'nginx_json', 'haproxy', 'w3c'])
def test_workers_over_stripes_count_what_one_process_counts(tmp_path, monkeypatch, fmt):
    """A full scan of a time-ordered log in forked workers, each over its stripes (or w3c's
    one part each): the counts, the lines and the unparsed lines of one process."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings
    import logformats
    combined = with_utc(lambda: _time_ordered_log(2, 6000))
    data = combined if fmt == 'combined' else with_utc(lambda: logformats.render_log(fmt, combined, vary=False)[0])
    if fmt == 'nginx_json':         # lines that do not parse, in the windows and before them
        lines = data.split(b'\n')
        lines[100] = lines[-40] = b'{"remote_addr":"198.51.100.9","request":"GET /job/1 HTTP/1.1"}'
        data = b'\n'.join(lines)
    log = tmp_path / 'access.log'
    log.write_bytes(data)
    windows = clock.hour_windows(NOW_EPOCH)
    line_filter = rules.LineFilter(settings.SPEC_JOB_PREFIXES, 'Google')
    chosen = settings.Settings(log_format=fmt, haproxy_user_agent_capture=1 if fmt == 'haproxy' else None)

    def counted():
        readers = None if fmt == 'combined' else {str(log): choice.reader_for(chosen, str(log))[1]}
        found = tally.count_windows([str(log)], windows, line_filter, count_lines=True, readers=readers)
        return [c for dummy, c in found], found.scans[0].lines, found.scans[0].unparsed
    single = with_utc(counted)
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1)
    monkeypatch.setattr(chunks, 'idle_cores', lambda: 3)
    monkeypatch.setattr(chunks, 'STRIPE_BYTES', 16 * 1024)
    monkeypatch.setattr(chunks, 'READ_CHUNK', 8192)
    ranges = []
    real = chunks.count_range

    def count_range(fd, start, end, into):
        ranges.append((start, end))     # this process's: the first worker's part
        return real(fd, start, end, into)
    monkeypatch.setattr(chunks, 'count_range', count_range)
    assert with_utc(counted) == single
    assert len(ranges) == 1 if fmt == 'w3c' else len(ranges) >= 3
    assert sum(single[0][0].values()) + sum(single[0][1].values()) > 500
    assert single[2] == (2 if fmt == 'nginx_json' else 0)
