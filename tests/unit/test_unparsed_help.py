"""bot_detector_last_run_unparsed_lines counts only lines that could count (issue 39 §3):
lines outside the two windows are not parsed, so a log full of them reports 0. Its HELP
says so, so that nobody reads 0 as "every line parsed"."""
import re

from conftest import run_core

NOW = '2026-11-21 04:13:43'


def test_unparsed_lines_outside_the_windows_are_not_counted_and_the_help_says_it(tmp_path, files):
    log = tmp_path / 'jobs.json'
    good = b'{"time_local":"21/Nov/2026:04:%02d:00 +0000","remote_addr":"203.0.113.5","request":"GET /job/%d HTTP/1.1"}\n'
    broken = b'{"time_local":"20/Nov/2026:10:%02d:00 +0000","remote_addr":"203.0.113.6","request":"GET /job/%d HTTP/1.1"\n'
    log.write_bytes(b''.join(broken % (i % 60, i) for i in range(50)) + b''.join(good % (i % 60, i) for i in range(5)))
    prom = tmp_path / 'bd.prom'
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--log-format', 'nginx_json',
                                      '--full-scan', '--metrics-file', prom, log])
    assert got.returncode == 0, got.stderr
    text = prom.read_text()
    assert 'bot_detector_last_run_unparsed_lines{log="%s"} 0\n' % log in text      # 50 broken lines, outside the windows
    help_line = re.search(r'^# HELP bot_detector_last_run_unparsed_lines (.*)$', text, re.M).group(1)
    assert 'lines outside them are not parsed nor counted here' in help_line
    assert '0 does not mean that every line of the log parsed' in help_line
