"""Issue 27: logs in the formats servers really write (setting log_format). A line in
format F counts exactly as its combined twin would: the fixtures of real lines (tests/formats)
read as their twins, the command on an F-log decides as the reference on its twin log, a
property test over random combined logs rendered into each format, auto and its refusal,
the unparsed lines' count, warning and metric, and a forged X-Forwarded-For."""
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st

import loggen
import logformats
from conftest import ROOT, Files, in_timezone, mask_dates, mask_duration, run_core, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import run
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice, escaping, json_logs, readers, text_logs
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_stamp, hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

FIXTURES = ROOT / 'tests' / 'formats'
NOW = '2025-11-21 04:13:43'
NOW_EPOCH = 1763698423


# ---------------------------------------------------------------- real lines


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_real_lines_read_as_their_twins(fmt):
    """Each fixture line (tests/formats/README.md: where it comes from) becomes the
    combined line it must count as."""
    def twins():
        settings = Settings(log_format=fmt, haproxy_user_agent_capture=1)
        path = str(FIXTURES / ('%s.log' % fmt))
        name, reader = choice.reader_for(settings, path)
        reader.needles = None           # every line, not only job pages
        data = Path(path).read_bytes()
        made, read = reader.translate(data, data.rfind(b'\n'))
        return name, made, read, reader.unparsed
    name, made, read, unparsed = in_timezone('UTC', twins)
    assert name == fmt and read and unparsed == 0
    assert made + b'\n' == (FIXTURES / ('%s.twin' % fmt)).read_bytes()


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_auto_tells_each_fixture(fmt):
    head = (FIXTURES / ('%s.log' % fmt)).read_bytes()
    assert choice.detect(head, 'x') == fmt
    assert choice.detect(b'1.2.3.4 - - [21/Nov/2026:04:13:43 +0000] "GET / HTTP/1.1" 200 1 "-" "x"\n', 'x') == 'combined'


# ---------------------------------------------------------------- twins against the reference


def _scenario_logs(fmt, seed, tmp_path):
    now = NOW_EPOCH + seed * 7919
    local_now = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(now))
    scenario = in_timezone('UTC', lambda: loggen.equivalence_scenario(seed, now))
    combined = in_timezone('UTC', lambda: loggen.render(scenario.entries, scenario.rng, jitter=seed % 30))
    data, twins = in_timezone('UTC', lambda: logformats.render_log(fmt, combined, style=seed))
    log, twin_log = tmp_path / ('access.%s' % fmt), tmp_path / 'twins.log'
    log.write_bytes(data)
    twin_log.write_bytes(twins)
    return scenario, local_now, log, twin_log


@pytest.mark.parametrize('fmt,seed', [(fmt, 3 + i) for i, fmt in enumerate(logformats.FORMATS)])
def test_the_command_on_a_log_decides_as_the_reference_on_its_twins(tmp_path, fmt, seed):
    scenario, local_now, log, twin_log = _scenario_logs(fmt, seed, tmp_path)
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    for f in (ours, theirs):
        f.blocklist.write_bytes(scenario.blocklist)
        f.exclusions.write_bytes(scenario.exclusions)
    ref = run_reference(twin_log, theirs.blocklist, theirs.exclusions, theirs.activity_log, scenario.server_ips, local_now)
    extra = ['--haproxy-user-agent-capture', '1'] if fmt == 'haproxy' else []
    args = ours.options() + ['--now', local_now, '--log-format', fmt] + extra + sum(
        (['--server-ip', ip] for ip in scenario.server_ips), []) + [log]
    got = run_core(args)
    assert ref.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stderr == b''            # no line left unparsed, no warning
    assert mask_duration(got.stdout) == mask_duration(ref.stdout)
    assert ours.read('blocklist') == theirs.read('blocklist')
    assert mask_dates(ours.read('activity_log') or b'') == mask_dates(theirs.read('activity_log') or b'')
    assert (theirs.read('activity_log') or b'').count(b'\n') >= 1     # the case blocks something


# ---------------------------------------------------------------- property: random logs in every format

ADDRESSES = ['198.51.100.%d' % i for i in range(1, 6)] + ['2001:db8::%x' % i for i in range(1, 4)]
PATHS = ['/job/1', '/jobs/2?q=a', '/stellenangebot/3', '/files/x', '/', '/de/stelle/4', '/Job/5']
AGENTS = ['Mozilla/5.0 (X11; Linux x86_64)', 'Googlebot/2.1', 'curl/8.4.0', 'Google Web Preview', 'caf\u00e9 bOt',
          'a "quoted" agent\\']
REFERERS = ['-', 'https://jobs.example/', 'https://x.example/GET /job/', 'https://robot.example/']
REQUEST = st.tuples(st.sampled_from(ADDRESSES), st.integers(-7300, 200), st.sampled_from(['GET', 'POST', 'HEAD']),
                    st.sampled_from(PATHS), st.sampled_from(AGENTS), st.sampled_from(REFERERS))


def _detect(log, fmt, base, scans=None, **extra):
    """(windows' records, verdicts, warnings) of a run on ``log`` in ``fmt`` (its scans appended
    to the list ``scans``)."""
    files = Files(base)
    settings = Settings(log_format=fmt, threshold=3, top=5, server_ips=['10.0.0.5'], blocklist=str(files.blocklist),
                        exclusions_file=str(files.exclusions), activity_log=str(files.activity_log),
                        haproxy_user_agent_capture=1 if fmt == 'haproxy' else None, seek=False, **extra)
    result = run.detect(settings, [str(log)], now=NOW_EPOCH, check_mode='state_dir' not in extra)
    if scans is not None:
        scans.extend(result.scans)
    return [(w['name'], w['records']) for w in result.windows], result.by_verdict, result.warnings


def _read_and_twins(requests, fmt, style, chunk=None, compress=False):
    """The random requests as a combined log rendered into ``fmt``: (the run on it, read in
    chunks of ``chunk`` bytes, gzip with ``compress``; the run on its twin log; its longest line)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    lines = []
    for address, offset, method, path, agent, referer in requests:
        lines.append(('%s - - [%s] "%s %s HTTP/1.1" 200 %d "%s" "%s"' % (
            address, loggen.clf_time(NOW_EPOCH + offset), method, path, len(path), referer,
            agent.replace('"', "'").replace('\\', '/'))).encode('utf-8'))
    data, twins = logformats.render_log(fmt, b'\n'.join(lines) + b'\n', style)
    with tempfile.TemporaryDirectory() as scratch:
        log, twin_log = Path(scratch) / 'f.log', Path(scratch) / 't.log'
        log.write_bytes(gzip.compress(data) if compress else data)
        twin_log.write_bytes(twins)
        theirs = _detect(twin_log, 'combined', Path(scratch) / 'b')
        default = chunks.READ_CHUNK
        chunks.READ_CHUNK = chunk or default
        try:
            mine = _detect(log, fmt, Path(scratch) / 'a')
        finally:
            chunks.READ_CHUNK = default
    return mine, theirs, max(map(len, data.split(b'\n')))


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUEST, min_size=1, max_size=60), st.sampled_from(logformats.FORMATS), st.integers(0, 5),
       st.sampled_from(['UTC', 'Europe/Berlin', 'Asia/Kolkata']))
def test_random_combined_logs_rendered_into_each_format_count_as_their_twins(requests, fmt, style, tz):
    mine, theirs, dummy = in_timezone(tz, lambda: _read_and_twins(requests, fmt, style))
    assert mine[:2] == theirs[:2]
    assert mine[2] == []


@hsettings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(REQUEST, min_size=1, max_size=30), st.sampled_from(logformats.FORMATS), st.integers(0, 5),
       st.sampled_from([40, 64, 100]), st.booleans(), st.sampled_from(['UTC', 'Europe/Berlin']))
def test_lines_longer_than_a_chunk_count_as_their_twins(requests, fmt, style, chunk, compress, tz):
    """A line longer than a read chunk (chunks.LongLine) in another format than combined is
    joined and read whole: with chunks of a few hundred bytes most lines are, plain or gzip,
    and they count as their twins do in 1 MiB chunks, none unparsed."""
    mine, theirs, longest = in_timezone(tz, lambda: _read_and_twins(requests, fmt, style, chunk, compress))
    assert longest > chunk
    assert mine[:2] == theirs[:2]
    assert mine[2] == []


def _caddy_log_with_headers(hitters, padded):
    """A Caddy log of ``hitters`` ({address: requests} in the previous hour, as
    loggen.planted_log) and its twin log; the first line of each address of ``padded``
    holds a Cookie header of that many bytes, which its twin does not show."""
    data, twins = in_timezone('UTC', lambda: logformats.render_log(
        'caddy', loggen.planted_log(NOW_EPOCH, previous=hitters), vary=False))
    lines = data.split(b'\n')
    for address, size in padded.items():
        at = next(i for i, line in enumerate(lines) if json.loads(line)['request']['remote_ip'] == address)
        doc = json.loads(lines[at])
        doc['request']['headers']['Cookie'] = ['c' * size]
        lines[at] = json.dumps(doc, separators=(',', ':')).encode()
    return b'\n'.join(lines), twins


def test_a_caddy_line_padded_past_a_chunk_with_headers_counts_as_its_twin(tmp_path):
    """Go's server takes 1 MiB of headers, which Caddy logs: a scraper that pads its requests
    so is still counted (chunks.LONG_LINE_READ). A line longer than that bound is counted as
    unparsed, warned with its start, and read in bounded memory."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    data, twins = _caddy_log_with_headers({'203.0.113.7': 1000, '203.0.113.8': 999},
                                          {'203.0.113.7': 3 << 20, '203.0.113.8': chunks.LONG_LINE_READ})
    for compress in (False, True):
        log, twin_log = tmp_path / 'access.log', tmp_path / 'twins.log'
        log.write_bytes(gzip.compress(data, 1) if compress else data)
        twin_log.write_bytes(twins)
        ours, theirs = Files(tmp_path / ('ours%d' % int(compress))), Files(tmp_path / ('theirs%d' % int(compress)))
        ref = run_reference(twin_log, theirs.blocklist, theirs.exclusions, theirs.activity_log, ['10.0.0.5'], NOW)
        got = run_core(ours.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'caddy', '--json', log])
        assert got.returncode == 0 and ref.returncode == 0, got.stderr
        out = json.loads(got.stdout)
        assert [(b['address'], b['count']) for b in out['blocked']] == [('203.0.113.7', 1000)]
        assert ours.read('blocklist') == theirs.read('blocklist') == b'203.0.113.7\n'
        # The line past the bound: one unparsed line, its start the example; its twin would have made 999 + 1.
        assert out['scans'][0]['unparsed_lines'] == 1
        warning, = [w for w in out['warnings'] if 'did not parse' in w]
        assert warning.startswith('%s: 1 lines did not parse as caddy' % log), warning
        padded = next(line for line in data.split(b'\n') if len(line) > chunks.LONG_LINE_READ)
        assert warning.endswith('the first: ' + padded[:300].decode()), warning[-400:]


def test_a_line_past_the_bound_is_read_in_bounded_memory(tmp_path):
    """A line of another format than combined is held whole up to chunks.LONG_LINE_READ,
    never past it: four times the line, not four times the memory, and not much more than
    twice the bound (the reading, and before it the log's head for its layout: choice.head_of,
    read up to the bound and copied once)."""
    import tracemalloc
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    peaks = []
    for size in (chunks.LONG_LINE_READ + 1, 4 * chunks.LONG_LINE_READ):
        data, dummy = _caddy_log_with_headers({'203.0.113.8': 5}, {'203.0.113.8': size})
        log = tmp_path / 'access.log'
        log.write_bytes(data)
        tracemalloc.start()
        try:
            windows, verdicts, warnings = in_timezone('UTC', lambda: _detect(log, 'caddy', tmp_path / 'a'))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert windows[0][1] == [{'address': '203.0.113.8', 'count': 4}] and 'did not parse' in warnings[0]
    assert peaks[1] < peaks[0] * 1.2 and peaks[1] < 2 * chunks.LONG_LINE_READ + 3 * chunks.READ_CHUNK, peaks


def test_auto_tells_a_log_whose_first_line_is_longer_than_the_head(tmp_path):
    """auto reads a log's first HEAD_BYTES, and past them to its first line's end (a padded
    request just after a rotation, read whole as every such line is): it tells Caddy, and
    counts as caddy does; a first line past the bound (unparsed) leaves no whole line to tell,
    and auto refuses (found by a hunt: a 2 MiB first line made auto refuse the log)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    unpadded = _caddy_log_with_headers({'203.0.113.8': 1}, {'203.0.113.8': 0})[0].split(b'\n', 1)[0]
    longest = chunks.LONG_LINE_READ - len(unpadded)        # the padding that makes the longest line read whole
    for padding, compress, counted in ((2 << 20, False, 5), (2 << 20, True, 5), (longest, False, 5), (longest, True, 5),
                                       (longest + 1, False, 4), (longest + 1, True, 4)):
        data, dummy = _caddy_log_with_headers({'203.0.113.8': 5}, {'203.0.113.8': padding})
        log = tmp_path / ('access.log' + ('.gz' if compress else ''))
        log.write_bytes(gzip.compress(data, 1) if compress else data)
        caddy = in_timezone('UTC', lambda: _detect(log, 'caddy', tmp_path / 'caddy'))
        assert caddy[0][0] == ('previous', [{'address': '203.0.113.8', 'count': counted}])
        if counted == 4:
            with pytest.raises(errors.BotDetectorError, match='has no whole line yet'):
                in_timezone('UTC', lambda: _detect(log, 'auto', tmp_path / 'auto'))
        else:
            assert in_timezone('UTC', lambda: _detect(log, 'auto', tmp_path / 'auto')) == caddy


@pytest.mark.parametrize('compress', [False, True])
def test_a_line_past_the_bound_is_unparsed_with_its_start_unless_it_is_blank(tmp_path, monkeypatch, compress):
    """Past chunks.LONG_LINE_READ a line is one unparsed line, its first 300 bytes the
    example, plain or gzip (where a long line's first piece may already be past a small bound:
    it failed with an IndexError); a blank line is none whatever its length (found by a hunt:
    one of spaces past the bound was warned of)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    data, dummy = _caddy_log_with_headers({'203.0.113.8': 5}, {})
    monkeypatch.setattr(chunks, 'READ_CHUNK', 512)
    monkeypatch.setattr(chunks, 'LONG_LINE_READ', 1000)
    padded = b'{"pad":"' + b'p' * 1600 + b'"}'
    for extra, unparsed in ((b' ' * 1600, 0), (b'\t \t' * 1000, 0), (padded, 1), (padded + b'\n' + b' ' * 5000, 1)):
        body = data + b'\n' + extra + b'\n'
        log = tmp_path / ('access.log' + ('.gz' if compress else ''))
        log.write_bytes(gzip.compress(body) if compress else body)
        scans = []
        windows, verdicts, warnings = in_timezone('UTC', lambda: _detect(log, 'caddy', tmp_path / 'a', scans))
        assert windows[0] == ('previous', [{'address': '203.0.113.8', 'count': 5}])
        assert scans[0]['unparsed_lines'] == unparsed
        assert [w.rsplit('; the first: ', 1)[1] for w in warnings] == [padded[:300].decode()] * unparsed


def _w3c_log_with_a_long_field_name(length):
    """A W3C log of 400 requests in the windows whose #Fields: line names a field of
    ``length`` bytes, and its twin log."""
    rng = random.Random(3)
    combined = b''.join(('198.51.100.%d - - [%s] "GET /job/%d HTTP/1.1" 200 5 "-" "Mozilla"\n' % (
        rng.randint(1, 4), loggen.clf_time(NOW_EPOCH - rng.randint(0, 5000)), i)).encode() for i in range(400))
    data, twins = in_timezone('UTC', lambda: logformats.render_log('w3c', combined, vary=False))
    header, body = data.split(b'#Fields: ', 1)
    names, body = body.split(b'\n', 1)
    names = names.split(b' ')
    rows = [b' '.join(row.split(b' ')[:2] + [b'-'] + row.split(b' ')[2:]) for row in body.split(b'\n')[:-1]]
    return header + b'#Fields: ' + b' '.join(names[:2] + [b'x-' + b'p' * length] + names[2:]) + b'\n' + b'\n'.join(rows) + b'\n', twins


@pytest.mark.parametrize('how', ['workers', 'incremental'])
def test_a_long_w3c_fields_line_is_in_force_where_a_workers_part_or_an_incremental_run_starts(tmp_path, monkeypatch, how):
    """text_logs.fields_before reads the #Fields: line in force where a part starts as the
    reader does from the start: whole up to chunks.LONG_LINE_READ (found by a hunt: it read
    64 KiB of it, and the rows after were unparsed)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    data, twins = _w3c_log_with_a_long_field_name(70 << 10)
    log, twin_log = tmp_path / 'u_ex.log', tmp_path / 'twins.log'
    twin_log.write_bytes(twins)
    log.write_bytes(data)
    expected = in_timezone('UTC', lambda: _detect(twin_log, 'combined', tmp_path / 'twin'))
    assert in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'cold')) == expected
    scans = []
    if how == 'workers':
        monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1)
        monkeypatch.setattr(chunks, 'idle_cores', lambda: 4)
        got = in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'workers', scans))
    else:
        state = str(tmp_path / 'state')
        log.write_bytes(data[:len(data) - 9000])         # the first run ends after the #Fields: line
        in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'incremental', state_dir=state))
        log.write_bytes(data)
        got = in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'incremental', scans, state_dir=state))
        assert scans[0]['mode'] == 'incremental'
    assert scans[0]['unparsed_lines'] == 0 and got[0] == expected[0]


def test_a_fields_line_past_the_bound_is_passed_over_where_a_part_starts(tmp_path, monkeypatch):
    """A #Fields: line longer than chunks.LONG_LINE_READ is unparsed, and the one before it
    stays in force: so in a forked worker's part, where fields_before looks back for it."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks
    monkeypatch.setattr(chunks, 'LONG_LINE_READ', 4096)
    monkeypatch.setattr(chunks, 'READ_CHUNK', 2048)
    data, twins = _w3c_log_with_a_long_field_name(10)
    header, rows = data.split(b'\n#Fields: ', 1)[0], data.split(b'\n#Fields: ', 1)[1].split(b'\n', 1)[1]
    fields = data.split(b'\n#Fields: ', 1)[1].split(b'\n', 1)[0]
    middle = rows.count(b'\n') // 2
    rows = rows.split(b'\n')
    too_long = b'#Fields: ' + b'x-' + b'q' * 5000 + b' ' + fields
    log = tmp_path / 'u_ex.log'
    log.write_bytes(header + b'\n#Fields: ' + fields + b'\n' + b'\n'.join(rows[:middle] + [too_long] + rows[middle:]))
    one = in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'one'))
    monkeypatch.setattr(chunks, 'PARALLEL_MIN_BYTES', 1)
    monkeypatch.setattr(chunks, 'idle_cores', lambda: 4)
    scans = []
    assert in_timezone('UTC', lambda: _detect(log, 'w3c', tmp_path / 'workers', scans)) == one
    assert scans[0]['unparsed_lines'] == 1


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b'a', b'\xc3\xa9', b'"', b'\\', b'\x00', b'\x7f', b'\xff', b'/job/ ', b'x' * 70000]), max_size=40),
       st.integers(1, 5))
def test_a_field_is_escaped_byte_by_byte_as_nginx_does_whatever_its_length(parts, repeat):
    """escaping.escaped: \\xHH for '"', '\\', controls and non-ASCII, each byte as itself else,
    across its pieces of _ESCAPE_PIECE bytes (the rule written here byte by byte)."""
    field = b''.join(parts) * repeat
    expected = b''.join(b'\\x%02X' % byte if byte < 0x20 or byte >= 0x7f or byte in b'"\\' else bytes((byte,))
                        for byte in bytearray(field))
    assert escaping.escaped(field) == expected


@pytest.mark.parametrize('fmt', ['nginx_json', 'caddy'])
def test_a_long_line_of_non_ascii_text_is_read_in_memory_a_few_times_its_length(tmp_path, fmt):
    """A line read whole (longer than a chunk) whose user agent is 2 MiB of non-ASCII text,
    four bytes a byte in its twin (\\xC3\\xA9): counted, in memory a few times its length (each
    byte escaped on its own held a hundred bytes: a line of chunks.LONG_LINE_READ, a GiB)."""
    import tracemalloc
    agent = '\u00e9' * (1 << 20)
    data, twins = in_timezone('UTC', lambda: logformats.render_log(
        fmt, loggen.planted_log(NOW_EPOCH, previous={'203.0.113.8': 3}), vary=False))
    lines = data.split(b'\n')
    if fmt == 'caddy':
        doc = json.loads(lines[1])
        doc['request']['headers']['User-Agent'] = [agent]
    else:
        doc = json.loads(lines[1])
        doc[next(key for key in doc if 'agent' in key)] = agent
    lines[1] = json.dumps(doc, ensure_ascii=False, separators=(',', ':')).encode('utf-8')
    log = tmp_path / 'access.log'
    log.write_bytes(b'\n'.join(lines))
    tracemalloc.start()
    try:
        windows, verdicts, warnings = in_timezone('UTC', lambda: _detect(log, fmt, tmp_path / 'a'))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert windows[0][1] == [{'address': '203.0.113.8', 'count': 3}] and warnings == []
    assert peak < 16 * len(lines[1]), (peak, len(lines[1]))


# ---------------------------------------------------------------- auto, unparsed lines, forged X-Forwarded-For


def _json_line(address, epoch, path='/job/1', agent='Mozilla/5.0', forwarded=None):
    doc = {'time_iso8601': time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(epoch)), 'remote_addr': address,
           'request': 'GET %s HTTP/1.1' % path, 'status': '200', 'body_bytes_sent': '10', 'http_referer': '',
           'http_user_agent': agent}
    if forwarded is not None:
        doc['http_x_forwarded_for'] = forwarded
    return json.dumps(doc).encode() + b'\n'


def test_auto_says_the_format_and_refuses_a_log_it_cannot_tell(tmp_path, files):
    log = tmp_path / 'json.log'
    log.write_bytes(b''.join(_json_line('203.0.113.7', NOW_EPOCH - 60) for dummy in range(1000)))
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'auto', '--json', log])
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out['formats'] == {str(log): 'nginx_json'} and out['scans'][0]['format'] == 'nginx_json'
    assert [b['address'] for b in out['blocked']] == ['203.0.113.7']
    plain = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'auto', log])
    assert plain.stdout.startswith(b'Log format of %s: nginx_json (detected)\n' % bytes(log))
    for content in (b'hello world\nnot a log line\n', b'', b'{"a": 1}\n'):
        log.write_bytes(content)
        got = run_core(files.options() + ['--now', NOW, '--log-format', 'auto', log])
        assert got.returncode == 2 and got.stdout == b''
        assert got.stderr.startswith(b'bot-detector: error: log_format auto: ') and got.stderr.count(b'\n') == 1
        assert bytes(log) in got.stderr and b'set log_format' in got.stderr
    assert files.read('blocklist') in (None, b'203.0.113.7\n')      # the refused runs wrote nothing


def test_unparsed_lines_are_counted_warned_once_and_in_the_metrics(tmp_path, files):
    good = [_json_line('203.0.113.7', NOW_EPOCH - 60) for dummy in range(1000)]
    bad = [b'{"truncated": "GET /job/1', b'GET /job/2 not json at all', b'{"remote_addr": "1.2.3.4"} /job/']
    rng = random.Random(27)
    lines = good + [b + b'\n' for b in bad] * 3
    rng.shuffle(lines)
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(lines))
    metrics = tmp_path / 'metrics.prom'
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'nginx_json',
                                      '--metrics-file', metrics, '--json', log])
    assert got.returncode == 0
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == ['203.0.113.7'] and out['scans'][0]['unparsed_lines'] == 9
    warnings = [w for w in out['warnings'] if 'did not parse' in w]
    assert len(warnings) == 1 and warnings[0].startswith('%s: 9 lines did not parse as nginx_json' % log)
    first = next(text for text in lines if not text.startswith(b'{"time_iso8601"')).rstrip(b'\n').decode()
    assert warnings[0].endswith('the first: ' + first)
    assert 'bot_detector_last_run_unparsed_lines{log="%s"} 9' % log in metrics.read_text()
    # A combined run writes no such series.
    combined = tmp_path / 'c.log'
    combined.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'198.51.100.7': 3}))
    run_core(files.options() + ['--now', NOW, '--metrics-file', metrics, combined])
    assert 'unparsed' not in metrics.read_text().split('c.log', 1)[1].split('\n', 1)[0]


def test_a_forged_x_forwarded_for_never_names_the_client(tmp_path, files):
    """Behind trusted proxies the client is the right-most untrusted X-Forwarded-For entry
    (real_ip_recursive); the left-most, which the client writes, is never taken."""
    lines = []
    for i in range(1100):
        # The scraper 198.51.100.9 sends a forged header naming a victim; its proxy appends the real address,
        # a second trusted hop appends the first proxy's.
        hop = ['203.0.113.200, 198.51.100.9', '203.0.113.200, 198.51.100.9, 10.0.0.2'][i % 2]
        lines.append(_json_line('10.0.0.1', NOW_EPOCH - 60, forwarded=hop))
    for i in range(1000):       # a client with no header through the proxy: the proxy's own address stays
        lines.append(_json_line('192.0.2.50', NOW_EPOCH - 60, forwarded='192.0.2.99'))
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(lines))
    base = files.options() + ['--now', NOW, '--server-ip', '10.9.9.9', '--log-format', 'nginx_json', '--json', '--check']
    trusted = json.loads(run_core(base + ['--trusted-proxy', '10.0.0.0/8', log]).stdout)
    assert sorted(b['address'] for b in trusted['blocked']) == ['192.0.2.50', '198.51.100.9']
    untrusted = json.loads(run_core(base + [log]).stdout)
    assert sorted(b['address'] for b in untrusted['blocked']) == ['10.0.0.1', '192.0.2.50']
    assert '203.0.113.200' not in json.dumps(trusted) + json.dumps(untrusted)


def test_bad_format_settings_fail_before_anything_is_read(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    for args, text in ((['--log-format', 'json'], b'--log-format'), (['--log-format-for', 'x.log'], b'log_formats'),
                       (['--trusted-proxy', '10.0.0.0/33'], b'trusted_proxies'),
                       (['--log-json-fields', '{"addr": "x"}'], b'log_json_fields')):
        got = run_core(files.options() + args + [log])
        assert got.returncode == 2 and text in got.stderr and got.stderr.count(b'\n') == 1, (args, got.stderr)


def test_one_format_per_log_and_the_module(tmp_path):
    """log_formats (LOG=FORMAT) over log_format, through the module run by real ansible."""
    a, b = tmp_path / 'a.log', tmp_path / 'b.log'
    a.write_bytes(b''.join(_json_line('203.0.113.7', NOW_EPOCH - 60) for dummy in range(600)))
    b.write_bytes(b''.join(b'jobs.example:80 ' + loggen.line('203.0.113.7', NOW_EPOCH - 60) for dummy in range(400)))
    files = Files(tmp_path / 'files')
    args = {'log': [str(a), str(b)], 'log_format': 'vhost_combined', 'log_formats': ['%s=nginx_json' % a],
            'blocklist': str(files.blocklist), 'exclusions': str(files.exclusions), 'activity_log': str(files.activity_log),
            'server_ip': ['10.0.0.5'], 'now': NOW, 'config': str(tmp_path / 'none.conf')}
    (tmp_path / 'none.conf').write_text('')
    got = subprocess.run(['ansible', 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
                          '-m', 'jobboard.bot_detector.bot_detector', '-a', json.dumps(args), '-o'],
                         cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                         env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), TZ='UTC'))
    assert got.returncode == 0 and b'CHANGED' in got.stdout, got.stdout.decode()[-2000:]
    assert files.read('blocklist') == b'203.0.113.7\n'
    assert b'"format": "nginx_json"' in got.stdout and b'"format": "vhost_combined"' in got.stdout


def test_follow_mode_reads_a_log_in_another_format(tmp_path):
    """--follow with log_format: the lines already there and those appended, each counted
    as its twin (a combined log of the same requests blocks the same address)."""
    import test_follow as follow
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()

    def json_lines(address, count):
        combined = follow.lines(address, count)
        return in_timezone('UTC', lambda: logformats.render_log('nginx_json', combined, vary=False)[0])
    log.write_bytes(json_lines('203.0.113.1', 30) + json_lines('203.0.113.2', 60))
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'nginx_json']) as follower:
        follower.caught_up()
        assert follow.blocked(files) == [b'203.0.113.2']
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(json_lines('203.0.113.1', 25))
        follower.caught_up()
        assert sorted(follow.blocked(files)) == [b'203.0.113.1', b'203.0.113.2']


def test_a_follower_warns_once_per_log_of_unparsed_lines_and_counts_them(tmp_path):
    """--follow: the first line of a log that does not parse is warned about once (a
    follower runs for months); the count since the start is in its status file and in the
    metric follow_unparsed_lines, those read at the start and those appended alike."""
    import test_follow as follow
    from test_metrics import metrics
    files, log = follow.setup(tmp_path)
    log.parent.mkdir()
    good = in_timezone('UTC', lambda: logformats.render_log('nginx_json', follow.lines('203.0.113.2', 60), vary=False)[0])
    log.write_bytes(good + b'GET /job/2 not json at all\n{"truncated": "GET /job/1\n')
    prom = tmp_path / 'bot_detector.prom'
    with follow.Following(tmp_path, files, log, extra=['--log-format', 'nginx_json', '--metrics-file', prom]) as follower:
        follower.caught_up()
        assert follower.status()['unparsed_lines'] == {str(log): 2}
        follower.mark()
        with open(str(log), 'ab') as handle:
            handle.write(b'GET /job/3 more noise\n' * 3 + good)
        follower.caught_up()
        assert follower.status()['unparsed_lines'] == {str(log): 5}
        label = frozenset({'log': str(log)}.items())
        follow.wait_for(lambda: prom.exists() and metrics(prom).get('bot_detector_follow_unparsed_lines') == {label: 5}, 12)
        assert follower.stop() == 0
        stderr = follower.proc.stderr.read().decode()
    assert follow.blocked(files) == [b'203.0.113.2']
    warned = [line for line in stderr.splitlines() if 'did not parse' in line]
    assert warned == ['bot-detector: warning: %s: a line did not parse as nginx_json and was not counted (warned once; the '
                      'count since the start is in --status and the metric follow_unparsed_lines): GET /job/2 not json at all'
                      % log], stderr


def test_incremental_runs_and_rotation_count_a_log_in_another_format_as_a_cold_run(tmp_path, files):
    """--state-dir: a run reads on from where the last one left the log (and its rotated
    gzip file), with the cold run's decisions."""
    import gzip
    log = tmp_path / 'access.log'
    first = b''.join(_json_line('203.0.113.%d' % (i % 3), NOW_EPOCH - 600 + i % 300) for i in range(1500))
    log.write_bytes(first)
    base = ['--server-ip', '10.0.0.5', '--log-format', 'nginx_json', '--json', '--threshold', '700', '--rotated']
    state = Files(tmp_path / 'state-run').options() + base + ['--state-dir', tmp_path / 'state']
    base = files.options() + base
    warm = json.loads(run_core(state + ['--now', '2025-11-21 04:10:00', log]).stdout)
    assert warm['blocked'] == [] and warm['scans'][0]['mode'] == 'full'
    with gzip.open(str(log) + '.1.gz', 'wb') as rotated:
        rotated.write(first + b''.join(_json_line('203.0.113.1', NOW_EPOCH - 100) for dummy in range(300)))
    log.write_bytes(b''.join(_json_line('203.0.113.2', NOW_EPOCH - 50) for dummy in range(300)))
    later = json.loads(run_core(state + ['--now', NOW, log]).stdout)
    cold = json.loads(run_core(base + ['--now', NOW, log]).stdout)
    assert [s['mode'] for s in later['scans']] == ['incremental', 'incremental']
    assert later['blocked'] == cold['blocked'] and later['windows'] == cold['windows']
    assert sorted(b['address'] for b in cold['blocked']) == ['203.0.113.1', '203.0.113.2']


def test_haproxy_without_a_user_agent_capture_says_so_once(tmp_path, files):
    line = ('Nov 21 04:12:43 lb haproxy[42]: 198.51.100.4:4242 [21/Nov/2025:04:12:43.123] fe be/s1 0/0/1/2/3 200 512 - - '
            '---- 1/1/0/0/0 0/0 {Googlebot/2.1|jobs.example} "GET /job/%d HTTP/1.1"\n')
    log = tmp_path / 'haproxy.log'
    log.write_bytes(b''.join((line % i).encode() for i in range(1000)))
    base = files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'haproxy', '--check', '--json']
    without = run_core(base + [log])
    out = json.loads(without.stdout)
    assert [w for w in out['warnings'] if 'haproxy_user_agent_capture' in w] == [
        '%s: haproxy logs no user agent unless it is captured (haproxy_user_agent_capture): the bot and search-engine '
        'exemptions cannot apply' % log]
    assert [b['address'] for b in out['blocked']] == ['198.51.100.4']       # no user agent: the bot is counted
    captured = json.loads(run_core(base + ['--haproxy-user-agent-capture', '1', log]).stdout)
    assert captured['blocked'] == [] and captured['warnings'] == []          # Googlebot: exempt, as in its twin


def test_w3c_fields_may_change_mid_file(tmp_path):
    """A new #Fields: line (IIS after a configuration change) applies from where it is."""
    head = logformats.W3C_HEADER
    other = b'#Fields: date time c-ip cs-method cs-uri-stem cs-uri-query sc-status cs(User-Agent)\n'
    first = b'2025-11-21 04:12:43 10.0.0.1 GET /job/1 - 443 - 198.51.100.7 curl/8 - 200 0 0 15\n'
    second = b'2025-11-21 04:12:44 198.51.100.8 GET /job/2 - 200 curl/8\n'
    settings = Settings(log_format='w3c')
    log = tmp_path / 'u_ex.log'
    log.write_bytes(head + first + other + second)

    def twins():
        name, reader = choice.reader_for(settings, str(log))
        data = log.read_bytes()
        return reader.translate(data, None)[0], reader.unparsed
    made, unparsed = in_timezone('UTC', twins)
    assert unparsed == 0
    assert made == (b'198.51.100.7 - - [21/Nov/2025:04:12:43 +0000] "GET /job/1" 200 - "-" "curl/8"\n'
                    b'198.51.100.8 - - [21/Nov/2025:04:12:44 +0000] "GET /job/2" 200 - "-" "curl/8"')


# ---------------------------------------------------------------- property: the JSON fast paths decide as decoding each line

JSON_TIMES = ['2025-11-21T%02d:%02d:%02d+00:00', '2025-11-21T%02d:%02d:%02d.5Z', '2025-11-21T%02d:%02d:%02d+05:30',
              '21/Nov/2025:%02d:%02d:%02d +0000', '[21/Nov/2025:%02d:%02d:%02d +0000]', '[21/Nov/2025:%02d:%02d:%02d +0000]']
ODD = st.sampled_from(['none', 'unicode_escape', 'quote', 'backslash', 'raw_utf8', 'order', 'missing', 'spaces', 'stamp_in_referer',
                       'twice', 'nested', 'bad_byte', 'bad_time', 'number', 'escape_makes_stamp', 'escaped_path', 'nan_status'])
JSON_REQUEST = st.tuples(st.sampled_from(ADDRESSES), st.integers(1, 5), st.integers(0, 59), st.sampled_from(PATHS),
                         st.sampled_from(AGENTS), ODD)


def _odd_json_line(fmt, time_form, request):
    address, hour, minute, path, agent, odd = request
    when = JSON_TIMES[time_form] % (hour, minute, minute)
    key = {3: 'time_local', 4: 'time', 5: 'time_local'}.get(time_form, 'time_iso8601')     # 4, 5: "[$time_local]"
    if fmt == 'caddy':
        key, when = 'ts', NOW_EPOCH - 7200 + hour * 900 + minute * 7 + 0.25
    if fmt == 'traefik_json':
        doc = {'ClientHost': address, 'DownstreamContentSize': 5, 'DownstreamStatus': 200, 'RequestMethod': 'GET',
               'RequestPath': path, 'RequestProtocol': 'HTTP/1.1', 'StartLocal': when, 'request_User-Agent': agent}
        key = 'StartLocal'
    elif fmt == 'caddy':
        doc = {'ts': when, 'request': {'client_ip': address, 'method': 'GET', 'uri': path, 'proto': 'HTTP/1.1',
                                       'headers': {'User-Agent': [agent]}}, 'size': 5, 'status': 200}
    else:
        doc = {key: when, 'remote_addr': address, 'request': 'GET %s HTTP/1.1' % path, 'status': '200',
               'body_bytes_sent': '5', 'http_referer': '', 'http_user_agent': agent}
    text = None
    if odd == 'order':
        doc = dict(reversed(list(doc.items())))
    elif odd == 'missing':
        doc.pop('http_referer' if fmt == 'nginx_json' else key)
    elif odd == 'stamp_in_referer' and fmt == 'nginx_json':
        doc['http_referer'] = 'https://x.example/21/Nov/2025:04'
    elif odd == 'nested':
        doc['extra'] = {key: JSON_TIMES[0] % (4, 1, 1)}
    elif odd == 'bad_time':
        doc[key] = 'yesterday'
    elif odd == 'number' and fmt == 'nginx_json':
        doc['status'] = 200
    elif odd == 'escape_makes_stamp' and fmt == 'nginx_json':   # the twin's '\xC2\xA2' then '1/Nov/2025:04'
        doc['http_referer'] = '\u00a21/Nov/2025:04'
    text = json.dumps(doc, separators=(', ', ': ') if odd == 'spaces' else (',', ':'),
                      ensure_ascii=odd not in ('raw_utf8', 'escape_makes_stamp'))
    if odd == 'unicode_escape':     # not in the path: the needles are written as themselves (readers.needles_of)
        text = text.replace(json.dumps(agent)[1:-1], json.dumps(agent)[1:-1].replace('o', '\\u006f').replace('M', '\\u004D'))
    elif odd == 'quote':
        text = text.replace(json.dumps(agent)[1:-1], 'a \\"q\\" bot' if minute % 2 else 'a \\"q\\"')
    elif odd == 'backslash':
        text = text.replace(json.dumps(agent)[1:-1], 'x\\\\y')
    elif odd == 'twice':
        text = text[:-1] + ',"%s":%s}' % (key, json.dumps(JSON_TIMES[0] % (4, 2, 2)) if key != 'ts' else str(NOW_EPOCH - 30))
    elif odd == 'escaped_path':     # a JSON writer may escape any character: the path is not there as text
        text = text.replace('/job/', '/jo\\u0062/').replace('/stelle', '/st\\u0065lle')
    elif odd == 'nan_status':       # json.loads reads NaN: a status no server writes
        text = text.replace('"status":"200"', '"status":NaN').replace('"status":200', '"status":NaN')
    data = text.encode('utf-8')
    if odd == 'bad_byte':
        data = data.replace(b'GET', b'G\xffT', 1)
    return data


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JSON_REQUEST, min_size=1, max_size=40), st.sampled_from(['nginx_json', 'caddy', 'traefik_json']),
       st.integers(0, 5), st.sampled_from(['UTC', 'Europe/Berlin', 'Asia/Kolkata']))
# A path spelt with an escape; an escape that makes a stamp's text; a status json.loads reads as NaN.
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'escaped_path')], 'nginx_json', 3, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'escaped_path')], 'nginx_json', 0, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'escaped_path')], 'caddy', 0, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'escaped_path')], 'traefik_json', 0, 'UTC')
@example([(ADDRESSES[1], 1, 5, '/job/1', AGENTS[0], 'escape_makes_stamp')], 'nginx_json', 3, 'UTC')
@example([(ADDRESSES[1], 1, 5, '/job/1', AGENTS[0], 'escape_makes_stamp')], 'nginx_json', 0, 'UTC')
@example([(ADDRESSES[1], 1, 5, '/job/1', AGENTS[0], 'escape_makes_stamp')], 'caddy', 0, 'UTC')
@example([(ADDRESSES[1], 1, 5, '/job/1', AGENTS[0], 'escape_makes_stamp')], 'traefik_json', 0, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'nan_status')], 'nginx_json', 3, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'nan_status')], 'nginx_json', 0, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'nan_status')], 'caddy', 0, 'UTC')
@example([(ADDRESSES[1], 4, 5, '/job/1', AGENTS[0], 'nan_status')], 'traefik_json', 0, 'UTC')
def test_json_fast_paths_count_as_decoding_every_line(requests, fmt, time_form, tz):
    """The prefilters (the window's time, the needles) and the fast layout of nginx_json
    count each chunk as decoding every line with json.loads and counting its twin does:
    escapes, quotes, backslashes, non-ASCII, other key orders, missing or repeated keys,
    nested objects, bad bytes and times out of the windows included."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import json_logs
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows

    def both():
        # The log's usual layout first (what the fast path learns), then the random lines.
        plain = [_odd_json_line(fmt, time_form, (ADDRESSES[0], 4, 0, '/job/1', AGENTS[0], 'none'))]
        data = b'\n'.join(plain + [_odd_json_line(fmt, time_form, r) for r in requests]) + b'\n'
        stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
        line_filter = rules.LineFilter(Settings().job_prefixes, 'Google')
        settings = Settings(log_format=fmt)
        fast = tally.Tally(stamps, line_filter, reader=choice.reader_class(fmt)(settings))
        fast.chunk(data, data.rfind(b'\n'))
        slow_reader = choice.reader_class(fmt)(settings)
        twins = [json_logs.JsonReader.parse(slow_reader, line) for line in data.split(b'\n')[:-1]]
        assert twins[0] is not None, 'the plain line of each time form parses'
        slow = tally.Tally(stamps, line_filter)
        slow.chunk(b'\n'.join(t.encode('utf-8', 'surrogateescape') for t in twins if t is not None))
        return fast.counters, slow.counters
    fast, slow = in_timezone(tz, both)
    assert fast == slow


@pytest.mark.parametrize('workers', [2, 3, 5])
def test_w3c_fields_changing_mid_file_in_forked_workers_parts(tmp_path, monkeypatch, workers):
    """A W3C log split between forked workers (chunks.count_parallel), with #Fields: lines
    of two layouts at several places (IIS writes one at each restart): each part reads with
    the fields of the last #Fields: line before its start, found searching back from it,
    whether that line is in the log's head or not. Counts equal those of its twin log, read
    as combined; no line unparsed."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import clock
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import chunks, tally
    rng = random.Random(workers)
    combined = b''.join(loggen.line('198.51.100.%d' % rng.randint(1, 40), NOW_EPOCH - rng.randint(0, 5000),
                                    path='/job/%d' % rng.randint(1, 999), agent=rng.choice(AGENTS[:3]))
                        for dummy in range(6000))
    data, twins = in_timezone('UTC', lambda: logformats.render_log('w3c', combined, vary=False))
    header, body = data.split(b'#Fields: ', 1)
    fields_a, body = body.split(b'\n', 1)
    names_a = fields_a.split(b' ')
    names_b = list(reversed(names_a))           # the same fields in another order: a wrong map misreads them
    lines = body.split(b'\n')[:-1]
    out, layout = [header], None
    # Two #Fields: lines in the log's head (its last one is what W3C.bind reads), then one
    # shortly before and one shortly after where each worker's part starts: each part starts
    # in the other layout than the head's last.
    cuts = [40, 200] + sum(([len(lines) * j // workers - 100, len(lines) * j // workers + 100] for j in range(1, workers)), [])
    for i, text in enumerate(lines):
        if i == 0 or i in cuts:
            layout = names_a if layout is not names_a else names_b
            out.append(b'#Fields: ' + b' '.join(layout) + b'\n')
        values = dict(zip(names_a, text.split(b' ')))
        out.append(b' '.join(values[name] for name in layout) + b'\n')
    log, twin_log = tmp_path / 'u_ex.log', tmp_path / 'twins.log'
    log.write_bytes(b''.join(out))
    twin_log.write_bytes(twins)
    assert log.stat().st_size > 4 * readers.HEAD_BYTES
    line_filter = rules.LineFilter(Settings().job_prefixes, 'Google')
    windows = clock.hour_windows(NOW_EPOCH)

    def counted():
        reader = choice.reader_for(Settings(log_format='w3c'), str(log))[1]
        theirs = tally.count_windows([str(twin_log)], windows, line_filter)
        monkeypatch.setattr(chunks, 'workers_for', lambda size: workers)
        mine = tally.count_windows([str(log)], windows, line_filter, readers={str(log): reader})
        return mine, theirs
    mine, theirs = in_timezone('UTC', counted)
    assert [c for w, c in mine] == [c for w, c in theirs]
    assert sum(len(c) for w, c in theirs) > 20
    assert mine.scans[0].unparsed == 0


@pytest.mark.parametrize('block', [1, 19, 25, 64 * 1024])
def test_w3c_fields_before_a_place_searched_back_block_by_block(tmp_path, monkeypatch, block):
    """text_logs.fields_before: the last #Fields: line ending before the place, a
    #Fields: across two blocks of the backward search included; none before the first."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import text_logs
    monkeypatch.setattr(text_logs, 'HEAD_BYTES', block)
    content = b'#Fields: a b\n1 2\n3 4\n#Fields: c d e\n5 6 7\nx#Fields: f\n8 9 0\n'
    log = tmp_path / 'u_ex.log'
    log.write_bytes(content)
    with open(str(log), 'rb') as handle:
        fd = handle.fileno()
        found = [text_logs.fields_before(fd, at) for at in (0, content.index(b'1 2'), content.index(b'#Fields: c'),
                                                            content.index(b'5 6'), content.index(b'8 9'))]
    assert found == [None, {b'a': 0, b'b': 1, None: 2}, {b'a': 0, b'b': 1, None: 2}, {b'c': 0, b'd': 1, b'e': 2, None: 3},
                     {b'c': 0, b'd': 1, b'e': 2, None: 3}]


def test_a_time_no_clock_can_show_is_an_unparsed_line_not_a_failed_run(tmp_path, files):
    """JSON lets a time be NaN, 1e300 or twenty digits: such a line did not parse (it is
    counted, warned about), and the run reads on and blocks as without it."""
    odd = [b'{"ts":NaN,"request":{"client_ip":"1.2.3.4","method":"GET","uri":"/job/1","proto":"HTTP/1.1","headers":{}},'
           b'"status":200,"size":1}',
           b'{"ts":1e300,"request":{"client_ip":"1.2.3.4","method":"GET","uri":"/job/1","proto":"HTTP/1.1","headers":{}},'
           b'"status":200,"size":1}']
    for fmt, line in [('caddy', odd[0]), ('caddy', odd[1]),
                      ('nginx_json', b'{"msec":"99999999999999999999","remote_addr":"1.2.3.4","request":"GET /job/1 HTTP/1.1",'
                                     b'"status":"200","body_bytes_sent":"1"}')]:
        reader = choice.reader_class(fmt)(Settings(log_format=fmt))
        assert reader.translate(line + b'\n', len(line)) == (b'', False) and reader.unparsed == 1
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(_json_line('203.0.113.7', NOW_EPOCH - 60) for dummy in range(1000)) + b'{"msec":1e300,"remote_addr":'
                    b'"1.2.3.4","request":"GET /job/1 HTTP/1.1","status":"200","body_bytes_sent":"1"}\n')
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'nginx_json', '--json', log])
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == ['203.0.113.7'] and out['scans'][0]['unparsed_lines'] == 1


# DST nights of 2025: Europe (30 Mar, 26 Oct), the USA (9 Mar, 2 Nov), Lord Howe Island
# (6 Apr, 5 Oct: a half-hour shift), each the UTC instant of the change.
DST_NIGHTS = [1743296400, 1761440400, 1741503600, 1762063200, 1743861600, 1759591800]


@pytest.mark.parametrize('tz', ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'])
def test_the_json_time_filter_keeps_every_line_of_the_windows_across_dst_nights(tz):
    """times.TimeFilter leaves a JSON line out before decoding only when its time is
    in no counted hour. Driven against the plain rule (the line's instant, as local time,
    has a window's hour stamp) for runs every 20 minutes around six DST nights, lines every
    5 minutes over the 4 hours before each run, their times written in seven zones (ISO-8601)
    and as epoch seconds: every line of the windows is kept, and lines outside are left out."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_stamp, hour_windows
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats.times import TimeFilter
    zones = [('Z', 0), ('+01:00', 3600), ('+02:00', 7200), ('+05:30', 19800), ('+05:45', 20700), ('-04:00', -14400),
             ('+10:30', 37800)]

    def check():
        dropped = 0
        for night in DST_NIGHTS:
            for now in range(night - 3 * 3600, night + 3 * 3600, 1200):
                stamps = [window.stamp for window in hour_windows(now)]
                iso, epoch, wanted = [], [], set()
                for at in range(now - 4 * 3600, now + 60, 300):
                    counted = hour_stamp(at).encode('ascii') in stamps
                    for zone, offset in zones:
                        text = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(at + offset)).encode('ascii') + zone.encode('ascii')
                        iso.append(b'{"time_iso8601":"%s","remote_addr":"192.0.2.1","request":"GET /job/1 HTTP/1.1"}' % text)
                        if counted:
                            wanted.add(iso[-1])
                    epoch.append(b'{"msec":"%d.125","remote_addr":"192.0.2.1","request":"GET /job/1 HTTP/1.1"}' % at)
                    if counted:
                        wanted.add(epoch[-1])
                kept = set(TimeFilter('time_iso8601', 'iso').keep(iso, stamps))
                kept |= set(TimeFilter('msec', 'epoch').keep(epoch, stamps))
                assert wanted <= kept, (tz, now, sorted(wanted - kept)[:3])
                dropped += len(iso) + len(epoch) - len(kept)
        return dropped
    assert in_timezone(tz, check) > 0


# ---------------------------------------------------------------- property: a chunk of other hours, nginx_json's $time_local

OTHER_HOURS_ODD = st.sampled_from(['plain', 'plain', 'other_key_in_window', 'first_key_in_window', 'msec_in_window', 'twice',
                                   'twice_in_window', 'nested', 'escaped',
                                   'number', 'spaces', 'bad_time', 'no_time', 'blank', 'not_json', 'brace_in_value',
                                   'marker_in_value', 'escaped_key', 'no_brace', 'twice_no_address', 'escape_makes_stamp'])


def _other_hours_line(address, hour, minute, agent, odd, form='clf'):
    """A line whose time (``form``: $time_local, or $time_iso8601), if any, is of ``hour``,
    outside the windows, or an odd one that takes its time elsewhere: from another key (in
    the windows), an escaped or nested time key, a number."""
    key, written = ('time_local', '%d/%b/%Y:%H:%M:%S +0000') if form == 'clf' else ('time_iso8601', '%Y-%m-%dT%H:%M:%S+00:00')
    midnight = NOW_EPOCH - (4 * 3600 + 13 * 60 + 43)
    outside = time.strftime(written, time.gmtime(midnight + hour * 3600 + minute * 60 + 7))
    doc = {'remote_addr': address, key: outside, 'request': 'GET /job/%d HTTP/1.1' % minute, 'status': '200',
           'body_bytes_sent': '5', 'http_referer': '', 'http_user_agent': agent}
    inside = NOW_EPOCH - 600 - minute
    escaped_inside = time.strftime(written, time.gmtime(inside)).replace('/', '\\/').replace('-', '\\u002d')
    if odd == 'blank':
        return b''
    if odd == 'not_json':
        return b'GET /job/1 from %s' % address.encode()
    if odd in ('other_key_in_window', 'msec_in_window', 'nested', 'no_time'):
        doc.pop(key)
        if odd == 'other_key_in_window':
            doc['time_iso8601' if form == 'clf' else '@timestamp'] = time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(inside))
        elif odd in ('msec_in_window', 'nested'):
            doc['msec'] = '%d.123' % inside
            if odd == 'nested':
                doc['upstream'] = {key: outside}
    elif odd == 'first_key_in_window':     # a time key before the log's (ISO: time_local, its value ISO, no date as text)
        doc['time_local' if form == 'iso' else 'time_iso8601'] = time.strftime('%Y-%m-%dT%H:%M:%S+00:00', time.gmtime(inside))
    elif odd == 'number':
        doc[key] = inside
    elif odd == 'bad_time':
        doc[key] = 'yesterday'
    elif odd == 'brace_in_value':
        doc['http_user_agent'] = agent + ' {x}'
    elif odd == 'marker_in_value':
        doc['http_referer'] = '"%s":"%s"' % (key, outside)
    elif odd == 'twice_no_address':     # does not parse: unparsed as the rule line by line says
        doc.pop('remote_addr')
    elif odd == 'escape_makes_stamp':   # the twin's '\xC2\xA2' then '1/Nov/2025:04': a window's stamp (UTC)
        doc['http_referer'] = '\u00a21/Nov/2025:04'
    text = json.dumps(doc, separators=(', ', ': ') if odd == 'spaces' else (',', ':'), ensure_ascii=odd != 'escape_makes_stamp')
    if odd in ('twice', 'twice_no_address'):
        text = text[:-1] + ',"%s":"%s"}' % (key, time.strftime(written, time.gmtime(midnight + (hour + 1) % 3 * 3600)))
    elif odd == 'twice_in_window':  # the key again, the one decoding keeps: a time in the windows in another form
        other_form = '%Y-%m-%dT%H:%M:%S+00:00' if form == 'clf' else '%d/%b/%Y:%H:%M:%S +0000'
        text = text[:-1] + ',"%s":%s}' % (key, json.dumps(time.strftime(other_form, time.gmtime(inside))))
    elif odd == 'escaped':        # the windows' time, escaped (a JSON writer may): no date as text
        text = text.replace(json.dumps(outside)[1:-1], escaped_inside)
    elif odd == 'escaped_key':    # a second time key, its name escaped: the one decoding keeps
        text = text[:-1] + ',"%s":"%s"}' % (key.replace('_', '\\u005f'), escaped_inside)
    elif odd == 'no_brace':       # not an object (with a nested one, as many '{' as lines)
        text = text[1:]
    return text.encode('utf-8')


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ADDRESSES), st.integers(0, 2), st.integers(0, 59), st.sampled_from(AGENTS[:3]),
                          OTHER_HOURS_ODD), min_size=1, max_size=30), st.sampled_from(['clf', 'iso']),
       st.sampled_from(['UTC', 'America/New_York']))
# As many '{' as lines, but not one each; as many time keys as lines, but not one each; an escaped name.
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'no_brace'), (ADDRESSES[1], 2, 6, AGENTS[0], 'nested'),
          (ADDRESSES[2], 0, 7, AGENTS[0], 'plain')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'twice'), (ADDRESSES[1], 2, 6, AGENTS[0], 'other_key_in_window')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'escaped_key'), (ADDRESSES[1], 2, 6, AGENTS[0], 'plain')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'nested'), (ADDRESSES[1], 2, 6, AGENTS[0], 'plain')], 'iso', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'twice_no_address')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'plain'), (ADDRESSES[1], 2, 6, AGENTS[0], 'nested')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'twice_in_window'), (ADDRESSES[1], 2, 6, AGENTS[0], 'plain')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'escape_makes_stamp')], 'clf', 'UTC')
@example([(ADDRESSES[0], 1, 5, AGENTS[0], 'escape_makes_stamp')], 'iso', 'UTC')
def test_a_chunk_of_other_hours_is_left_out_only_where_each_line_would_be(lines, form, tz):
    """nginx_json, after a chunk that taught the log's layout and time key: a chunk of other
    hours than the windows' is left out by passes over it joined (times.all_dated_by
    for a $time_local, TimeFilter.keep for $time_iso8601) only where each of its lines would
    be on its own: the counts are those of decoding every line, and for $time_local the counts
    and unparsed lines are those of the rule line by line (times.dated_by), with odd lines
    that take their time from another key, a nested object, an escape or a number."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import times, json_logs
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    data = b'\n'.join(_other_hours_line(*(line + (form,))) for line in lines) + b'\n'
    settings = Settings(log_format='nginx_json')
    line_filter = rules.LineFilter(settings.job_prefixes, 'Google')

    def counted(at_once):
        stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
        first = _other_hours_line(ADDRESSES[0], 3, 30, AGENTS[0], 'plain', form) + b'\n'     # its layout is learnt
        if form == 'clf':       # a time in the windows
            first = re.sub(br'\d\d/Nov/2025:\d\d', stamps[0], first)
        reader = choice.reader_class('nginx_json')(settings)
        counter = tally.Tally(stamps, line_filter, reader=reader)
        at_once_rules = times.all_dated_by, times.TimeFilter.all_outside
        if not at_once:
            times.all_dated_by = times.TimeFilter.all_outside = lambda *args: False
        try:
            for chunk in (first, data):
                counter.chunk(chunk, chunk.rfind(b'\n'))
        finally:
            times.all_dated_by, times.TimeFilter.all_outside = at_once_rules
        assert reader.layout and (reader.time_filter is None) == (form == 'clf')
        twins = [json_logs.JsonReader.parse(reader, line) for line in (first + data).split(b'\n')[:-1]]
        every = tally.Tally(stamps, line_filter)
        every.chunk(b'\n'.join(t.encode('utf-8', 'surrogateescape') for t in twins if t is not None))
        return counter.counters, reader.unparsed, every.counters
    fast, unparsed, every = in_timezone(tz, lambda: counted(True))
    assert (fast, unparsed) == in_timezone(tz, lambda: counted(False))[:2]
    assert fast == every


# Zones whose offset has seconds (a POSIX TZ; Amsterdam's local mean time before 1937), and whose
# offset changes within a minute (a POSIX TZ's rule at 2:00:10 or 1:59:40).
SECOND_ZONES = ['XXX-0:07:30', 'XXX+3:59:59', 'XXX+0:00:30', 'Europe/Amsterdam', 'AAA-0:07:30BBB-1,J60/2,J300/2:00:10',
                'AAA0BBB-1,J60/1:59:40,J300/2']


def _offset_changes(year):
    """The instants in ``year`` where the local zone's offset changes (to the second)."""
    import calendar
    start = calendar.timegm((year, 1, 1, 0, 0, 0))
    found = []
    for at in range(start, start + 366 * 86400, 3600):
        if time.localtime(at).tm_gmtoff != time.localtime(at + 3600).tm_gmtoff:
            low, high = at, at + 3600
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if time.localtime(middle).tm_gmtoff == time.localtime(at).tm_gmtoff else (low, middle)
            found.append(high)
    return found


def _nginx_time(at, form):
    """What nginx writes for instant ``at`` in this process's zone: $time_local (``form``
    'clf') or $time_iso8601, the local clock with the offset cut to whole minutes (C's division)."""
    local = time.localtime(at)
    minutes = int(local.tm_gmtoff / 60)
    sign, hours, rest = '-' if minutes < 0 else '+', abs(minutes) // 60, abs(minutes) % 60
    if form == 'clf':
        return time.strftime('%d/%b/%Y:%H:%M:%S', local) + ' %s%02d%02d' % (sign, hours, rest)
    return time.strftime('%Y-%m-%dT%H:%M:%S', local) + '%s%02d:%02d' % (sign, hours, rest)


@pytest.mark.parametrize('tz', ['UTC', 'Europe/Berlin', 'Asia/Kolkata'] + SECOND_ZONES)
def test_a_time_is_the_local_time_nginx_writes_to_the_second(tz):
    """clock.LocalTime (a minute's text cached, its second put in): an epoch's local text, an
    ISO-8601 time's in UTC and one written as nginx writes $time_iso8601 are nginx's $time_local
    for the same instant, second for second, around the year's changes of offset, also where the
    offset has seconds (the local second is not UTC's; nginx cuts the offset to whole minutes)
    or changes within a minute."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import LocalTime

    def check():
        clock = LocalTime()
        changes = _offset_changes(2025)
        assert changes or tz in ('UTC', 'Asia/Kolkata', 'XXX-0:07:30', 'XXX+3:59:59', 'XXX+0:00:30', 'Europe/Amsterdam')
        instants = [NOW_EPOCH + delta for delta in range(-70, 70, 3)] + [-2524521600 + delta for delta in range(0, 200, 7)]
        instants += [change + delta for change in changes for delta in range(-75, 75)]
        for at in instants:
            expected = _nginx_time(at, 'clf')
            assert clock.epoch(at) == expected, at
            assert clock.iso8601(time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(at))) == expected, at
            if not any(abs(at - change) < 60 for change in changes):      # (within a minute of a change the offset is not told)
                assert clock.iso8601(_nginx_time(at, 'iso')) == expected, at
    in_timezone(tz, check)


@pytest.mark.parametrize('tz', SECOND_ZONES)
@pytest.mark.parametrize('form', ['iso', 'msec'])
def test_lines_nginx_writes_count_as_their_twins_to_the_second_where_the_offset_has_seconds(tz, form):
    """An nginx JSON log ($time_iso8601: the local clock, its offset cut to whole minutes; or
    $msec) and its combined twin ($time_local, the same clock), a line every 7 seconds of the
    two windows and around their ends: each window counts the same lines, read at once or a
    line a chunk (the time filter), where the zone's offset has seconds or changes within a
    minute."""
    def both():
        now = NOW_EPOCH
        stamps = [w.stamp for w in hour_windows(now)]
        settings = Settings(log_format='nginx_json')
        lines, twins = [], []
        for i, at in enumerate(range(now - 3 * 3600, now + 120, 7)):
            address = '192.0.2.%d' % (i % 50)
            when = _nginx_time(at, 'iso') if form == 'iso' else '%d.%03d' % (at, i % 1000)
            lines.append(json.dumps({'remote_addr': address, 'time_iso8601' if form == 'iso' else 'msec': when,
                                     'request': 'GET /job/%d HTTP/1.1' % i, 'status': '200', 'body_bytes_sent': '5',
                                     'http_referer': '', 'http_user_agent': 'curl/8'}, separators=(',', ':')).encode())
            twins.append(b'%s - - [%s] "GET /job/%d HTTP/1.1" 200 5 "-" "curl/8"' % (address.encode(), _nginx_time(at, 'clf').encode(), i))
        counted = []
        for chunks, reader in (([twins], None), ([lines], True), ([[line] for line in lines], True)):
            reader = choice.reader_class('nginx_json')(settings).bind(lines[0]) if reader else None
            counter = tally.Tally(stamps, rules.LineFilter(settings.job_prefixes, 'Google'), reader=reader)
            for chunk in chunks:
                data = b'\n'.join(chunk) + b'\n'
                counter.chunk(data, len(data) - 1)
            counted.append(_nonzero(counter.counters))
        return counted
    expected, whole, apart = in_timezone(tz, both)
    assert sum(sum(c.values()) for c in expected.values()) > 600
    assert whole == expected and apart == expected


@pytest.mark.parametrize('tz', ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'] + SECOND_ZONES)
def test_a_layouts_iso_times_become_the_twin_times_reader_when_gives(tz):
    """layouts._stamp (a minute converted once, each second put in its text): each time
    value's twin time is reader.when's, in any order, across DST nights, in zones whose offset
    is not whole hours or has seconds (a POSIX TZ, an old date's local mean time), for a leap
    second, and for values that are no time or not ISO-8601."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import layouts

    def check():
        instants = [NOW_EPOCH, 1774746000, 1761354000, 1772953200, 1793512800, 1743307200, -2524521600, 1790000000]
        values = [time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(at + delta + shift)).encode() + zone
                  for at in instants + _offset_changes(2025) for delta in range(-130, 130, 7)
                  for shift, zone in ((0, b'Z'), (0, b'+00:00'), (3600, b'+01:00'), (-18000, b'-05:00'),
                                      (19800, b'+05:30'), (3600, b'+0100'))]
        values += [b'2026-11-21T04:13:60+00:00', b'2026-11-21T04:59:60Z', b'2026-11-21T04:13:6x+00:00',
                   b'2026-11-21T04:13:43+25:00', b'2026-13-21T04:13:43Z', b'2026-11-21 04:13:43+01:00',
                   b'2026-11-21T04:13:43', b'1/Nov/2026:04:13:43 +0000', b'2026-11-21T04:13:+4+00:00', b'2026-11-21T04:13x43+00:00', b'x' * 25]
        random.Random(27).shuffle(values)
        fast = choice.reader_class('nginx_json')(Settings(log_format='nginx_json'))
        slow = choice.reader_class('nginx_json')(Settings(log_format='nginx_json'))
        minutes = {}
        for value in values:
            expected = slow.when(value.decode('ascii'))
            assert layouts._stamp(value, fast, minutes) == (None if expected is None else expected.encode()), value
        # Minutes converted once, but where the offset has seconds (and none of the values is the
        # local clock, as XXX+0:00:30's '+00:00' ones are).
        assert any(minutes.values()) == (tz not in ('XXX-0:07:30', 'XXX+3:59:59'))
    in_timezone(tz, check)


@pytest.mark.parametrize('hour', [4, 10, 0])      # the counted hours 03 and 04, 09 and 10, yesterday's 23 and 00
def test_the_probes_are_told_as_each_one_looked_for_wherever_their_common_start_is(hour):
    """Reader.dates_in looks for the probes' common start first: a chunk holding the first
    probe, the second, both, neither, with or without their common start elsewhere, at its
    start or its end, is told as looking for each probe tells."""
    now = NOW_EPOCH - (NOW_EPOCH % 86400) + hour * 3600 + 600
    stamps = [w.stamp for w in in_timezone('UTC', lambda: hour_windows(now))]
    probes = sorted(set(map(escaping.probe, stamps)))
    common = os.path.commonprefix(probes)
    reader = choice.reader_class('nginx_json')(Settings(log_format='nginx_json'))
    reader.stamps = dict.fromkeys(stamps)
    lines = [b'{"remote_addr":"192.0.2.%d","request":"GET /job/%d HTTP/1.1"}' % (i, i) for i in range(4)]
    for held in ((), (0,), (1,), (0, 1)):
        for other in (b'', common + b'x', b'20' + common[2:] + b'x'):
            for at in (0, len(lines)):
                extra = [b'{"x":"%s"}' % probes[i] for i in held] + ([b'{"x":"%s"}' % other] if other else [])
                text = b'\n'.join(lines[:at] + extra + lines[at:])
                expected = [found for found in probes if found in text]
                assert reader.dates_in(text) == expected, (held, other, at)
                assert reader.dates_in(text + b'\n', len(text), first=True) == expected[:1], (held, other, at)


def _time_key_moved(line, key, where):
    """``line`` with its ``key`` and value moved, as text, to its start or its end (nginx's usual
    layout: $time_local last); an odd line without them there stays as it is."""
    found = re.search(br'"%s":"[^"]*",' % key.encode(), line)
    if where == 'middle' or found is None or not line.startswith(b'{') or not line.endswith(b'}'):
        return line
    rest = line[:found.start()] + line[found.end():]
    pair = found.group(0)[:-1]
    return b'{' + pair + b',' + rest[1:] if where == 'start' else rest[:-1] + b',' + pair + b'}'


@pytest.mark.parametrize('where', ['middle', 'start', 'end'])
def test_a_chunk_of_other_hours_is_told_at_once_only_where_each_line_is_dated_by_its_key(where):
    """times.all_dated_by, the passes over a chunk as it is: True for lines of the usual
    shape, whatever follows ``end`` (the chunk is left out with no line split off), and with
    an odd line anywhere among them True only where times.dated_by holds for each line;
    the key anywhere, first or last on each line (each looked for its own way)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import times
    marker = b'"time_local":"'

    def line(*args):
        return _time_key_moved(_other_hours_line(*args), 'time_local', where)
    plain = [line(ADDRESSES[i % 3], i % 3, i, AGENTS[i % 2], 'plain') for i in range(5)]
    assert plain[0].startswith(b'{' + marker) == (where == 'start') and plain[0].endswith(b'+0000"}') == (where == 'end')
    text = b'\n'.join(plain)
    for tail in (b'', b'\n', b'\n{"remote_addr":"1.2.3.4","time_local":"2026-11-21T04:00:00+00:00', b'\nx\\{{'):
        assert times.all_dated_by(marker, text + tail, len(text))
    if where == 'end':      # told by the search for a line without its key last, not by a match a line
        assert times._shaped_lines(marker)[0].search(text) is None
    # As many '{' as lines, but not one each: a line without its '{', another with a nested object
    # (where the key is not).
    for without, nested in ((1, 3), (3, 1), (2, 4), (4, 2)):
        lines = list(plain)
        lines[without] = lines[without][1:]
        lines[nested] = b'{"x":{"y":"z"},' + lines[nested][1:] if where == 'end' else lines[nested][:-1] + b',"x":{"y":"z"}}'
        text = b'\n'.join(lines)
        assert not times.all_dated_by(marker, text, len(text)), (without, nested)
    odd_kinds = [k for k in OTHER_HOURS_ODD.elements if k != 'plain']
    taken = set()
    for kind in odd_kinds:
        for at in range(len(plain) + 1):
            lines = plain[:at] + [line(ADDRESSES[0], 1, 30, AGENTS[0], kind)] + plain[at:]
            text = b'\n'.join(lines)
            if times.all_dated_by(marker, text, len(text)):
                assert all(times.dated_by(marker, lines)), (kind, at)
                taken.add(kind)
    # Each other odd line sends the chunk line by line; these are dated by their key (the stamp a
    # referer spells is the probes' to find: Reader.dates_in; $time_local comes before $time_iso8601).
    assert taken == set(['escape_makes_stamp', 'first_key_in_window'])


def test_a_chunk_of_other_hours_is_told_at_once_only_where_the_time_filter_leaves_out_each_line():
    """times.TimeFilter.all_outside, the passes over a chunk as it is ($time_iso8601):
    True for lines of the usual shape in other hours than the windows', whatever follows
    ``end``, the key anywhere, and with an odd line anywhere among them True only where
    TimeFilter.keep leaves out each line; False when a line's time is in the windows."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import times
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
    time_filter = times.TimeFilter('time_iso8601', 'iso', ('time_local',))
    # The key where _other_hours_line has it (after an address), first, or after the same bytes on each
    # line (as Caddy's '{"level":"info",'): the last two matched at each line's start.
    for lead in (None, b'{', b'{"level":"info",'):
        def line(*args):
            made = _other_hours_line(*args)
            key = re.search(br'"time_iso8601":"[^"]*",', made)        # moved as text: an odd line stays odd
            if lead is None or key is None or not made.startswith(b'{'):
                return made
            return lead + key.group(0) + made[1:key.start()] + made[key.end():]
        first = lead == b'{'
        # In time order, as a log's chunk: its first line's hour and its last's (the times all_outside
        # places), one hour or two.
        for hours in ((1, 1, 1, 1, 1), (0, 0, 0, 1, 1)):
            plain = [line(ADDRESSES[i % 3], hour, i, AGENTS[i % 2], 'plain', 'iso') for i, hour in enumerate(hours)]
            assert plain[0].startswith(b'{"time_iso8601"') == first
            text = b'\n'.join(plain)
            for tail in (b'', b'\n', b'\n{"time_iso8601":"2025-11-21T04:00:00+00:00"', b'\nx\\{{'):
                assert time_filter.all_outside(text + tail, len(text), stamps)
        window = line(ADDRESSES[0], 3, 30, AGENTS[0], 'plain', 'iso')
        window = re.sub(br'\d{4}-\d\d-\d\dT\d\d', time.strftime('%Y-%m-%dT%H', time.gmtime(NOW_EPOCH - 600)).encode(), window)
        assert time_filter.keep([window], stamps) == [window]
        taken = set()
        # One hour: an odd line's time, first or last, is the other one placed; among enough lines
        # that most places are not of the nine sampled.
        plain = plain[:1] * 30
        for kind in [k for k in OTHER_HOURS_ODD.elements if k != 'plain'] + ['window']:
            odd = window if kind == 'window' else line(ADDRESSES[0], 1, 30, AGENTS[0], kind, 'iso')
            for at in range(len(plain) + 1):
                lines = plain[:at] + [odd] + plain[at:]
                text = b'\n'.join(lines)
                # As JsonReader.translate asks it: of a chunk holding no stamp's probe.
                if not any(escaping.probe(stamp) in text for stamp in stamps) and time_filter.all_outside(text, len(text), stamps):
                    assert time_filter.keep(lines, stamps) == [], (kind, at, lead)
                    taken.add(kind)
        assert taken == set()       # each odd line sends the chunk line by line


# ---------------------------------------------------------------- property: W3C and HAProxy lines made at once, as one by one

ODD_VALUES = ['-', 'a', '/job/1', 'x"y', 'back\\slash', 'caf\u00e9', 'ctl\x01', 'q=1&r=2', '+', 'Mozilla/5.0+(X11)', '']
W3C_FIELDS = [b'date', b'time', b's-ip', b'cs-method', b'cs-uri-stem', b'cs-uri-query', b'c-ip', b'cs(User-Agent)',
              b'cs(Referer)', b'sc-status', b'cs-version', b'sc-bytes', b'cs-username']
W3C_LINE = st.tuples(st.sampled_from(['2025-11-21', '2025-11-21', '2025-11-1', '2025-13-45', 'x']), st.integers(0, 5),
                     st.sampled_from(['%02d:07:09', '%02d:07:09', '%d:07:09', '%02d:99:09', '%02d:07:09.5', '%02d:07']),
                     st.sampled_from(['GET', 'HEAD']), st.sampled_from(['/job/1', '/stelle/2', '/x', '/job/"q', '/job/21/Nov/2025:03']),
                     st.sampled_from(ADDRESSES + ['a"b']), st.sampled_from(ODD_VALUES), st.sampled_from(ODD_VALUES),
                     st.integers(-1, 1), st.sampled_from(['', '', '\r', '\r\r']))
HAPROXY_LINE = st.tuples(st.sampled_from(['', 'Nov 21 04:13:43 lb haproxy[4242]: ', 'x ']), st.sampled_from(ADDRESSES + ['a"b']),
                         st.integers(0, 5), st.sampled_from(['Nov', 'Foo']), st.sampled_from(ODD_VALUES),
                         st.sampled_from(['{%s|jobs.example} ', '{%s} ', '', '{%s} {x} ']),
                         st.sampled_from(['"GET /job/1 HTTP/1.1"', '"GET /job/2', '""', '"G\u00e9T /job/3"']))


def _w3c_line(fields, entry):
    date, hour, clock, method, stem, address, agent, other, extra, end = entry
    values = {b'date': date, b'time': clock % hour, b'cs-method': method, b'cs-uri-stem': stem, b'c-ip': address,
              b'cs(User-Agent)': agent}
    out = [values.get(name, other) for name in fields]
    out = out[:len(fields) + extra] if extra < 0 else out + ['x'] * extra
    return (' '.join(v.replace(' ', '+') or '-' for v in out) + end).encode('utf-8')


def _haproxy_line(entry):
    prefix, address, hour, month, agent, capture, request = entry
    return ('%s%s:41342 [21/%s/2025:%02d:07:09.123] fe be/srv1 10/0/30/69/109 200 512 - - ---- 1/1/1/1/0 0/0 %s%s' % (
        prefix, address, month, hour, capture % agent if '%' in capture else capture, request)).encode('utf-8')


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(['w3c', 'haproxy']), st.permutations(W3C_FIELDS), st.integers(9, 13),
       st.lists(W3C_LINE, min_size=1, max_size=25), st.lists(HAPROXY_LINE, min_size=1, max_size=25),
       st.sampled_from(['UTC', 'Europe/Berlin']))
# A time whose minutes run into a window's hour; a stamp's text in the URI of a line of another hour.
@example('w3c', W3C_FIELDS, 13, [('2025-11-21', 2, '%02d:99:09', 'GET', '/job/1', ADDRESSES[0], 'a', '-', 0, '')],
         [('', ADDRESSES[0], 4, 'Nov', 'a', '', '""')], 'UTC')
@example('w3c', W3C_FIELDS, 13, [('2025-11-21', 1, '%02d:07:09', 'GET', '/job/21/Nov/2025:03', ADDRESSES[0], 'a', '-', 0, '')],
         [('', ADDRESSES[0], 4, 'Nov', 'a', '', '""')], 'UTC')
def test_w3c_and_haproxy_lines_made_at_once_as_one_by_one(fmt, fields, kept, w3c_lines, haproxy_lines, tz):
    """W3C's and HAProxy's lines are turned into twins by passes over all of them (parse_all):
    the same twins and unparsed lines as parse, line by line: fields in any order or absent,
    values that need an escape (a quote, a backslash, non-ASCII, a control), CR LF ends,
    a field too many or too few, odd dates and times, syslog prefixes, truncated requests;
    and W3C's hour prefilter leaves out no line that counts."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    fields = list(fields[:kept])
    if fmt == 'w3c':
        fields = [b'date', b'time'] + [f for f in fields if f not in (b'date', b'time')]
        lines = [_w3c_line(fields, entry) for entry in w3c_lines]
    else:
        lines = [_haproxy_line(entry) for entry in haproxy_lines]
    chosen = Settings(log_format=fmt, haproxy_user_agent_capture=1 if fmt == 'haproxy' else None)

    def made(at_once):
        reader = choice.reader_class(fmt)(chosen)
        reader.fields = text_logs.W3C._fields(b'#Fields: ' + b' '.join(fields))
        if at_once:
            twins = reader.parse_all(list(lines))
        else:
            twins = [t for t in map(reader.parse, lines) if t is not None]
            reader.unparsed = sum(1 for line in lines if line.strip() and reader.parse(line) is None)
        return sorted(twins), reader.unparsed

    def counted(prefilter):
        reader = choice.reader_class(fmt)(chosen)
        reader.fields = text_logs.W3C._fields(b'#Fields: ' + b' '.join(fields))
        if not prefilter:
            reader.in_windows = lambda lines, joined=None: lines
            reader._other_hours = lambda chunk: False
            reader.date_marker = None       # HAProxy: no chunk left out unsplit (Reader.translate)
        counter = tally.Tally([w.stamp for w in hour_windows(NOW_EPOCH)], rules.LineFilter(chosen.job_prefixes, 'Google'),
                              reader=reader)
        data = b'\n'.join(lines) + b'\n'
        counter.chunk(data, data.rfind(b'\n'))
        return counter.counters
    assert in_timezone(tz, lambda: made(True)) == in_timezone(tz, lambda: made(False))
    assert in_timezone(tz, lambda: counted(True)) == in_timezone(tz, lambda: counted(False))


def test_a_w3c_chunk_of_other_hours_is_told_at_once_only_where_in_windows_keeps_no_line():
    """W3C._other_hours, a chunk's passes as it is (no line split off): True for lines of hours
    outside the windows, whether the sampled lines are of one hour or two; with an odd line
    anywhere among thirty (most places not sampled), True only where in_windows keeps none of
    them: a line of a window's hour, of a third hour, another date form, a blank or CR line, a
    window's stamp in a URI, a time whose minutes run past 59."""
    fields = [b'date', b'time', b'cs-method', b'cs-uri-stem', b'c-ip', b'cs(User-Agent)']
    stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]

    def line(hour, clock='%02d:07:09', stem='/job/1', date='2025-11-21'):
        return _w3c_line(fields, (date, hour, clock, 'GET', stem, ADDRESSES[0], 'a', '-', 0, ''))

    def reader():
        made = choice.reader_class('w3c')(Settings(log_format='w3c'))
        made.fields, made.stamps = text_logs.W3C._fields(b'#Fields: ' + b' '.join(fields)), stamps
        return made
    odd = {'window': line(3), 'third hour': line(2), 'short date': line(1, date='2025-11-1'), 'blank': b'',
           'cr': b'\r', 'stamp in uri': line(1, stem='/job/21/Nov/2025:04'), 'minutes past 59': line(0, '%02d:99:09'),
           'no time': line(1, '%02d:07')}
    taken = set()

    def check():
        for hours in ((1,) * 30, (0,) * 15 + (1,) * 15):
            plain = [line(hour) for hour in hours]
            assert reader()._other_hours(b'\n'.join(plain))
            for kind, text in odd.items():
                for at in range(len(plain) + 1):
                    lines = plain[:at] + [text] + plain[at:]
                    if reader()._other_hours(b'\n'.join(lines)):
                        assert reader().in_windows(lines, b'\n'.join(lines)) == [], (kind, at)
                        taken.add(kind)
    in_timezone('UTC', check)
    assert taken == set(['third hour'])     # a line of another hour outside: in_windows keeps none either


@pytest.mark.parametrize('fmt', ['haproxy', 'traefik'])
def test_a_chunk_without_a_stamps_text_is_left_out_unsplit_only_where_in_windows_keeps_no_line(fmt):
    """Reader.translate, for a format whose every line's time is written as combined (HAProxy,
    Traefik): a chunk holding no stamp's text gives no twin, with no line split off, exactly
    where in_windows keeps none of its lines; whether the log is read is told by its first line
    that is not blank, as line by line (blank lines before it, a first line that does not parse)."""
    stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
    chosen = Settings(log_format=fmt, haproxy_user_agent_capture=1 if fmt == 'haproxy' else None)

    def line(hour, path='/job/1'):
        if fmt == 'haproxy':
            return _haproxy_line(('', ADDRESSES[0], hour, 'Nov', 'a', '{%s} ', '"GET %s HTTP/1.1"' % path))
        return ('%s - - [21/Nov/2025:%02d:07:09 +0000] "GET %s HTTP/1.1" 200 5 "-" "a" 1 "router" "http://b" 3ms' % (
            ADDRESSES[0], hour, path)).encode()
    odd = [line(3), line(4), line(1, '/job/21/Nov/2025:04'), b'', b'  \t', b'garbage', line(2)]
    plain = [line(1)] * 6
    fast = 0

    def check():
        taken = 0
        for text in odd:
            for at in range(len(plain) + 1):
                for lead in ([], [b'', b' '], [b'garbage']):
                    lines = lead + plain[:at] + [text] + plain[at:]
                    chunk = b'\n'.join(lines)
                    reader = choice.reader_class(fmt)(chosen)
                    reader.stamps = stamps
                    twins, read = reader.translate(chunk + b'\n', len(chunk))
                    slow = choice.reader_class(fmt)(chosen)
                    slow.stamps = stamps
                    if not twins:
                        taken += 1
                        assert slow.candidates(lines, chunk) == [], (text, at, lead)
                    first = next(item for item in lines if item.strip())
                    assert read == (bool(twins) or slow.parse(first) is not None), (text, at, lead)
        return taken
    fast = in_timezone('UTC', check)
    assert fast > 0


def test_the_w3c_and_haproxy_property_test_counts_lines():
    """The property test above is not vacuous: its lines can count."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    fields = [b'date', b'time'] + W3C_FIELDS[2:]
    for fmt, line in (('w3c', _w3c_line(fields, ('2025-11-21', 3, '%02d:07:09', 'GET', '/job/1', ADDRESSES[0],
                                                 'Mozilla/5.0+(X11)', '-', 0, '\r'))),
                      ('haproxy', _haproxy_line(('', ADDRESSES[0], 4, 'Nov', 'Mozilla/5.0', '{%s|jobs.example} ',
                                                 '"GET /job/1 HTTP/1.1"')))):
        reader = choice.reader_class(fmt)(Settings(log_format=fmt, haproxy_user_agent_capture=1))
        reader.fields = text_logs.W3C._fields(b'#Fields: ' + b' '.join(fields))
        counter = tally.Tally([w.stamp for w in in_timezone('UTC', lambda: hour_windows(NOW_EPOCH))],
                              rules.LineFilter(Settings().job_prefixes, 'Google'), reader=reader)
        in_timezone('UTC', lambda: counter.chunk(line + b'\n', len(line)))
        assert sum(sum(c.values()) for c in counter.counters.values()) == 1, fmt


def test_a_raw_line_holds_the_probe_of_every_stamp_its_twin_holds():
    """An escape in a twin ('\\xA2') ends with hex digits, which with the raw text after it
    ('1/Nov/2026:04') may spell a stamp ('21/Nov/2026:04') the raw line does not hold: the
    windows' passes look for escaping.probe of each stamp, which the raw line then holds."""
    for day in range(1, 32):
        for stamp in (b'%02d/Nov/2026:04' % day, b'%02d/Nov/2026:' % day):
            for byte in range(256):
                for cut in range(3):
                    raw = bytes((byte,)) + stamp[cut:]
                    if stamp in escaping.escaped(raw):
                        assert escaping.probe(stamp) in raw, (stamp, raw)
    assert escaping.probe(b'21/Nov/2026:04') == b'1/Nov/2026:04'
    assert escaping.probe(b'12/Nov/2026:04') == b'/Nov/2026:04'      # \x12, a control byte


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(REQUEST, st.sampled_from([None, None, None, b'garbage /job/1', b'{"request":"GET /job/2"}', b'',
                                                    b'{not json /stelle/3'])), min_size=1, max_size=60),
       st.sampled_from(logformats.FORMATS), st.integers(0, 5), st.lists(st.integers(1, 60), max_size=6),
       st.sampled_from(['UTC', 'Europe/Berlin']))
def test_the_counts_and_unparsed_lines_do_not_depend_on_the_chunks(requests, fmt, style, cuts, tz):
    """A log read in one chunk or cut into several at any lines (as reads of 1 MiB, forked
    workers and incremental runs cut it): the same counts and the same unparsed lines, with
    lines of no format among them, the reader made as a run makes it (its layout and time
    key learnt from the log's start)."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows

    def counted():
        lines = []
        for (address, offset, method, path, agent, referer), odd in requests:
            lines.append(('%s - - [%s] "%s %s HTTP/1.1" 200 %d "%s" "%s"' % (
                address, loggen.clf_time(NOW_EPOCH + offset), method, path, len(path), referer,
                agent.replace('"', "'").replace('\\', '/'))).encode('utf-8'))
        data = logformats.render_log(fmt, b'\n'.join(lines) + b'\n', style)[0].split(b'\n')[:-1]
        for at, ((dummy, odd), dummy2) in enumerate(zip(requests, list(data))):
            if odd is not None:
                data.insert(at + 1, odd)
        settings = Settings(log_format=fmt, haproxy_user_agent_capture=1 if fmt == 'haproxy' else None)
        stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
        found = []
        for bounds in ([0, len(data)], [0] + sorted(set(c % (len(data) + 1) for c in cuts)) + [len(data)]):
            reader = choice.reader_class(fmt)(settings)
            reader = reader.bind(b'\n'.join(data)[:readers.HEAD_BYTES]) if reader.needs_head else reader
            counter = tally.Tally(stamps, rules.LineFilter(settings.job_prefixes, 'Google'), reader=reader)
            for low, high in zip(bounds, bounds[1:]):
                if high > low:
                    chunk = b'\n'.join(data[low:high]) + b'\n'
                    counter.chunk(chunk, len(chunk) - 1)
            found.append((counter.counters, reader.unparsed))
        return found
    whole, cut = in_timezone(tz, counted)
    assert whole == cut


# ---------------------------------------------------------------- property: the JSON layouts' twins are those of decoding

LAYOUT_VALUES = st.sampled_from(['"a"', '""', '"GET"', '"/job/1"', '"x y"', '200', '0', '-0', '0200', '-5', '2e2', '200.0',
                                 'true', 'null', '{"a":1}', '["x"]', '"caf\u00e9"', '"q\\"x"', '"2025-11-21T04:05:06+00:00"',
                                 '"2025-11-21T04:05:06"', '"1.5"', '"[21/Nov/2025:04:05:06 +0000]"', '"[21/Nov/2025:04:05:06"'])


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(['nginx_json', 'traefik_json']), st.integers(0, 1), st.data(), st.sampled_from(['UTC', 'Asia/Kolkata']))
def test_the_json_layouts_make_the_twins_decoding_makes(fmt, spaces, data, tz):
    """nginx_json's and traefik_json's layout (layouts.Layout, learnt from the log's
    first line) makes, for each line it matches, the twin that decoding the line makes
    (JSON's number forms, types, escapes, empty values, missing or added keys, blanks); the
    lines it does not match are left to decoding."""
    if fmt == 'traefik_json':
        base = {'ClientHost': '"198.51.100.7"', 'DownstreamContentSize': '5', 'DownstreamStatus': '200',
                'RequestMethod': '"GET"', 'RequestPath': '"/job/1"', 'RequestProtocol': '"HTTP/1.1"',
                'StartLocal': '"2025-11-21T04:05:06+00:00"', 'StartUTC': '"2025-11-21T04:05:06Z"',
                'request_Referer': '"https://x.example/"', 'request_User-Agent': '"Mozilla/5.0"', 'level': '"info"',
                'Duration': '1200'}
        base = dict(item for item in base.items() if item[0] not in data.draw(st.sets(st.sampled_from(
            ['RequestProtocol', 'request_Referer', 'RequestPath', 'Duration']))))
    else:
        base = {'remote_addr': '"198.51.100.7"', 'time_iso8601': '"2025-11-21T04:05:06+00:00"', 'request': '"GET /job/1 HTTP/1.1"',
                'status': '"200"', 'body_bytes_sent': '"5"', 'http_referer': '""', 'http_user_agent': '"Mozilla/5.0"'}
    changes = data.draw(st.lists(st.dictionaries(st.sampled_from(sorted(base) + ['extra', 'OriginStatus']), LAYOUT_VALUES,
                                                 max_size=3), min_size=1, max_size=20))
    sep = (', ', ': ') if spaces else (',', ':')

    def render(values):
        return ('{' + sep[0].join('"%s"%s%s' % (k, sep[1], v) for k, v in values.items()) + '}').encode('utf-8')
    # Text around a line: before its '{' it is no JSON (x), or a blank JSON allows; after it, the same.
    frames = data.draw(st.lists(st.sampled_from([('', ''), ('', ''), ('x', ''), (' ', ''), ('', 'x'), ('', ' \r')]),
                                min_size=len(changes), max_size=len(changes)))
    lines = [render(base)] + [b'%s%s%s' % (before.encode(), render(dict(base, **change)), after.encode())
                              for change, (before, after) in zip(changes, frames)]

    def made():
        reader = choice.reader_class(fmt)(Settings(log_format=fmt)).bind(lines[0])
        assert reader.layout, 'the first line has a layout'
        fast, slow = reader.layout.twins(list(lines), reader)
        matched = [line for line in lines if line not in slow]
        expected = sorted(t.encode('utf-8', 'surrogateescape') for t in map(reader.parse, matched) if t is not None)
        return sorted(fast.split(b'\n')) if fast else [], expected, len(matched)
    fast, expected, matched = in_timezone(tz, made)
    assert fast == expected
    assert matched >= 1


@pytest.mark.parametrize('change', [{'level': '0200'}, {'Duration': '-'}, {'DownstreamStatus': '0200'}, {'DownstreamStatus': '-0'},
                                    {'DownstreamContentSize': '5.0'}, {'DownstreamStatus': '"200"'}, {'level': '["x", {"y": 1}]'}])
def test_the_traefik_layout_leaves_odd_values_to_decoding(change):
    """Values JSON does not read, or reads otherwise than their text: the layout's twin is
    decoding's, or the line is left to decoding."""
    base = {'ClientHost': '"198.51.100.7"', 'DownstreamContentSize': '5', 'DownstreamStatus': '200', 'RequestMethod': '"GET"',
            'RequestPath': '"/job/1"', 'RequestProtocol': '"HTTP/1.1"', 'StartLocal': '"2025-11-21T04:05:06+00:00"',
            'request_User-Agent': '"Mozilla/5.0"', 'level': '"info"', 'Duration': '1200'}

    def render(values):
        return ('{' + ','.join('"%s":%s' % item for item in values.items()) + '}').encode('utf-8')
    line = render(dict(base, **change))
    reader = choice.reader_class('traefik_json')(Settings(log_format='traefik_json')).bind(render(base))
    fast, slow = in_timezone('UTC', lambda: reader.layout.twins([line], reader))
    made = in_timezone('UTC', lambda: reader.parse(line))
    assert (fast or None) == (None if slow else made.encode())


CADDY_HEADERS = st.lists(st.sampled_from([('User-Agent', '["Mozilla/5.0"]'), ('User-Agent', '["curl/8"]'),
                                          ('Referer', '["https://y.example/"]'), ('User-Agent', '["a", "b"]'), ('User-Agent', '[""]'),
                                          ('User-Agent', '[]'), ('Referer', '["https://x.example/"]'), ('Referer', '[""]'),
                                          ('Referer', '["r1", "r2"]'), ('Accept', '["*/*"]'), ('X-User-Agent', '["x"]'),
                                          ('Cookie', '["a=1", "b=2"]')]), max_size=5)
CADDY_VALUES = st.sampled_from(['"x"', '""', '0', '200', '-0', '0200', '1.5', '1795234000.25', '1e9', 'true', 'null', '"200"',
                                '{"a": 1}', '"caf\u00e9"', '"q\\"x"'])


CADDY_CHANGED = st.sampled_from(['ts', 'status', 'size', 'level', 'client_ip', 'remote_ip', 'method', 'uri', 'proto', 'host', 'tls',
                                 'resp_headers'])


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(CADDY_HEADERS, st.dictionaries(CADDY_CHANGED, CADDY_VALUES, max_size=2)), min_size=1, max_size=15),
       st.booleans(), st.booleans(), st.sampled_from(['UTC', 'Europe/Berlin']))
@example([([('User-Agent', '["a"]')], {'ts': '0200'}), ([('User-Agent', '["a"]')], {'status': '0200'}),
          ([('User-Agent', '["a"]'), ('User-Agent', '["curl/8"]')], {})], True, True, 'UTC')
@example([([('User-Agent', '["a"]')], {'tls': '{"a": [1]}'}), ([('User-Agent', '["a"]')], {'resp_headers': '{"X": [1]}'}),
          ([('User-Agent', '["a"]')], {'resp_headers': '{"X": 0200}'}), ([('User-Agent', '["a"]')], {'tls': '{"a":0200}'})],
         True, True, 'UTC')
def test_the_caddy_layout_makes_the_twins_decoding_makes(lines, with_client_ip, with_objects, tz):
    """Caddy's layout (layouts.CaddyLayout, learnt from the log's first line) makes, for
    each line it matches, the twin that decoding makes: headers in any order, twice, with
    several values or none, other types and number forms; the others are left to decoding."""
    request_keys = ['remote_ip', 'remote_port'] + (['client_ip'] if with_client_ip else []) + ['proto', 'method', 'host', 'uri']

    def render(headers, changes):
        values = ['198.51.100.7', '41342'] + (['203.0.113.9'] if with_client_ip else []) + ['HTTP/1.1', 'GET', 'jobs.example', '/job/1']
        request = dict((k, '"%s"' % v) for k, v in zip(request_keys, values))
        if with_objects:    # as Caddy logs HTTPS requests and its response headers
            request['tls'] = '{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"jobs.example"}'
        request.update((k, v) for k, v in changes.items() if k in request)
        request['headers'] = '{%s}' % ','.join('"%s":%s' % h for h in headers)
        top = {'level': '"info"', 'ts': '1795234000.5', 'logger': '"http.log.access"',
               'request': '{%s}' % ','.join('"%s":%s' % item for item in request.items()), 'size': '5', 'status': '200'}
        if with_objects:
            top['resp_headers'] = '{"Server":["Caddy"],"Content-Type":["text/html; charset=utf-8"]}'
        top.update((k, v) for k, v in changes.items() if k in top and k != 'request')
        return ('{%s}' % ','.join('"%s":%s' % item for item in top.items())).encode('utf-8')
    first = render([('User-Agent', '["Mozilla/5.0"]'), ('Accept', '["*/*"]')], {})
    raw = [first] + [render(headers, changes) for headers, changes in lines]

    def made():
        reader = choice.reader_class('caddy')(Settings(log_format='caddy')).bind(first)
        assert reader.layout, 'the first line has a layout'
        fast, slow = reader.layout.twins(list(raw), reader)
        matched = [line for line in raw if line not in slow]
        expected = sorted(t.encode('utf-8', 'surrogateescape') for t in map(reader.parse, matched) if t is not None)
        return sorted(fast.split(b'\n')) if fast else [], expected
    fast, expected = in_timezone(tz, made)
    assert fast == expected


# ---------------------------------------------------------------- odd lines a hunt for cases that break the fast paths found

_N = (b'{"remote_addr":"198.51.100.1","time_local":"21/Nov/2025:01:00:00 +0000","request":"GET /job/1 HTTP/1.1","status":"200",'
      b'"body_bytes_sent":"5","http_referer":"","http_user_agent":"Mozilla"%s}\n')
_M = (b'{"remote_addr":"198.51.100.1","msec":%s,"request":"GET /job/1 HTTP/1.1","status":"200","body_bytes_sent":"5",'
      b'"http_referer":"","http_user_agent":"Mozilla"}\n')
_ISO_LINE = (b'{"remote_addr":"198.51.100.1","time_iso8601":"%s","request":"GET /job/1 HTTP/1.1","status":"200",'
             b'"body_bytes_sent":"5","http_referer":"","http_user_agent":"Mozilla"}\n')
_TRAEFIK_LINE = (b'{"ClientHost":"198.51.100.1","StartLocal":"%s","RequestMethod":"GET","RequestPath":"/job/1",'
                 b'"RequestProtocol":"HTTP/1.1","DownstreamStatus":200,"DownstreamContentSize":5,"request_User-Agent":"Mozilla"}\n')
_CADDY_LINE = (b'{"level":"info","ts":%s,"request":{"remote_ip":"198.51.100.1","client_ip":"198.51.100.1","proto":"HTTP/1.1",'
               b'"method":"GET","uri":"/job/1","headers":{"User-Agent":["Mozilla"]}},"size":5,"status":200}\n')
_W3C_HEAD = b'#Fields: date time c-ip cs-method cs-uri-stem cs-uri-query cs(User-Agent) sc-status\n'
_MISALIGNED = (b'{"remote_addr":"198.51.100.1","time_local":"21/Nov/2025:04:00:00 +0000","request":"GET /job/1 HTTP/1.1",'
               b'"status":"200","body_bytes_sent":"5","http_referer":"a\nb/job/","http_user_agent":"Mozilla"},{}\n')


@pytest.mark.parametrize('fmt, data, extra', [
    ('nginx_json', _ISO_LINE % b'2025-11-21T01:00:00+00:00' + _ISO_LINE % b'2025-11-21T02:59:60+00:00', {}),     # leap second
    ('traefik_json', _TRAEFIK_LINE % b'2025-11-21T01:00:00Z' + _TRAEFIK_LINE % b'2025-11-21T02:59:60Z', {}),
    ('nginx_json', _M % b'"1763600000.000"' + _M % b'"1763693999.99999999"', {}),      # a fraction rounding up
    ('nginx_json', _M % b'"1763600000.000"' + _M % b'1763693999.99999999', {}),
    ('caddy', _CADDY_LINE % b'1763600000.5' + _CADDY_LINE % b'1763693999.99999999', {}),
    ('nginx_json', _N % b'' + _N % b',"time_local":1763694000', {}),        # the time key twice, as JSON keeps the last
    ('nginx_json', _N % b'' + _N % b',"time_local" :"21/Nov/2025:04:00:00 +0000"', {}),
    ('nginx_json', _M % b'"1763600000.000"' + (_M % b'"1763600000.000"')[:-2] + b',"msec" :"1763694000.000"}\n', {}),
    ('nginx_json', _M % b'"1763600000.000"' + (_M % b'"1763600000.000"')[:-2] + b',"time_local" :"21/Nov/2025:04:00:00 +0000"}\n', {}),
    ('caddy', _CADDY_LINE % b'1763600000.5' + (_CADDY_LINE % b'1763600000.5')[:-2] + b',"ts" :1763694000.5}\n', {}),
    ('nginx_json', _N % b'' + (_N % b'').replace(b'"Mozilla"', u'["\ue021/Nov/2025:04"]'.encode('utf-8')), {}),     # a list
    ('traefik_json', _TRAEFIK_LINE % b'2025-11-21T01:00:00Z' + (_TRAEFIK_LINE % b'2025-11-21T01:00:00Z').replace(
        b'"Mozilla"', u'["\ue021/Nov/2025:04"]'.encode('utf-8')), {}),
    ('caddy', _CADDY_LINE % b'1763600000.5' + (_CADDY_LINE % b'1763600000.5').replace(
        b'["Mozilla"]', u'[["\ue021/Nov/2025:04"]]'.encode('utf-8')), {}),
    ('nginx_json', _N % b'' + json.dumps(dict(json.loads(_N % b''), time_local='21/Nov/2025:04:00:00 +0000'),
                                         separators=(',', ':')).encode('utf-16-le') + b'\n', {}),       # UTF-16
    ('nginx_json', (_N % b'').replace(b'01:00:00', b'04:00:00') + _MISALIGNED, {}),      # one array of lines: misread
    ('w3c', _W3C_HEAD + b'2025-11-21 99999999999999999999:00:00 198.51.100.1 GET /job/1 - Mozilla 200\n', {}),
    ('w3c', _W3C_HEAD + b'99999999999-11-21 04:00:00 198.51.100.1 GET /job/1 - Mozilla 200\n'
     + b'2025-11-21 04:00:00 198.51.100.2 GET /job/1 - Mozilla 200\n', {}),
    ('w3c', b'#Fields: date date time c-ip\n2025-11-21 2025-11-21 04:00:00\n2025-11-21 2025-11-21 04:00:00 198.51.100.1\n', {}),
    ('w3c', _W3C_HEAD + b'2025-11-21 04:00:00 198.51.100.1 GET /jobs id=5 Mozilla 200\n', {'job_prefixes': ['GET /jobs?id=']}),
])
def test_odd_lines_found_by_a_hunt_count_as_parsing_every_line(fmt, data, extra):
    """Each found by a hunt for cases that break the fast paths: the run counts as parsing
    (or decoding) every line and counting its twin, in one chunk and a chunk per line, the
    same unparsed lines both ways, and nothing raises."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reading import tally
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
    settings = Settings(log_format=fmt, **extra)

    def counted(chunks):
        reader = choice.reader_class(fmt)(settings)
        reader = reader.bind(data[:readers.HEAD_BYTES]) if reader.needs_head else reader
        counter = tally.Tally([w.stamp for w in hour_windows(NOW_EPOCH)], rules.LineFilter(settings.job_prefixes, 'Google'),
                              reader=reader)
        for chunk in chunks:
            counter.chunk(chunk, chunk.rfind(b'\n'))
        return counter.counters, reader.unparsed

    def every():
        reader = choice.reader_class(fmt)(settings)
        reader = reader.bind(data[:readers.HEAD_BYTES]) if reader.needs_head else reader
        twins = [reader.parse(line) for line in data.split(b'\n')[:-1] if not line.startswith(b'#')]
        counter = tally.Tally([w.stamp for w in hour_windows(NOW_EPOCH)], rules.LineFilter(settings.job_prefixes, 'Google'))
        counter.chunk(b'\n'.join(t if isinstance(t, bytes) else t.encode('utf-8', 'surrogateescape') for t in twins if t))
        return counter.counters
    whole = in_timezone('UTC', lambda: counted([data]))
    lines = data.split(b'\n')[:-1]
    head = 1 if fmt == 'w3c' else 0
    by_line = in_timezone('UTC', lambda: counted([b'\n'.join(lines[:head + 1]) + b'\n'] + [line + b'\n' for line in lines[head + 1:]]))
    assert whole == by_line
    assert whole[0] == in_timezone('UTC', every)


# ---------------------------------------------------------------- found by a third hunt (busy logs, odd zones)
# Reproducers written before the fixes; expected values from decoding every line, or the same
# log in other chunks.
_MSEC = (b'{"remote_addr":"198.51.100.%d","msec":"%d.%03d","request":"GET /job/%d HTTP/1.1","status":"200",'
         b'"body_bytes_sent":"5","http_referer":"","http_user_agent":"Mozilla/5.0"}')
_CADDY = (b'{"level":"info","ts":%s,"logger":"http.log.access","request":{"remote_ip":"198.51.100.%d","remote_port":"41342",'
          b'"client_ip":"198.51.100.%d","proto":"HTTP/1.1","method":"GET","host":"jobs.example","uri":"/job/%d",'
          b'"headers":{"User-Agent":["Mozilla/5.0"],"Accept":["*/*"]}},"size":5,"status":200}')
_ISO = (b'{"remote_addr":"%s","time_iso8601":"%s","request":"GET /job/1 HTTP/1.1","status":"200","body_bytes_sent":"5",'
        b'"http_referer":"","http_user_agent":"Mozilla/5.0"}')


def _nonzero(counters):
    """{stamp: {address: count}} without zero entries."""
    return dict((stamp, dict((k, v) for k, v in counter.items() if v)) for stamp, counter in counters.items())


def _decoding_every_line(fmt, lines, stamps, tracked=(), **extra):
    """The counts of decoding (parsing) every line on its own and counting its twin as combined."""
    settings = Settings(log_format=fmt, **extra)
    data = b'\n'.join(lines) + b'\n'
    reader = choice.reader_class(fmt)(settings)
    reader = reader.bind(data[:readers.HEAD_BYTES]) if reader.needs_head else reader
    parse = (lambda line: json_logs.JsonReader.parse(reader, line)) if reader.json else reader.parse
    twins = [parse(line) for line in lines]
    counter = tally.Tally(stamps, rules.LineFilter(settings.job_prefixes, 'Google'), tracked)
    counter.chunk(b'\n'.join(t if isinstance(t, bytes) else t.encode('utf-8', 'surrogateescape') for t in twins if t))
    return _nonzero(counter.counters)


def _in_chunks_of(fmt, lines, stamps, size, tracked=(), **extra):
    """The counts of one reader (as a run, or a follower, keeps it) over the log cut into
    chunks of ``size`` lines, each as chunks.count_range hands it to Tally.chunk."""
    settings = Settings(log_format=fmt, **extra)
    data = b'\n'.join(lines) + b'\n'
    reader = choice.reader_class(fmt)(settings)
    reader = reader.bind(data[:readers.HEAD_BYTES]) if reader.needs_head else reader
    counter = tally.Tally(stamps, rules.LineFilter(settings.job_prefixes, 'Google'), tracked, reader=reader)
    for low in range(0, len(lines), size):
        chunk = b'\n'.join(lines[low:low + size]) + b'\n'
        counter.chunk(chunk, len(chunk) - 1)
    return _nonzero(counter.counters), reader.unparsed


def _msec_lines(count):
    """A busy nginx_json log with $msec (as nginx writes it, in quotes): 20 requests a
    second over the windows' hours, each with its own millisecond."""
    return [_MSEC % (i % 40, NOW_EPOCH - 3000 + i // 20, (i * 37) % 1000, i) for i in range(count)]

# the time caches (reader.times)


def test_a_busy_msec_log_counts_as_decoding_every_line():
    """nginx_json with $msec, 40000 lines read in chunks of 4000 (a 7 MB log in 1 MiB reads).
    Expected: the counts of decoding every line. Got: KeyError from Layout.twins
    (layouts.py:133, ``map(times.__getitem__, columns[1])``). The loop just above
    fills ``reader.times`` for each new time value, and ``reader.when`` (json_logs.py:176)
    clears that same dict when it holds more than 65536 entries: the loop's own entries made
    before the clear are gone when they are looked up. Each distinct time adds two entries
    (its bytes for the layout, its text for when), so a log of ~33000 distinct times within the
    windows crashes the run (and a follower, whose reader lives on, after ~33000 lines)."""
    stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
    lines = _msec_lines(40000)
    expected = in_timezone('UTC', lambda: _decoding_every_line('nginx_json', lines, stamps))
    assert sum(expected[stamps[0]].values()) > 30000
    got, unparsed = in_timezone('UTC', lambda: _in_chunks_of('nginx_json', lines, stamps, 4000))
    assert (got, unparsed) == (expected, 0)


def test_a_busy_caddy_log_read_a_few_lines_at_a_time_counts_as_decoding_every_line():
    """Caddy (its ``ts`` a float with a fraction: every line's time distinct), 34000 lines read
    by one reader 500 lines at a time, as a follower or a run's successive reads do. Expected:
    the counts of decoding every line. Got: KeyError in Layout.twins (layouts.py:133):
    the chunk during which reader.times passes 65536 entries has its own entries cleared by
    JsonReader.when (json_logs.py:176) before Layout.twins looks them up."""
    stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
    lines = [_CADDY % (repr(NOW_EPOCH - 3000 + i * 0.0731 + 0.000123).encode(), i % 30, i % 30, i) for i in range(34000)]
    expected = in_timezone('UTC', lambda: _decoding_every_line('caddy', lines, stamps))
    assert sum(map(len, expected.values())) > 0
    got, unparsed = in_timezone('UTC', lambda: _in_chunks_of('caddy', lines, stamps, 500))
    assert (got, unparsed) == (expected, 0)


def test_the_command_reads_a_busy_msec_log_as_its_twin_log(tmp_path):
    """The command itself on a 7 MB nginx_json log with $msec (40000 requests in 2000 s,
    one reader over 1 MiB reads, no fork): it must end as the same command on the log's twins
    read as combined (the twins made by decoding every line). Got: exit status 1 and a Python
    traceback ending in KeyError (layouts.py:133, Layout.twins; see the test above)."""
    lines = _msec_lines(40000)
    log, twins = tmp_path / 'access.json', tmp_path / 'twins.log'
    log.write_bytes(b'\n'.join(lines) + b'\n')
    reader = choice.reader_class('nginx_json')(Settings(log_format='nginx_json')).bind(lines[0])
    made = in_timezone('UTC', lambda: [json_logs.JsonReader.parse(reader, line) for line in lines])
    twins.write_bytes('\n'.join(made).encode('utf-8') + b'\n')
    common = ['--now', NOW, '--threshold', '50', '--check', '--json']
    theirs = run_core(Files(tmp_path / 'b').options() + common + ['--log-format', 'combined', twins])
    assert theirs.returncode == 0, theirs.stderr
    ours = run_core(Files(tmp_path / 'a').options() + common + ['--log-format', 'nginx_json', log])
    assert ours.returncode == 0, ours.stderr[-300:]
    assert json.loads(ours.stdout)['blocked'] == json.loads(theirs.stdout)['blocked']


def test_a_busy_haproxy_log_over_a_day_of_tracked_hours_counts_as_parsing_every_line():
    """The same cache defect in HAProxy's batch path (text_logs.Haproxy.parse_all): an
    incremental run's tally tracks the day's other hours, so a day-long log's lines of every
    hour are parsed; 70000 seconds of one request a second, read in chunks of 4000 lines.
    Expected: the counts of parsing every line. Got: KeyError at text_logs.py:127
    (``map(times.__getitem__, stamp)``): the loop over the missing seconds calls
    Haproxy._when, which clears ``self.times`` past 65536 entries, dropping the seconds the
    same loop filled before."""
    now = NOW_EPOCH + 19 * 3600
    lines = [b'haproxy[1]: 198.51.100.%d:33317 [%s.%03d] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 '
             b'{Mozilla} "GET /job/1 HTTP/1.1"' % (i % 200, time.strftime('%d/%b/%Y:%H:%M:%S', time.gmtime(now - 68580 + i)).encode(),
                                                   i % 1000) for i in range(70000)]
    stamps = [w.stamp for w in hour_windows(now)]
    tracked = [hour_stamp(now - k * 3600).encode('ascii') for k in range(2, 20)]
    expected = in_timezone('UTC', lambda: _decoding_every_line('haproxy', lines, stamps, tracked, haproxy_user_agent_capture=1))
    got, unparsed = in_timezone('UTC', lambda: _in_chunks_of('haproxy', lines, stamps, 4000, tracked, haproxy_user_agent_capture=1))
    assert (got, unparsed) == (expected, 0)

# a local time zone off the quarter hours


@pytest.mark.parametrize('zone', ['XXX-0:07', 'XXX-0:07:30'])
def test_iso_lines_count_alike_in_any_chunks_under_a_zone_off_the_quarter_hours(zone):
    """TZ='XXX-0:07' (a POSIX zone 7 minutes east of UTC: the host's local hour 03 is
    02:53-03:53 UTC). Three requests at 02:53:43Z (local 03:00:43, the previous window) after
    one at 04:12:43Z. Expected (decoding every line): 3 requests of 2.2.2.2 in the previous
    window, whatever the chunks. Got: 3 when the four lines are one chunk (a sampled time in
    the windows: the layout's twins, no time filter), 0 when the three lines are a chunk of
    their own (TimeFilter.sampled/all_outside, and TimeFilter.keep line by line, leave them
    out). times.instants_of (times.py:223) places the windows in 15-minute steps
    ("every zone's offset is a multiple of 15 minutes"), so the window's first 7 minutes are
    lost and _outside calls the 02:00Z hour outside. No IANA zone has such an offset today;
    a POSIX TZ string (or an old zone's LMT) does."""
    def both():
        stamps = [w.stamp for w in hour_windows(NOW_EPOCH)]
        assert stamps == [b'21/Nov/2025:03', b'21/Nov/2025:04']

        def line(epoch, address):
            return _ISO % (address, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch)).encode())
        lines = [line(NOW_EPOCH - 60, b'1.1.1.1')] + [line(NOW_EPOCH - 4800, b'2.2.2.2')] * 3
        settings = Settings(log_format='nginx_json')
        reader = choice.reader_class('nginx_json')(settings).bind(lines[0])
        expected = _decoding_every_line('nginx_json', lines, stamps)
        apart = tally.Tally(stamps, rules.LineFilter(settings.job_prefixes, 'Google'), reader=reader)
        for chunk in (lines[:1], lines[1:]):
            data = b'\n'.join(chunk) + b'\n'
            apart.chunk(data, len(data) - 1)
        return expected, _in_chunks_of('nginx_json', lines, stamps, 4)[0], _nonzero(apart.counters)
    expected, whole, apart = in_timezone(zone, both)
    assert expected[b'21/Nov/2025:03'] == {b'2.2.2.2': 3}
    assert whole == expected
    assert apart == expected


# ---------------------------------------------------------------- found by a hunt around the fast paths (each failed before its fix)
W3C_HEAD = b'#Software: IIS\n#Version: 1.0\n#Fields: date time cs-method cs-uri-stem c-ip cs(User-Agent)\n'


def _w3c(i, agent=b'curl/8'):
    return b'2025-11-21 04:%02d:09 GET /job/%d 198.51.100.%d %s\n' % (i % 10, i, 1 + i % 2, agent)


def _combined(i):
    return b'198.51.100.%d - - [21/Nov/2025:04:%02d:09 +0000] "GET /job/%d" - - "-" "curl/8"\n' % (1 + i % 2, i % 10, i)


def _haproxy(i):
    return (b'198.51.100.%d:41342 [21/Nov/2025:04:%02d:09.123] fe be/srv1 10/0/30/69/109 200 512 - - ---- 1/1/1/1/0 0/0 '
            b'{curl/8|x} "GET /job/%d HTTP/1.1"\n' % (1 + i % 2, i % 10, i))


def _run(log, fmt, base, now=NOW_EPOCH, **extra):
    """(windows' records, verdicts, warnings) of a run on ``log`` read as ``fmt``."""
    files = Files(base)
    settings = Settings(log_format=fmt, threshold=3, top=5, server_ips=['10.0.0.5'], blocklist=str(files.blocklist),
                        exclusions_file=str(files.exclusions), activity_log=str(files.activity_log), seek=False,
                        haproxy_user_agent_capture=1 if fmt == 'haproxy' else None, **extra)
    result = run.detect(settings, [str(log)], now=now, check_mode='state_dir' not in extra)
    return ([(w['name'], sorted((r['address'], r['count']) for r in w['records'])) for w in result.windows],
            result.by_verdict, [w.replace(str(log), 'LOG') for w in result.warnings])


def _rotated_run(tmp, fmt, head, line, appended, new_head):
    """Two incremental runs (state_dir, rotated): the first on a log of 3 lines; then lines are
    appended, the log compressed to LOG.1.gz (logrotate without delaycompress) and LOG made
    anew holding ``new_head``; the second run's result."""
    log, state = tmp / 'access.log', tmp / 'state'
    state.mkdir(parents=True)
    log.write_bytes(head + b''.join(line(i) for i in range(3)))
    _run(log, fmt, tmp / 'a', NOW_EPOCH, state_dir=str(state), rotated=True)
    with open(str(log), 'ab') as handle:
        handle.write(appended)
    (tmp / 'access.log.1.gz').write_bytes(gzip.compress(log.read_bytes()))
    log.write_bytes(new_head)
    return _run(log, fmt, tmp / 'b', NOW_EPOCH + 60, state_dir=str(state), rotated=True)


def _rotated_run_utc(*args):
    return in_timezone('UTC', lambda: _rotated_run(*args))


def test_w3c_lines_read_on_in_a_rotated_gzip_file_use_that_files_fields(tmp_path):
    """An incremental W3C run reads on in LOG.1.gz after a rotation (Reading._read_on_gzip ->
    count_stream) with the reader bound to the NEW log's head: no W3C.start_at / fields_before
    runs for a stream, so the #Fields: in force at the state's offset in LOG.1.gz is never
    read. With the new LOG still empty (IIS writes its header with the first request) the
    fields are None: the 9 lines appended before the rotation all fail to parse, nothing is
    counted, and the run even warns that LOG.1.gz is in no access-log format. Expected: as
    the twin log read as combined through the same steps (both addresses at 6, blocked)."""
    w3c = _rotated_run_utc(tmp_path / 'w3c', 'w3c', W3C_HEAD, _w3c, b''.join(map(_w3c, range(3, 12))), b'')
    twin = _rotated_run_utc(tmp_path / 'twin', 'combined', b'', _combined, b''.join(map(_combined, range(3, 12))), b'')
    assert twin[0] == [('previous', []), ('current', [('198.51.100.1', 6), ('198.51.100.2', 6)])]
    assert w3c == twin


def test_unparsed_lines_read_on_in_a_rotated_gzip_file_are_reported(tmp_path):
    """Reading._read_on_gzip (an incremental run reading on in LOG.1.gz) never sets its Scan's
    format and unparsed count (Reading._read_on does): an appended line that does not parse,
    holding a job path and a window's stamp, is silently dropped; no 'did not parse' warning.
    Expected: 'LOG.1.gz: 1 lines did not parse as haproxy ...', as a cold run reading the same
    file reports it (scan_file sets them from the tally's reader)."""
    garbage = b'garbage 21/Nov/2025:04 GET /job/x\n'
    got = _rotated_run_utc(tmp_path, 'haproxy', b'', _haproxy, b''.join(map(_haproxy, range(3, 12))) + garbage, b'')
    assert got[0] == [('previous', []), ('current', [('198.51.100.1', 6), ('198.51.100.2', 6)])]
    assert any('1 lines did not parse as haproxy' in w for w in got[2]), got[2]


def test_the_unparsed_warning_example_is_the_first_line_that_did_not_parse(tmp_path):
    """UNPARSED_LINES says 'the first: X', but W3C.parse_all (and Haproxy.parse_all) decode the
    lines needing an escape (plain_lines' others) before the plain ones, so X is the first
    unparsed line holding a quote, not the log's first unparsed line; the warning then also
    changes with the chunk size (chunks.READ_CHUNK: 100-byte chunks name the right line).
    Log: a header, then two lines of the current hour with a field too many, the first plain,
    the second with a quote in its user agent. Expected example: the first of them."""
    first = b'2025-11-21 04:01:09 GET /job/1 198.51.100.1 curl/8 extra\n'
    second = b'2025-11-21 04:02:09 GET /job/2 198.51.100.1 a"b extra\n'
    log = tmp_path / 'access.log'
    log.write_bytes(W3C_HEAD + first + second)
    warnings = in_timezone('UTC', lambda: _run(log, 'w3c', tmp_path / 'a'))[2]
    assert len(warnings) == 1 and warnings[0].startswith('LOG: 2 lines did not parse as w3c'), warnings
    assert warnings[0].endswith('the first: ' + first.rstrip(b'\n').decode()), warnings[0]


def test_the_json_unparsed_warning_example_is_the_first_line_that_did_not_parse(tmp_path):
    """As for W3C and HAProxy: nginx_json decodes the lines holding an escape before the
    others that its layout does not match, so the warning named the first unparsed line with
    an escape, not the log's first. Two lines of the current hour whose time has no zone, the
    first plain, the second with an escaped user agent: the first is the example."""
    first = b'{"remote_addr":"198.51.100.1","time_iso8601":"2025-11-21T04:01:09","request":"GET /job/1 HTTP/1.1"}\n'
    second = b'{"remote_addr":"198.51.100.1","time_iso8601":"2025-11-21T04:02:09","request":"GET /job/2 HTTP/1.1","http_user_agent":"caf\\u00e9"}\n'
    log = tmp_path / 'access.log'
    log.write_bytes(_json_line('198.51.100.2', NOW_EPOCH - 60) + first + second)
    warnings = in_timezone('UTC', lambda: _detect(log, 'nginx_json', tmp_path / 'a'))[2]
    assert len(warnings) == 1 and ': 2 lines did not parse as nginx_json' in warnings[0], warnings
    assert warnings[0].endswith('the first: ' + first.rstrip(b'\n').decode()), warnings[0]


@pytest.mark.parametrize('fmt', ('combined',) + tuple(f for f in logformats.FORMATS if f != 'haproxy'))
def test_auto_on_a_log_just_emptied_by_a_rotation_takes_the_format_of_log_1(tmp_path, fmt):
    """auto on a log a rotation emptied a moment ago (nothing yet, or a line not yet whole)
    tells the format from its rotated sibling, LOG.1 or LOG.1.gz, where the scraper's lines
    are: the run counts them as the reference counts their combined twins, instead of
    refusing the log (issue 39: "no whole line yet to tell its format from", exit 2)."""
    combined = b''.join(loggen.line('203.0.113.9', NOW_EPOCH - 3500 + i * 7, path='/job/%d' % i) for i in range(40))
    combined += b''.join(loggen.line('198.51.100.%d' % (i % 3 + 1), NOW_EPOCH - 3000 + i) for i in range(9))
    data, twins = (combined, combined) if fmt == 'combined' else in_timezone(
        'UTC', lambda: logformats.render_log(fmt, combined, vary=False))
    twin_dir = tmp_path / 'twin'
    twin_dir.mkdir()
    (twin_dir / 'access.log').write_bytes(b'')
    (twin_dir / 'access.log.1').write_bytes(twins)
    expected = in_timezone('UTC', lambda: _detect(twin_dir / 'access.log', 'combined', tmp_path / 'ref', rotated=True))
    assert expected[0][0][1][0]['address'] == '203.0.113.9', expected     # the scraper is in the windows
    for compress in (False, True):
        for fresh in (b'', b'{"remote_addr":"203.0.1', b'\n\n'):
            here = tmp_path / ('%s-%d' % (compress, len(fresh)))
            here.mkdir()
            (here / 'access.log').write_bytes(fresh)
            (here / ('access.log.1' + ('.gz' if compress else ''))).write_bytes(gzip.compress(data, 1) if compress else data)
            found = in_timezone('UTC', lambda: _detect(here / 'access.log', 'auto', here / 'run', rotated=True))
            assert found[:2] == expected[:2], (compress, fresh)


@pytest.mark.parametrize('fmt', ('combined',) + tuple(f for f in logformats.FORMATS if f != 'haproxy'))
def test_auto_on_a_log_emptied_by_a_rotation_with_no_log_1_takes_the_format_from_the_state(tmp_path, fmt):
    """auto on a log a rotation emptied a moment ago, whose rotated file is not LOG.1 (dateext:
    access.log-20251121, or already removed): with a state_dir, the format is the one the state
    of the last run recorded (issue 39 §3), instead of a refusal ("no whole line yet to tell its
    format from", exit 2). The run then counts as a run told that format explicitly."""
    combined = b''.join(loggen.line('203.0.113.9', NOW_EPOCH - 3500 + i * 7, path='/job/%d' % i) for i in range(40))
    data = combined if fmt == 'combined' else in_timezone('UTC', lambda: logformats.render_log(fmt, combined, vary=False))[0]
    for fresh in (b'', b'{"remote_addr":"203.0.1', b'\n\n'):
        for told in ('auto', fmt):
            here = tmp_path / ('%s-%d' % (told, len(fresh)))
            state = here / 'state'
            state.mkdir(parents=True)
            log = here / 'access.log'
            log.write_bytes(data)
            first = in_timezone('UTC', lambda: _run(log, told, here / 'a', state_dir=str(state), rotated=True))
            assert first[0][0][1] == [('203.0.113.9', 40)], first
            os.rename(str(log), str(here / 'access.log-20251121'))
            log.write_bytes(fresh)
            files = Files(here / 'b')
            settings = Settings(log_format=told, threshold=3, top=5, server_ips=['10.0.0.5'], blocklist=str(files.blocklist),
                                exclusions_file=str(files.exclusions), activity_log=str(files.activity_log), seek=False,
                                state_dir=str(state), rotated=True)
            result = in_timezone('UTC', lambda: run.detect(settings, [str(log)], now=NOW_EPOCH + 60, check_mode=False))
            if told == 'auto':
                assert result.formats == {str(log): fmt}, result.formats
                found = ([(w['name'], w['records']) for w in result.windows], result.by_verdict)
            else:
                assert found == ([(w['name'], w['records']) for w in result.windows], result.by_verdict), (fmt, fresh)
    # No state, or a state that is not this log's: still the refusal, exit 2.
    lone = tmp_path / 'lone'
    lone.mkdir()
    (lone / 'access.log').write_bytes(b'')
    with pytest.raises(errors.BotDetectorError) as caught:
        _run(lone / 'access.log', 'auto', lone / 'a', state_dir=str(lone / 'state'))
    assert caught.value.exit_status == 2 and 'no whole line yet' in caught.value.message
