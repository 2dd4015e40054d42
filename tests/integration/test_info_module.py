"""The bot_detector_info module through real ad-hoc `ansible` on localhost: it returns
what bot_detector's deprecated mode=report and mode=status return on the same files, the
same in check mode, writes nothing, and fails clearly; the deprecated modes warn."""
import hashlib
import os
import subprocess
import time

import pytest

import loggen
from conftest import ROOT
from test_module import NOW, NOW_EPOCH, ansible
from test_unblock_status import gnu_date

INFO = 'jobboard.bot_detector.bot_detector_info'
# What differs between two tasks on the same files whatever they return.
TASK_KEYS = ('invocation', 'deprecations', 'execution_time', 'action', '_ansible_no_log')


def task_result(res):
    return dict((key, value) for key, value in res.items() if key not in TASK_KEYS)


def tree(path):
    """Every file under ``path`` with its mode and content's digest."""
    return dict((str(p), (p.stat().st_mode, hashlib.sha256(p.read_bytes()).hexdigest()))
                for p in sorted(path.rglob('*')) if p.is_file())


@pytest.fixture
def host(tmp_path):
    """A host's files: two logs (one JSON), lists, an activity log with own, fleet and
    removed additions, an empty config file."""
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450, '198.51.100.1': 2000, '10.0.0.5': 9000,
                                                            '2001:db8:1:2::5': 20, '2001:db8:1:2::6': 7},
                                       current={'2001:db8::7': 1000, '203.0.113.7': 30, '192.0.2.1': 1100}))
    other = tmp_path / 'other.log'
    other.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 50, '192.0.2.99': 999}))
    (tmp_path / 'exclusions').write_bytes(b'198.51.100.1\n')
    (tmp_path / 'blocklist').write_bytes(b'192.0.2.1\n198.51.100.4\n192.0.2.8\n')
    wall = int(time.time())
    (tmp_path / 'activity.log').write_text(
        '%s | IP addess 192.0.2.1 added to the block list, RPH=1300\n' % gnu_date(wall - 3 * 3600)
        + '%s | IP addess 192.0.2.9 added to the block list, RPH=1200\n' % gnu_date(wall - 2 * 3600)
        + '%s | IP addess 192.0.2.8 added to the block list, RPH=1000 (fleet)\n' % gnu_date(wall - 600))
    (tmp_path / 'bot-detector.conf').write_bytes(b'')
    args = {'log': [str(log)], 'blocklist': str(tmp_path / 'blocklist'), 'exclusions': str(tmp_path / 'exclusions'),
            'activity_log': str(tmp_path / 'activity.log'), 'server_ip': '10.0.0.5', 'now': NOW,
            'config': str(tmp_path / 'bot-detector.conf')}
    return tmp_path, args


# Each query's cases: the options over the host's (report: phase 1, its floor and compact
# form, phase 2, precise rules, two logs; status: with and without logs and ban time).
REPORTS = [
    {'report_floor': 30},
    {},
    {'report_floor': 5, 'compact': True},
    {'candidates': {'21/Nov/2026:03': ['203.0.113.7', '192.0.2.77'], 'current': ['2001:db8::7']}},
    {'rules': 'precise', 'ipv6_prefix': 64, 'report_floor': 25},
    {'rules': 'precise', 'ipv6_prefix': 64, 'now': '@%d' % NOW_EPOCH, 'candidates': {'previous': ['2001:db8:1:2::/64']}},
    {'two_logs': True, 'report_floor': 40, 'threshold': 500},
]
STATUSES = [
    {'log': None},
    {},
    {'ban_time': '2h', 'threshold': 1200},
    {'two_logs': True, 'ban_time': '1d', 'top': 2},
]


def options(host_args, tmp_path, case):
    case = dict(case)
    args = dict(host_args)
    if case.pop('two_logs', False):
        args['log'] = args['log'] + [str(tmp_path / 'other.log')]
    args.update(case)
    return dict((key, value) for key, value in args.items() if value is not None)


@pytest.mark.parametrize('query,case', [('report', c) for c in REPORTS] + [('status', c) for c in STATUSES])
def test_info_returns_what_the_deprecated_mode_returns_and_writes_nothing(host, query, case):
    tmp_path, host_args = host
    args = options(host_args, tmp_path, case)
    before = tree(tmp_path)
    rc, old = ansible(dict(args, mode=query))
    assert rc == 0, old
    rc, new = ansible(dict(args, query=query), module=INFO)
    assert rc == 0, new
    assert new['changed'] is False
    assert 'deprecations' not in new
    assert task_result(new) == task_result(old)
    # The same in check mode, and nothing written either way.
    rc, checked = ansible(dict(args, query=query), module=INFO, flags=['--check'])
    assert rc == 0 and checked['changed'] is False
    assert task_result(checked) == task_result(new)
    assert tree(tmp_path) == before


def test_info_results_are_the_hosts_counts_and_entries(host):
    """The values themselves, from the planted counts and lists (not from either module)."""
    tmp_path, args = host
    rc, res = ansible(dict(args, query='report', report_floor=30), module=INFO)
    assert rc == 0, res
    assert res['counts'] == {'previous': {'198.51.100.1': 2000, '203.0.113.7': 1450},
                             'current': {'192.0.2.1': 1100, '2001:db8::7': 1000, '203.0.113.7': 30}}
    assert res['local_blocks'] == [{'address': '192.0.2.1', 'count': 1300}]     # 192.0.2.8 the fleet's, 192.0.2.9 gone
    assert res['report_floor'] == 30 and res['now'] == NOW_EPOCH
    rc, res = ansible(dict(args, ban_time='2h'), module=INFO)          # query: status by default
    assert rc == 0, res
    assert res['blocklist'] == args['blocklist']
    assert [(e['address'], e['source'], e['state']) for e in res['entries']] == [
        ('192.0.2.1', 'own', 'due'), ('198.51.100.4', 'hand', 'never'), ('192.0.2.8', 'fleet', 'at')]
    previous, current = res['windows']
    assert previous['hour_stamp'] == '21/Nov/2026:03' and current['hour_stamp'] == '21/Nov/2026:04'
    assert [(r['address'], r['count'], r['verdict']) for r in current['records'][:2]] == [
        ('192.0.2.1', 1100, 'already_blocked'), ('2001:db8::7', 1000, 'block')]


@pytest.mark.parametrize('query', ['report', 'status'])
def test_a_missing_log_fails_naming_it(host, query):
    tmp_path, args = host
    missing = str(tmp_path / 'gone.log')
    before = tree(tmp_path)
    for flags in ([], ['--check']):
        rc, res = ansible(dict(args, query=query, log=[args['log'][0], missing]), module=INFO, flags=flags)
        assert rc != 0 and res['failed'] is True
        assert missing in res['msg'], res['msg']
    assert tree(tmp_path) == before


def test_bad_options_fail_clearly(host):
    tmp_path, args = host
    no_log = dict((key, value) for key, value in args.items() if key != 'log')
    rc, res = ansible(dict(no_log, query='report'), module=INFO)
    assert rc != 0 and res['msg'] == 'query is report but all of the following are missing: log'
    for option, value in (('candidates', {'previous': ['192.0.2.1']}), ('compact', True)):
        rc, res = ansible(dict(args, **{option: value}), module=INFO)
        assert rc != 0 and res['msg'] == '%s: only with query=report' % option
    rc, res = ansible(dict(args, query='report', report_floor=0), module=INFO)
    assert rc != 0 and res['msg'] == 'report_floor: must be a whole number of at least 1, got 0'
    rc, res = ansible(dict(args, query='detect'), module=INFO)
    assert rc != 0 and 'value of query must be one of: status, report' in res['msg']
    rc, res = ansible(dict(args, mode='report'), module=INFO)
    assert rc != 0 and 'Unsupported parameters' in res['msg'] and 'mode' in res['msg']


@pytest.mark.parametrize('mode', ['report', 'status'])
def test_the_deprecated_modes_warn_pointing_to_the_info_module(host, mode):
    tmp_path, args = host
    rc, res = ansible(dict(args, mode=mode))
    assert rc == 0, res
    assert [(d['msg'], d['version'], d['collection_name']) for d in res['deprecations']] == [
        ('mode=%s is deprecated: use the module jobboard.bot_detector.bot_detector_info with query=%s, which returns the same'
         % (mode, mode), '3.0.0', 'jobboard.bot_detector')]


@pytest.mark.parametrize('mode', ['detect', 'apply'])
def test_the_other_modes_do_not_warn(host, mode):
    tmp_path, args = host
    extra = {'addresses': ['192.0.2.200']} if mode == 'apply' else {}
    rc, res = ansible(dict(args, mode=mode, **extra), flags=['--check'])
    assert rc == 0, res
    assert 'deprecations' not in res


def test_ansible_doc_renders_the_info_module():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'))
    out = subprocess.run(['ansible-doc', '-t', 'module', INFO], cwd=str(ROOT), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode()
    for word in ('check_mode', 'query', 'report_floor', 'candidates', 'entries', 'local_blocks', 'EXAMPLES', 'threshold'):
        assert word in out
    old = subprocess.run(['ansible-doc', '-t', 'module', 'jobboard.bot_detector.bot_detector'], cwd=str(ROOT), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout.decode()
    assert ' '.join(old.split()).count('deprecated and will be removed in 3.0.0') == 2
