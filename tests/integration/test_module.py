"""The bot_detector module run by real ad-hoc `ansible` on localhost, against
scratch files: results, check mode, diff, facts and errors."""
import json
import os
import subprocess

import pytest

import loggen
from conftest import ROOT, run_core

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def ansible(module_args, module='jobboard.bot_detector.bot_detector', flags=()):
    """Run one ad-hoc task on localhost; returns (rc, result dict of the host)."""
    env = dict(os.environ, TZ='UTC', ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_NOCOLOR='1')
    args = json.dumps(module_args)
    proc = subprocess.run(['ansible', 'localhost', '-m', module, '-a', args] + list(flags), cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    doc = json.loads(proc.stdout)
    return proc.returncode, doc['plays'][0]['tasks'][0]['hosts']['localhost']


@pytest.fixture
def case(tmp_path):
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450, '198.51.100.1': 2000, '10.0.0.5': 9000},
                                       current={'2001:db8::7': 1000, '203.0.113.7': 30}))
    (tmp_path / 'exclusions').write_bytes(b'198.51.100.1\n')
    (tmp_path / 'blocklist').write_bytes(b'192.0.2.1\n')
    args = {'log': str(log), 'blocklist': str(tmp_path / 'blocklist'), 'exclusions': str(tmp_path / 'exclusions'),
            'activity_log': str(tmp_path / 'activity.log'), 'server_ip': '10.0.0.5', 'now': NOW}
    return tmp_path, args


def test_blocks_and_returns_results(case):
    tmp_path, args = case
    rc, res = ansible(args)
    assert rc == 0, res
    assert res['changed'] is True
    assert res['blocked'] == [{'address': '203.0.113.7', 'count': 1450, 'window': 'previous'},
                              {'address': '2001:db8::7', 'count': 1000, 'window': 'current'}]
    assert res['allow_listed'] == [{'address': '198.51.100.1', 'count': 2000, 'window': 'previous'}]
    assert res['already_blocked'] == [] and res['skipped_invalid'] == []
    assert [w['hour_stamp'] for w in res['windows']] == ['21/Nov/2026:03', '21/Nov/2026:04']
    assert res['windows'][0]['records'][0] == {'count': 2000, 'address': '198.51.100.1'}
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.7\n2001:db8::7\n'
    assert (tmp_path / 'activity.log').read_bytes().count(b'IP addess') == 2
    # No facts: a module that returns them is named *_facts and returns nothing else (2.0.0).
    assert 'ansible_facts' not in res
    # The console lines are the host command's, line for line (the duration aside).
    for path in ('blocklist', 'activity.log'):
        (tmp_path / path).write_bytes(b'192.0.2.1\n' if path == 'blocklist' else b'')
    cmd = run_core(['--blocklist', args['blocklist'], '--exclusions', args['exclusions'], '--activity-log',
                    args['activity_log'], '--server-ip', '10.0.0.5', '--now', NOW, args['log']])
    assert res['messages'][:-1] == cmd.stdout.decode().splitlines()[:-1]

    rc, again = ansible(args)
    assert rc == 0 and again['changed'] is False
    assert [e['address'] for e in again['already_blocked']] == ['203.0.113.7', '2001:db8::7']


def test_check_mode_and_diff(case):
    tmp_path, args = case
    rc, res = ansible(args, flags=['--check', '--diff'])
    assert rc == 0
    assert res['changed'] is True
    assert [e['address'] for e in res['blocked']] == ['203.0.113.7', '2001:db8::7']
    assert res['diff']['prepared'].splitlines() == [
        '--- %s' % args['blocklist'], '+++ %s' % args['blocklist'], '@@ -1,0 +2,2 @@', '+203.0.113.7', '+2001:db8::7']
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n'
    assert not (tmp_path / 'activity.log').exists()


def test_no_diff_without_diff_mode(case):
    rc, res = ansible(case[1], flags=['--check'])
    assert rc == 0 and 'diff' not in res


def test_short_name_works_from_the_checkout(case):
    tmp_path, args = case
    rc, res = ansible(args, module='bot_detector', flags=['--check'])
    assert rc == 0 and res['changed'] is True


def test_several_logs_are_summed(case):
    tmp_path, args = case
    second = tmp_path / 'second.log'
    second.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'192.0.2.99': 600}))
    first = tmp_path / 'first.log'
    first.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'192.0.2.99': 400}))
    args = dict(args, log=[str(first), str(second)])
    rc, res = ansible(args)
    assert rc == 0
    assert res['blocked'] == [{'address': '192.0.2.99', 'count': 1000, 'window': 'previous'}]


@pytest.mark.parametrize('override,fragment', [
    ({'log': '/nonexistent/access.log'}, 'File not found or not readable: /nonexistent/access.log'),
    ({'threshold': -1}, 'threshold: must be a whole number of at least 1, got -1'),
    ({'top': 0}, 'top: must be a whole number of at least 1, got 0'),
    ({'now': 'soon'}, "now must be 'YYYY-MM-DD HH:MM:SS'"),
    ({'bogus': 1}, 'Unsupported parameters'),
    ({'rules': 'fuzzy'}, 'value of rules must be one of: spec, precise'),
    ({'rules': 'precise', 'ipv6_prefix': 200}, 'ipv6_prefix: must be a whole number from 1 to 128, got 200'),
    ({'seek_margin': -1}, 'seek_margin: must be a whole number of at least 0, got -1'),
])
def test_bad_arguments_fail_before_anything_is_written(case, override, fragment):
    tmp_path, args = case
    rc, res = ansible(dict(args, **override))
    assert rc != 0 and res['failed'] is True
    assert fragment in res['msg']
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n'
    assert not (tmp_path / 'activity.log').exists()


def test_failed_append_names_the_path(case):
    tmp_path, args = case
    (tmp_path / 'dir').mkdir()
    rc, res = ansible(dict(args, blocklist=str(tmp_path / 'dir')))
    assert res['failed'] is True
    assert res['msg'] == 'cannot append to %s: Is a directory' % (tmp_path / 'dir')
    assert not (tmp_path / 'activity.log').exists()


def test_check_mode_fails_where_the_real_run_fails(case):
    """Issue 39: check mode reported what it would block, and passed, where the real run fails."""
    tmp_path, args = case
    (tmp_path / 'dir').mkdir()
    rc, checked = ansible(dict(args, blocklist=str(tmp_path / 'dir')), flags=['--check'])
    assert checked['failed'] is True, checked
    assert checked['msg'] == 'cannot append to %s: Is a directory' % (tmp_path / 'dir')
    assert os.listdir(str(tmp_path / 'dir')) == [] and not (tmp_path / 'activity.log').exists()


def test_precise_rules_through_the_module(case):
    tmp_path, args = case
    (tmp_path / 'blocklist').write_bytes(b'203.0.113.0/24\n')
    rc, res = ansible(dict(args, rules='precise'))
    assert rc == 0 and res['rules'] == 'precise'
    assert [e['address'] for e in res['already_blocked']] == ['203.0.113.7']
    assert [e['address'] for e in res['blocked']] == ['2001:db8::7']


def test_report_mode_counts_and_touches_nothing(case):
    tmp_path, args = case
    (tmp_path / 'activity.log').write_bytes(b'Sat Nov 21 01:00:00 UTC 2026 | IP addess 192.0.2.1 added to the block list, RPH=1300\n'
                                            b'Sat Nov 21 01:30:00 UTC 2026 | IP addess 192.0.2.9 added to the block list, RPH=1200\n'
                                            b'Sat Nov 21 02:00:00 UTC 2026 | IP addess 192.0.2.8 added to the block list, RPH=1000 (fleet)\n')
    rc, res = ansible(dict(args, mode='report', report_floor=30))
    assert rc == 0 and res['changed'] is False
    assert res['counts'] == {'previous': {'198.51.100.1': 2000, '203.0.113.7': 1450},
                             'current': {'2001:db8::7': 1000, '203.0.113.7': 30}}
    assert res['local_blocks'] == [{'address': '192.0.2.1', 'count': 1300}]     # not the fleet's; 192.0.2.9 not listed
    assert res['report_floor'] == 30 and res['now'] == NOW_EPOCH
    windows = [(w['name'], w['hour_stamp']) for w in res['windows']]
    assert windows == [('previous', '21/Nov/2026:03'), ('current', '21/Nov/2026:04')]
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n'


def test_report_phase_2_returns_the_exact_counts_asked_with_grouped_keys(case):
    """The fleet's phase 2: candidates by hour stamp or window name, networks as phase 1
    reported them, zeros included, the hours of phase 1's instant (@seconds)."""
    tmp_path, args = case
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450, '2001:db8:1:2::5': 20, '2001:db8:1:2::6': 7},
                                       current={'203.0.113.7': 30}))
    precise = dict(args, rules='precise', ipv6_prefix=64, mode='report', now='@%d' % (NOW_EPOCH - 7200))
    rc, res = ansible(dict(precise, report_floor=25))
    assert rc == 0, res                 # two hours earlier: nothing in those windows
    assert res['counts'] == {'previous': {}, 'current': {}} and res['now'] == NOW_EPOCH - 7200
    rc, res = ansible(dict(precise, now='@%d' % NOW_EPOCH, report_floor=25, compact=True))
    assert res['counts'] == {'previous': '1450 203.0.113.7\n27 2001:db8:1:2::/64\n', 'current': '30 203.0.113.7\n'}
    asked = {'21/Nov/2026:03': ['2001:db8:1:2::/64', '192.0.2.77'], 'current': ['203.0.113.7'], '21/Nov/2026:05': ['x']}
    rc, res = ansible(dict(precise, now='@%d' % NOW_EPOCH, candidates=asked))
    assert rc == 0, res
    assert res['counts'] == {'previous': {'2001:db8:1:2::/64': 27, '192.0.2.77': 0}, 'current': {'203.0.113.7': 30}}
    assert 'local_blocks' not in res and 'report_floor' not in res
    rc, res = ansible(dict(args, candidates=asked))
    assert rc != 0 and res['msg'] == 'candidates: only with mode=report'
    rc, res = ansible(dict(args, compact=True))
    assert rc != 0 and res['msg'] == 'compact: only with mode=report'
    rc, res = ansible(dict(precise, candidates={'previous': 'x'}))
    assert rc != 0 and res['msg'].startswith('candidates must map each window (name or hour stamp) to a list of keys')


def test_apply_mode_appends_decisions_with_the_hosts_checks(case):
    tmp_path, args = case
    decisions = [{'address': '203.0.113.50', 'count': 1200, 'reason': 'fleet'},
                 {'address': '198.51.100.1', 'count': 3000},                     # allow-listed here
                 {'address': '192.0.2.1', 'count': 1500, 'reason': 'sync', 'source': 'web1'},   # already here
                 {'address': 'not-an-address', 'count': 5000}]
    apply_args = dict((k, v) for k, v in args.items() if k not in ('log', 'now', 'server_ip'))
    rc, res = ansible(dict(apply_args, mode='apply', addresses=decisions))
    assert rc == 0 and res['changed'] is True
    assert [e['address'] for e in res['blocked']] == ['203.0.113.50']
    assert [e['address'] for e in res['allow_listed']] == ['198.51.100.1']
    assert [e['address'] for e in res['already_blocked']] == ['192.0.2.1']
    assert [e['address'] for e in res['skipped_invalid']] == ['not-an-address']
    assert (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n203.0.113.50\n'
    assert (tmp_path / 'activity.log').read_text().endswith('IP addess 203.0.113.50 added to the block list, RPH=1200 (fleet)\n')
    rc, again = ansible(dict(apply_args, mode='apply', addresses=decisions))
    assert rc == 0 and again['changed'] is False


def test_ansible_doc_renders():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'))
    out = subprocess.run(['ansible-doc', 'jobboard.bot_detector.bot_detector'], cwd=str(ROOT), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode()
    for word in ('check_mode', 'diff_mode', 'threshold', 'job_prefixes', 'already_blocked', 'EXAMPLES'):
        assert word in out


def test_config_file_applies_unless_an_option_is_given(case):
    """The host config file's settings apply to an ad-hoc run; an option given wins over it."""
    tmp_path, args = case
    config = tmp_path / 'bot-detector.conf'
    config.write_text('[bot_detector]\nthreshold = 1500\nserver_ips =\n    10.0.0.5\n    198.51.100.1\n')
    base = dict((k, v) for k, v in args.items() if k != 'server_ip')
    rc, res = ansible(dict(base, config=str(config)), flags=['--check'])
    assert rc == 0, res
    # 203.0.113.7 (1450) is under 1500; 198.51.100.1 is a server address now, so never examined.
    assert res['blocked'] == [] and res['allow_listed'] == []
    assert all(r['address'] != '198.51.100.1' for w in res['windows'] for r in w['records'])
    rc, res = ansible(dict(base, config=str(config), threshold=1000), flags=['--check'])
    assert [b['address'] for b in res['blocked']] == ['203.0.113.7', '2001:db8::7']


@pytest.mark.parametrize('content,fragment', [
    ('[bot_detector]\nthreshold = ten\n', "threshold = ten: must be a whole number, got 'ten'"),
    ('[bot_detector]\nthreshhold = 5\n', "unknown setting 'threshhold'"),
    ('[other]\nthreshold = 5\n', 'unknown section [other]'),
])
def test_bad_config_file_fails_the_task_naming_file_key_value(case, content, fragment):
    tmp_path, args = case
    config = tmp_path / 'bot-detector.conf'
    config.write_text(content)
    rc, res = ansible(dict(args, config=str(config)))
    assert rc != 0 and res['failed'] is True
    assert res['msg'].startswith(str(config) + ': ') and fragment in res['msg'], res['msg']
    assert not (tmp_path / 'activity.log').exists() and (tmp_path / 'blocklist').read_bytes() == b'192.0.2.1\n'


def test_damaged_rotated_file_is_a_module_warning(case):
    """logrotate still compressing access.log.1.gz: the module warns and blocks from the log."""
    import gzip
    tmp_path, args = case
    whole = gzip.compress(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.99': 5000}))
    (tmp_path / 'access.log.1.gz').write_bytes(whole[:len(whole) // 2])
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, current={'2001:db8::7': 1000}))     # starts after the windows began
    rc, res = ansible(args)
    assert rc == 0, res
    rotated = str(tmp_path / 'access.log.1.gz')
    assert len(res['warnings']) == 1
    assert res['warnings'][0].startswith('cannot read %s: ' % rotated)
    assert res['warnings'][0].endswith('; the run goes on without this rotated file')
    assert [b['address'] for b in res['blocked']] == ['2001:db8::7']
