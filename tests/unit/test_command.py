"""The host command as a real process: the spec's messages and exit statuses,
the options, and the safety additions."""
import json
import os
import subprocess
import sys
import time

import pytest

import loggen
from conftest import CORE, ROOT, mask_duration, run_core, run_reference

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423          # NOW in UTC


def test_now_constant():
    assert time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(NOW_EPOCH)) == NOW


def write_log(tmp_path, **hitters):
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, **hitters))
    return log


def test_usage_is_the_references(files):
    got = run_core([])
    ref = run_reference(None, files.blocklist, files.exclusions, files.activity_log, [], NOW)
    assert (got.returncode, got.stdout) == (1, ref.stdout)
    assert ref.returncode == 1
    assert got.stdout.splitlines()[:2] == [b'Path to log file missing.', b'Usage: bot-detector.sh <logfile>']
    assert got.stdout.splitlines()[2].startswith(b' ')


def test_missing_log_is_the_references(files, tmp_path):
    missing = tmp_path / 'nope.log'
    got = run_core([missing])
    ref = run_reference(missing, files.blocklist, files.exclusions, files.activity_log, [], NOW)
    assert (got.returncode, got.stdout) == (ref.returncode, ref.stdout) == (1, b'File not found or not readable: %s\n' % bytes(missing))


@pytest.mark.parametrize('kind', ['directory', 'fifo', 'device'])
def test_non_regular_log_is_refused(tmp_path, files, kind):
    path = tmp_path / kind
    if kind == 'directory':
        path.mkdir()
    elif kind == 'fifo':
        os.mkfifo(path)
    else:
        path.symlink_to('/dev/zero')
    got = subprocess.run([sys.executable, str(CORE)] + files.options() + ['--server-ip', '10.0.0.5', path],
                         stdout=subprocess.PIPE, timeout=20, check=False)
    assert (got.returncode, got.stdout) == (1, b'Not a regular file: %s\n' % bytes(path))
    assert not files.base.exists() or not any(files.base.iterdir())


@pytest.mark.parametrize('args,fragment', [
    (['--threshold', '0'], b'--threshold'), (['--threshold', 'ten'], b'--threshold'), (['--top', '-1'], b'--top'),
    (['--now', 'yesterday'], b'now must be'), (['--search-engine', ''], b'--search-engine'),
    (['--bogus'], b'--bogus'), (['--job-prefix', ''], b'--job-prefix'),
])
def test_bad_option_one_line_exit_2_nothing_written(tmp_path, files, args, fragment):
    log = write_log(tmp_path, previous={'203.0.113.7': 1500})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5'] + args + [log])
    assert got.returncode == 2
    assert got.stdout == b''
    assert got.stderr.count(b'\n') == 1 and fragment in got.stderr, got.stderr
    assert not files.base.exists() or not any(files.base.iterdir())


def test_blocks_then_reports_already_blocked(tmp_path, files):
    log = write_log(tmp_path, previous={'203.0.113.7': 1000, '203.0.113.8': 999}, current={'203.0.113.7': 5, '2001:db8::7': 1001})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0, got.stderr
    assert mask_duration(got.stdout).decode().splitlines() == [
        'Checking the previous hour...',
        'Blocking IP address: 203.0.113.7 (1000 requests)',
        'Checking the current hour...',
        'Blocking IP address: 2001:db8::7 (1001 requests)',
        'Execution time: N seconds',
    ]
    assert files.read('blocklist') == b'203.0.113.7\n2001:db8::7\n'
    activity = files.read('activity_log').decode().splitlines()
    assert [l.split(' | ')[1] for l in activity] == [
        'IP addess 203.0.113.7 added to the block list, RPH=1000',
        'IP addess 2001:db8::7 added to the block list, RPH=1001']
    again = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert b'IP address 203.0.113.7 is already blocked.\n' in again.stdout
    assert b'IP address 2001:db8::7 is already blocked.\n' in again.stdout
    assert files.read('blocklist') == b'203.0.113.7\n2001:db8::7\n'


def test_check_mode_writes_nothing(tmp_path, files):
    log = write_log(tmp_path, previous={'203.0.113.7': 1200})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--check', log])
    assert got.returncode == 0
    assert b'Would block IP address: 203.0.113.7 (1200 requests)\n' in got.stdout
    assert not files.base.exists() or not any(files.base.iterdir())


def test_json_document(tmp_path, files):
    files.exclusions.write_bytes(b'198.51.100.1\n')
    log = write_log(tmp_path, previous={'203.0.113.7': 1200, '198.51.100.1': 3000, '10.0.0.5': 9000})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--json', log])
    assert got.returncode == 0
    doc = json.loads(got.stdout)
    assert doc['changed'] is True
    assert doc['blocked'] == [{'address': '203.0.113.7', 'count': 1200, 'window': 'previous'}]
    assert doc['allow_listed'] == [{'address': '198.51.100.1', 'count': 3000, 'window': 'previous'}]
    assert doc['windows'][0] == {'name': 'previous', 'hour_stamp': '21/Nov/2026:03',
                                 'records': [{'count': 3000, 'address': '198.51.100.1'}, {'count': 1200, 'address': '203.0.113.7'}]}
    assert doc['windows'][1]['hour_stamp'] == '21/Nov/2026:04'
    assert doc['messages'][1] == 'IP address 198.51.100.1 is allow-listed and will not be blocked.'


@pytest.mark.parametrize('field', ['-', 'crawler.example.com', '203.0.113.7,198.51.100.2', '0.0.0.0/0', '\xe9\xe9'])
def test_only_addresses_are_appended(tmp_path, files, field):
    log = write_log(tmp_path, previous={field: 1500, '203.0.113.9': 1100})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 0
    shown = field.encode('utf-8')
    assert b'Skipping %s (1500 requests): not an IP address.\n' % shown in got.stdout
    assert files.read('blocklist') == b'203.0.113.9\n'
    assert files.read('activity_log').count(b'\n') == 1
    # The reference would have appended it: the documented safety difference.
    theirs = tmp_path / 'ref'
    theirs.mkdir()
    run_reference(log, theirs / 'b', theirs / 'e', theirs / 'a', ['10.0.0.5'], NOW)
    assert shown + b'\n' in (theirs / 'b').read_bytes()


def test_unterminated_blocklist_gets_a_newline_first(tmp_path, files):
    files.blocklist.write_bytes(b'192.0.2.1\n192.0.2.2')
    log = write_log(tmp_path, current={'203.0.113.7': 1000})
    assert run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log]).returncode == 0
    assert files.read('blocklist') == b'192.0.2.1\n192.0.2.2\n203.0.113.7\n'


def test_failed_append_is_a_clear_error_and_writes_no_activity(tmp_path, files):
    files.blocklist.mkdir()           # appending to a directory fails, even as root
    log = write_log(tmp_path, previous={'203.0.113.7': 1000})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert got.stderr == b'bot-detector: error: cannot append to %s: Is a directory\n' % bytes(files.blocklist)
    assert not files.activity_log.exists()


def test_failed_activity_append_fails_the_run_before_the_blocklist_line(tmp_path, files):
    files.activity_log.mkdir()
    log = write_log(tmp_path, previous={'203.0.113.7': 1000})
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    assert got.returncode == 3
    assert b'cannot append to %s' % bytes(files.activity_log) in got.stderr
    assert files.read('blocklist') is None          # both lines, or neither


def test_server_address_defaults_to_hostname_i(tmp_path, files):
    server = subprocess.run(['hostname', '-i'], stdout=subprocess.PIPE, check=True).stdout.split()[0].decode()
    log = write_log(tmp_path, previous={server: 5000, '203.0.113.7': 1000})
    got = run_core(files.options() + ['--now', NOW, log])
    assert got.returncode == 0, got.stderr
    assert server.encode() not in got.stdout
    assert files.read('blocklist') == b'203.0.113.7\n'


def test_overlapping_runs_append_each_address_once(tmp_path, files):
    hitters = dict(('203.0.113.%d' % (100 + i), 1000 + i) for i in range(1, 16))  # none inside another
    log = write_log(tmp_path, previous=hitters)
    env = dict(os.environ, TZ='UTC')
    args = [sys.executable, str(CORE)] + [str(a) for a in files.options()] + ['--server-ip', '10.0.0.5', '--now', NOW, str(log)]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, env=env) for dummy in range(20)]
    outputs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    lines = files.read('blocklist').split(b'\n')
    assert lines[-1] == b''
    assert sorted(lines[:-1]) == sorted(a.encode() for a in hitters)
    assert files.read('activity_log').count(b'\n') == len(hitters)
    assert sum(o.count(b'Blocking IP address') for o in outputs) == len(hitters)


def test_help_documents_every_option():
    got = run_core(['--help'])
    assert got.returncode == 0
    for option in (b'--blocklist', b'--exclusions', b'--activity-log', b'--threshold', b'--top', b'--server-ip',
                   b'--search-engine', b'--now', b'--check', b'--json', b'Exit status'):
        assert option in got.stdout


def test_blocklist_in_a_missing_directory_with_nothing_to_block_is_the_references(tmp_path):
    log = write_log(tmp_path, previous={'203.0.113.7': 999})
    missing = tmp_path / 'no' / 'such'
    args = ['--blocklist', missing / 'ipblocklist.txt', '--exclusions', missing / 'ex', '--activity-log', missing / 'a.log']
    got = run_core(args + ['--server-ip', '10.0.0.5', '--now', NOW, log])
    ref = run_reference(log, missing / 'ipblocklist.txt', missing / 'ex', missing / 'a.log', ['10.0.0.5'], NOW)
    assert (got.returncode, mask_duration(got.stdout), got.stderr) == (ref.returncode, mask_duration(ref.stdout), b'') == (
        0, mask_duration(ref.stdout), b'')
    assert not missing.exists()


def test_closed_standard_output_ends_quietly_like_the_script(tmp_path, files):
    """`bot-detector.sh LOG | head -0`: the shell script dies of SIGPIPE at its first echo,
    silently, before any append; so does the command."""
    log = write_log(tmp_path, previous={'203.0.113.7': 1200})
    outcomes = []
    for args, env in (([sys.executable, str(CORE)] + [str(a) for a in files.options()] + ['--server-ip', '10.0.0.5', '--now', NOW, str(log)],
                       dict(os.environ, TZ='UTC')),
                      ([str(ROOT / 'tests' / 'reference' / 'bot-detector.sh'), str(log)],
                       dict(os.environ, TZ='UTC', BD_BLOCKLIST=str(files.blocklist) + '.ref', BD_EXCLUSIONS=str(files.exclusions),
                            BD_ACTIVITY_LOG=str(files.activity_log) + '.ref', BD_SERVER_IP='10.0.0.5', BD_NOW=NOW))):
        reader, writer = os.pipe()
        os.close(reader)                       # the reader is gone before the first line
        proc = subprocess.run(args, stdout=writer, stderr=subprocess.PIPE, env=env, timeout=60, check=False)
        os.close(writer)
        outcomes.append((proc.returncode, proc.stderr))
    assert outcomes[0] == outcomes[1] == (-13, b'')
    assert not files.blocklist.exists() and not files.activity_log.exists()


def test_help_of_an_off_flag_says_what_the_flag_does():
    """--full-scan turns the seek off: its help says it reads every log whole, with no
    default that reads as if full scans were the default (issue 26 item 4)."""
    import re
    out = run_core(['--help']).stdout.decode()
    text = ' '.join(out.split())
    found = re.search(r'--full-scan (.*?) --', text).group(1)
    assert found.startswith('read every log whole') and 'default: true' not in found
    for flag in re.findall(r'\n  (--no-[a-z-]+)', out):
        assert re.search(re.escape(flag) + r'\s+turn --[a-z-]+ off', out), flag
