"""`promtool check metrics` passes on every kind of metrics file the detector writes (issue 39
§5): a detection run's, a failed run's, a follower's, an enforcement sync's (nginx, with a geo
file in a tmp dir and `true` as its test and reload commands: nothing of this host's is
touched). It exited 3 on every run's file while a gauge ended in `_count`."""
import os
import shutil
import subprocess

import pytest

import loggen
from conftest import in_timezone, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting import metrics
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def promtool_check(path):
    promtool = shutil.which('promtool')
    if promtool is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('promtool is missing: tests/tools/install-prereqs.sh installs it')
        pytest.skip('needs promtool (Debian package prometheus)')
    with open(str(path), 'rb') as handle:
        got = subprocess.run([promtool, 'check', 'metrics'], stdin=handle, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, check=False)
    assert got.returncode == 0, got.stdout.decode()
    assert got.stdout == b'', got.stdout


def planted(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200},
                                                                  current={'2001:db8::7': 1000})))
    return log


def test_a_runs_and_a_failed_runs_metrics_pass_promtool(tmp_path, files):
    prom = tmp_path / 'bd.prom'
    log = planted(tmp_path)
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom, log])
    assert got.returncode == 0, got.stderr
    promtool_check(prom)
    assert b'bot_detector_last_run_top_requests{' in prom.read_bytes()
    gone = tmp_path / 'gone.log'
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom, gone])
    assert got.returncode == 1
    assert ('bot_detector_last_run_success{log="%s"} 0' % gone).encode() in prom.read_bytes()
    promtool_check(prom)


def test_a_followers_metrics_pass_promtool(tmp_path, files):
    prom = tmp_path / 'bd.prom'
    chosen = settings.Settings(blocklist=str(files.blocklist), exclusions=str(files.exclusions),
                               activity_log=str(files.activity_log), metrics_file=str(prom))
    files.base.mkdir(parents=True, exist_ok=True)
    metrics.write_follow(chosen, '/var/log/nginx/jobs.json', 1.5, 4096, {'own': 2}, 1, unparsed=3)
    assert b'bot_detector_follow_behind_bytes{log="/var/log/nginx/jobs.json"} 4096' in prom.read_bytes()
    promtool_check(prom)


def test_an_enforcement_syncs_metrics_pass_promtool(tmp_path, files):
    prom = tmp_path / 'bd.prom'
    files.base.mkdir(parents=True, exist_ok=True)
    files.blocklist.write_bytes(b'203.0.113.7\n198.51.100.0/24\n')
    got = run_core(files.options() + ['--metrics-file', prom, '--enforcement', 'nginx', '--nginx-geo-file',
                                      tmp_path / 'blocked.conf', '--nginx-test-command', 'true',
                                      '--nginx-reload-command', 'true', '--enforce-now'])
    assert got.returncode == 0, got.stderr
    assert b'bot_detector_enforcement_in_sync{backend="nginx"} 1' in prom.read_bytes()
    promtool_check(prom)
