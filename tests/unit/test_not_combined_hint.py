"""A log in another format read as combined (issue 39 §2): the reference's stdout stays as it
is (`Skipping {"time_local": (3030 requests): not an IP address.`), and a warning on standard
error says which log_format reads the log, for every format the detector reads."""
import pytest

import loggen
import logformats
from conftest import in_timezone, mask_duration, run_core, run_reference

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
HITTERS = {'203.0.113.7': 1200, '2001:db8::7': 1000}


def combined_log():
    return in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous=HITTERS, current={'198.51.100.3': 1100}))


def rendered(tmp_path, fmt):
    log = tmp_path / ('%s.log' % fmt)
    log.write_bytes(in_timezone('UTC', lambda: logformats.render_log(fmt, combined_log(), vary=False)[0]))
    return log


@pytest.mark.parametrize('fmt', logformats.FORMATS)
def test_a_log_in_another_format_read_as_combined_names_its_format(tmp_path, files, fmt):
    log = rendered(tmp_path, fmt)
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    # One warning: this one, or, when no line carries a combined timestamp, that warning ending with the hint.
    hint = 'they read as %s: set log_format: %s (or auto)\n' % (fmt, fmt)
    lines = got.stderr.decode().splitlines(True)
    assert len(lines) == 1 and lines[0].endswith(hint), got.stderr
    assert lines[0] in ('bot-detector: warning: %s: most of its first lines are not in the combined format (log_format), '
                        'so its requests are not counted as such; %s' % (log, hint),
                        'bot-detector: warning: %s: no line of the part read carries an access-log timestamp '
                        '[dd/Mon/yyyy:HH:MM:SS +zzzz], so nothing was counted; log in the combined format (nginx: log_format '
                        'combined; Apache: LogFormat "%%h %%l %%u %%t \\"%%r\\" %%>s %%b \\"%%{Referer}i\\" '
                        '\\"%%{User-Agent}i\\""); %s' % (log, hint)), lines[0]
    assert got.returncode == 0 and b'log_format' not in got.stdout
    if fmt not in ('vhost_combined', 'haproxy'):    # their host:port fields: the safety addition on invalid addresses
        ref_files = tmp_path / 'ref'
        ref_files.mkdir()
        ref = run_reference(log, ref_files / 'bl', ref_files / 'ex', ref_files / 'act', ['10.0.0.5'], NOW)
        assert (got.returncode, mask_duration(got.stdout)) == (ref.returncode, mask_duration(ref.stdout))
    # Read in its format: no warning.
    again = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--log-format', fmt, log])
    assert again.returncode == 0 and b'not in the combined format' not in again.stderr, again.stderr


def test_a_combined_log_and_one_with_a_few_odd_lines_get_no_warning(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_bytes(b'{"odd": "line"}\nnot a log line\n' + combined_log())
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0 and got.stderr == b'', got.stderr


def test_lines_no_format_reads_get_no_hint(tmp_path, files):
    """Timestamps spelled otherwise, which the reference counts all the same (test_format_warning.py)."""
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(b'203.0.113.7 - - [21/Nov/2026:03:%02d:%02d GMT] "GET /job/%d HTTP/1.1" 200 5 "-" "c"\n'
                             % (i % 60, i % 60, i) for i in range(1200)))
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0 and got.stderr == b'', got.stderr


@pytest.mark.parametrize('address', ['unix:', 'client.example.net'])
def test_combined_lines_without_an_address_get_no_hint_and_load_no_formats_code(tmp_path, files, address):
    """nginx behind a Unix socket writes 'unix:', Apache with HostnameLookups a name: no format
    reads more addresses, so no hint (issue 44: never a format under which nothing counts), and
    the run pays for no format's code."""
    from test_layout import imported_by
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: b''.join(loggen.line(address, NOW_EPOCH - 3600 + i) for i in range(30))))
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0 and got.stderr == b'', got.stderr
    dummy, imported = imported_by(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log], tmp_path)
    assert not [name for name in imported if name.startswith('bot_detector.formats')]
