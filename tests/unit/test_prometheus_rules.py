"""The Prometheus rules shipped in roles/bot_detector/files/prometheus/: `promtool check rules`
on every rule file, `promtool test rules` on every test file in tests/prometheus/, and every
alert named with the one prefix, labelled with a severity, annotated with a summary and a
description, and tested once firing and once quiet. promtool is Debian's `prometheus`
package's (tests/tools/install-prereqs.sh installs it)."""
import os
import shutil
import subprocess
import sys

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
    """The tests can fail: with the no-run alert's 30 minutes made 3 hours, the surge's
    factor made 100, a follower's minute made 10, the unparsed share and growth set out
    of reach, or the fleet store's down value or push delay out of reach, promtool reports the firing cases that no longer fire."""
    for old, new, alert in (('> 1800', '> 10800', 'BotDetectorNoCompletedRun'),
                            ('> 10 * clamp_min', '> 100 * clamp_min', 'BotDetectorBlockSurge'),
                            ('(bot_detector_follow_behind_seconds) > 60', '(bot_detector_follow_behind_seconds) > 600',
                             'BotDetectorFollowerBehind'),
                            ('(bot_detector_last_run_unparsed_lines > 0)', '(bot_detector_last_run_unparsed_lines > 1e9)',
                             'BotDetectorLinesNotParsed'),
                            ('(delta(bot_detector_follow_unparsed_lines[5m]) > 0)',
                             '(delta(bot_detector_follow_unparsed_lines[5m]) > 1e9)', 'BotDetectorLinesNotParsed'),
                            ('(bot_detector_fleet_store_up == 0)', '(bot_detector_fleet_store_up == 2)', 'BotDetectorFleetStoreDown'),
                            ('(bot_detector_fleet_push_behind_seconds > 30)', '(bot_detector_fleet_push_behind_seconds > 3000)',
                             'BotDetectorFleetPushesBehind')):
        broken_dir = tmp_path / ('%s-%d' % (alert, len(list(tmp_path.iterdir()))))
        (broken_dir / 'rules').mkdir(parents=True)
        (broken_dir / 'tests').mkdir()
        for path in rule_files():
            text = path.read_text()
            assert old in text or alert not in text
            (broken_dir / 'rules' / path.name).write_text(text.replace(old, new))
        for path in promtool_test_files():
            if 'alertname: %s' % alert not in path.read_text():
                continue            # a test file of other alerts
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


# The role's `prometheus` entry point installs the rules into a Prometheus server's rule
# directory (a scratch one here, local connection) with the limit of
# bot_detector_prometheus_blocklist_limit; promtool accepts what it wrote.
def install(tmp_path, extra):
    playbook = tmp_path / 'prometheus.yml'
    playbook.write_text(yaml.safe_dump([{
        'hosts': 'localhost', 'gather_facts': False,
        'tasks': [{'name': 'rules', 'ansible.builtin.include_role': {
            'name': 'jobboard.bot_detector.bot_detector', 'tasks_from': 'prometheus'}}]}]))
    extra = dict(extra, ansible_python_interpreter=sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'))
    return subprocess.run(['ansible-playbook', '-i', 'localhost,', '-c', 'local', '-e', yaml.safe_dump(extra, default_flow_style=True),
                           str(playbook)], cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)


def test_rules_installed_with_the_limit_and_checked_by_promtool(tmp_path):
    tool = promtool()
    rules_dir = tmp_path / 'rules'
    rules_dir.mkdir()
    got = install(tmp_path, {'bot_detector_prometheus_rules_dir': str(rules_dir), 'bot_detector_prometheus_blocklist_limit': 20000})
    assert got.returncode == 0 and 'changed=1' in got.stdout, got.stdout
    installed = rules_dir / 'bot_detector.rules.yml'
    shipped = (RULES_DIR / 'bot_detector.rules.yml').read_text()
    assert installed.read_text() == shipped.replace('expr: vector(65536)', 'expr: vector(20000)')
    assert oct(installed.stat().st_mode & 0o777) == '0o644'
    check = subprocess.run([tool, 'check', 'rules', str(installed)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, check=False)
    assert check.returncode == 0, check.stdout
    again = install(tmp_path, {'bot_detector_prometheus_rules_dir': str(rules_dir), 'bot_detector_prometheus_blocklist_limit': 20000})
    assert again.returncode == 0 and 'changed=0' in again.stdout, again.stdout


def test_the_entry_point_needs_the_rule_directory(tmp_path):
    got = install(tmp_path, {'bot_detector_prometheus_blocklist_limit': 20000})
    assert got.returncode != 0 and 'bot_detector_prometheus_rules_dir' in got.stdout, got.stdout
