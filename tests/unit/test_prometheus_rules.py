"""The Prometheus rules shipped in roles/bot_detector/files/prometheus/: `promtool check rules`
on every rule file, `promtool test rules` on every test file in tests/prometheus/, and every
alert named with the one prefix, labelled with a severity, annotated with a summary and a
description, and tested once firing and once quiet. promtool is Debian's `prometheus`
package's (tests/tools/install-prereqs.sh installs it)."""
import os
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT

RULES_DIR = ROOT / 'roles' / 'bot_detector' / 'files' / 'prometheus'
TESTS_DIR = ROOT / 'tests' / 'prometheus'
PREFIX = 'BotDetector'


def promtool():
    path = shutil.which('promtool')
    if path is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('promtool is missing: tests/tools/install-prereqs.sh installs Debian\'s prometheus package')
        pytest.skip('needs promtool (Debian package prometheus)')
    return path


def rule_files():
    found = sorted(RULES_DIR.glob('*.rules.yml'))
    assert found
    return found


def promtool_test_files():
    found = sorted(TESTS_DIR.glob('*.test.yml'))
    assert found
    return found


def alerts():
    """{alert name: rule} over every rule file."""
    found = {}
    for path in rule_files():
        for group in yaml.safe_load(path.read_text())['groups']:
            for rule in group['rules']:
                if 'alert' in rule:
                    assert rule['alert'] not in found, rule['alert']
                    found[rule['alert']] = rule
    return found


def test_promtool_check_rules_passes_on_every_rule_file():
    for path in rule_files():
        got = subprocess.run([promtool(), 'check', 'rules', str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        assert got.returncode == 0, got.stdout
        assert 'SUCCESS' in got.stdout


def test_promtool_test_rules_passes():
    for path in promtool_test_files():
        got = subprocess.run([promtool(), 'test', 'rules', path.name], cwd=str(TESTS_DIR), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        assert got.returncode == 0, got.stdout


def test_promtool_test_rules_fails_when_an_alert_breaks(tmp_path):
    """The tests can fail: with the no-run alert's 30 minutes made 3 hours, or the surge's
    factor made 100, promtool reports the firing cases that no longer fire."""
    for old, new, alert in (('> 1800', '> 10800', 'BotDetectorNoCompletedRun'),
                            ('> 10 * clamp_min', '> 100 * clamp_min', 'BotDetectorBlockSurge')):
        broken_dir = tmp_path / alert
        (broken_dir / 'rules').mkdir(parents=True)
        (broken_dir / 'tests').mkdir()
        for path in rule_files():
            text = path.read_text()
            assert old in text or alert not in text
            (broken_dir / 'rules' / path.name).write_text(text.replace(old, new))
        for path in promtool_test_files():
            text = path.read_text().replace('../../roles/bot_detector/files/prometheus/', '../rules/')
            (broken_dir / 'tests' / path.name).write_text(text)
            got = subprocess.run([promtool(), 'test', 'rules', path.name], cwd=str(broken_dir / 'tests'),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
            assert got.returncode != 0 and 'alertname: %s' % alert in got.stdout, got.stdout


def test_every_alert_has_the_prefix_a_severity_a_summary_and_a_description():
    found = alerts()
    assert set(found) >= {'BotDetectorNoCompletedRun', 'BotDetectorRunsFailing', 'BotDetectorEnforcementOutOfSync',
                          'BotDetectorBlockSurge', 'BotDetectorBlocklistNearLimit'}
    for name, rule in found.items():
        assert name.startswith(PREFIX), name
        assert rule['labels']['severity'] in ('critical', 'warning'), name
        assert rule['annotations']['summary'].strip() and rule['annotations']['description'].strip(), name
    for path in rule_files():
        for group in yaml.safe_load(path.read_text())['groups']:
            for rule in group['rules']:
                if 'record' in rule:
                    assert 'bot_detector' in rule['record'], rule['record']


def test_every_alert_is_tested_firing_and_quiet():
    firing, quiet = set(), set()
    for path in promtool_test_files():
        for case in yaml.safe_load(path.read_text())['tests']:
            for check in case.get('alert_rule_test', []):
                (firing if check.get('exp_alerts') else quiet).add(check['alertname'])
    assert set(alerts()) - firing == set()
    assert set(alerts()) - quiet == set()
