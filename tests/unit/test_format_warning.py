"""A log in a format the detector cannot read (ISO 8601 times, nginx JSON) counts nothing: one
warning on standard error names it and the format expected; standard output stays exactly
the reference script's."""
import json

import pytest

import loggen
from conftest import in_timezone, mask_duration, run_core, run_reference

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
ISO = b''.join(b'203.0.113.7 - - [2026-11-21T03:%02d:00+00:00] "GET /job/%d HTTP/1.1" 200 5 "-" "curl/8"\n' % (i % 60, i)
               for i in range(1500))
JSON = b''.join(b'{"time":"2026-11-21T03:10:00+00:00","remote_addr":"203.0.113.7","request":"GET /job/%d HTTP/1.1"}\n' % i
                for i in range(1500))
WARNING = (b'bot-detector: warning: %s: no line of the part read carries an access-log timestamp '
           b'[dd/Mon/yyyy:HH:MM:SS +zzzz], so nothing was counted; log in the combined format')


@pytest.mark.parametrize('content', [ISO, JSON], ids=['iso8601', 'json'])
def test_unreadable_format_warns_once_on_stderr_stdout_is_the_references(tmp_path, files, content):
    log = tmp_path / 'access.log'
    log.write_bytes(content)
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    reference = run_reference(log, files.blocklist, files.exclusions, files.activity_log, ['10.0.0.5'], NOW)
    assert got.returncode == reference.returncode == 0
    assert mask_duration(got.stdout) == mask_duration(reference.stdout)
    assert got.stderr.count(b'\n') == 1 and got.stderr.startswith(WARNING % bytes(log)), got.stderr
    doc = json.loads(run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--json', log]).stdout)
    assert len(doc['warnings']) == 1 and doc['warnings'][0].startswith('%s: no line of the part read' % log)


def test_readable_logs_do_not_warn(tmp_path, files):
    """A combined-format log with nothing in the windows, an empty log, and a mix where a
    readable log sits beside an unreadable one: only the unreadable one is named."""
    old = tmp_path / 'old.log'
    old.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH - 86400, previous={'203.0.113.7': 50})))
    empty = tmp_path / 'empty.log'
    empty.write_bytes(b'')
    iso = tmp_path / 'iso.log'
    iso.write_bytes(ISO)
    quiet = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--full-scan', old, empty])
    assert quiet.returncode == 0 and quiet.stderr == b''
    mixed = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, old, iso])
    assert mixed.stderr.count(b'\n') == 1 and mixed.stderr.startswith(WARNING % bytes(iso))


def test_with_a_state_only_the_part_read_is_judged(tmp_path, files):
    """--state-dir: each run judges the lines it read. A log in another format warns on its
    cold run and on each run that reads more of it, never on a run that read nothing new;
    a readable log warns when what was appended is in another format, and never for a line
    the web server has not finished (its timestamp may be still to come)."""
    state = tmp_path / 'state'
    iso, combined = tmp_path / 'iso.log', tmp_path / 'combined.log'
    iso.write_bytes(ISO)
    combined.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 50})))

    def warnings(log, appended=b''):
        with open(str(log), 'ab') as handle:
            handle.write(appended)
        got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--state-dir', state, log])
        assert got.returncode == 0 and got.stdout.startswith(b'Checking the previous hour...\n')
        return [line for line in got.stderr.split(b'\n') if line]
    assert [line.startswith(WARNING % bytes(iso)) for line in warnings(iso)] == [True]
    assert warnings(iso) == []                                       # nothing new read
    assert warnings(iso, ISO[:40]) == []                             # an unfinished line only
    assert len(warnings(iso, ISO[40:400] + b'\n')) == 1              # finished, and more: warned
    assert warnings(combined) == []
    assert warnings(combined, b'198.51.100.3 - - [21/No') == []      # unfinished
    assert warnings(combined, b'v/2026:03:10:00 +0000] "GET /job/1 HTTP/1.1" 200 5 "-" "x"\n') == []
    assert [line.startswith(WARNING % bytes(combined)) for line in warnings(combined, ISO[:1000] + b'\n')] == [True]


# Real timestamps in other spellings (issue 26): the reference counts them by their hour
# text, and so does the command; a warning that nothing was counted would be false.
OTHER_STAMPS = {
    'zone-name': b'[21/Nov/2026:03:%02d:%02d GMT]',
    'no-zone': b'[21/Nov/2026:03:%02d:%02d]',
    'haproxy-ms': b'[21/Nov/2026:03:%02d:%02d.123]',
    'no-brackets': b'21/Nov/2026:03:%02d:%02d +0000',
}


@pytest.mark.parametrize('stamp', sorted(OTHER_STAMPS), ids=sorted(OTHER_STAMPS))
def test_real_timestamps_of_other_spellings_do_not_warn(tmp_path, files, stamp):
    log = tmp_path / 'access.log'
    log.write_bytes(b''.join(b'203.0.113.7 - - ' + OTHER_STAMPS[stamp] % (i % 60, i % 60) +
                             b' "GET /job/%d HTTP/1.1" 200 5 "-" "curl/8"\n' % i for i in range(1200)))
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--threshold', '1000', log])
    reference = run_reference(log, files.blocklist, files.exclusions, files.activity_log, ['10.0.0.5'], NOW)
    assert got.returncode == reference.returncode == 0
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in got.stdout
    assert got.stderr == b'', got.stderr
