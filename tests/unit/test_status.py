"""--status: each blocklist entry with when and why it was added and when it expires; with a
LOG, the top addresses of the windows against the threshold. Text and JSON; nothing written."""
import json
import time

import loggen
from conftest import in_timezone, run_core
from test_expiry import gnu_date

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def test_status_text_and_json(tmp_path, files):
    wall = int(time.time())
    own, fleet, sync, old = wall - 3600, wall - 7200, wall - 600, wall - 90000
    files.blocklist.write_bytes(b'# the feed\n203.0.113.7\n198.51.100.4\n192.0.2.50\n2001:db8::9\n203.0.113.7\n192.0.2.60\n')
    files.activity_log.write_bytes(
        b'%s | IP addess 203.0.113.7 added to the block list, RPH=1450\n' % gnu_date(own)
        + b'%s | IP addess 198.51.100.4 added to the block list, RPH=3100 (fleet)\n' % gnu_date(fleet)
        + b'%s | IP addess 2001:db8::9 added to the block list, RPH=1200 (sync)\n' % gnu_date(sync)
        + b'%s | IP addess 192.0.2.60 added to the block list, RPH=1000\n' % gnu_date(old))
    (tmp_path / 'exclusions').write_bytes(b'198.51.100.23\n')
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(
        NOW_EPOCH, previous={'203.0.113.7': 1450, '198.51.100.23': 2000, '198.51.100.30': 999, '203.0.113.99': 1000},
        current={'192.0.2.77': 500})))
    before = {p: p.read_bytes() for p in (files.blocklist, files.activity_log)}
    args = files.options() + ['--exclusions', tmp_path / 'exclusions', '--status', '--ban-time', '1d',
                              '--server-ip', '10.0.0.5', '--now', NOW]
    got = run_core(args + [log])
    assert got.returncode == 0 and got.stderr == b'', got.stderr
    assert got.stdout.decode().splitlines() == [
        'Blocklist %s: 5 entries' % files.blocklist,
        "203.0.113.7  added %s by this host's run, RPH=1450; expires %s (ban 1d)" % (
            gnu_date(own).decode(), gnu_date(own + 86400).decode()),
        '198.51.100.4  added %s by the fleet, RPH=3100; expires %s (ban 1d)' % (
            gnu_date(fleet).decode(), gnu_date(fleet + 86400).decode()),
        '192.0.2.50  added by hand or by other software (no addition in the activity log, or none since its last removal); never expires',
        "2001:db8::9  added %s by the fleet, from another host's own run, RPH=1200; expires %s (ban 1d)" % (
            gnu_date(sync).decode(), gnu_date(sync + 86400).decode()),
        "192.0.2.60  added %s by this host's run, RPH=1000; ban of 1d over: the next run removes it" % gnu_date(old).decode(),
        'Previous hour (21/Nov/2026:03), threshold 1000:',
        '    2000  200%  198.51.100.23  allow-listed',
        '    1450  145%  203.0.113.7  already blocked',
        '    1000  100%  203.0.113.99  would be blocked',
        '     999   99%  198.51.100.30',
        'Current hour (21/Nov/2026:04), threshold 1000:',
        '     500   50%  192.0.2.77',
    ]
    doc = json.loads(run_core(args + ['--json', log]).stdout)
    assert doc['changed'] is False and doc['blocklist'] == str(files.blocklist) and doc['warnings'] == []
    first = doc['entries'][0]
    assert first == {'address': '203.0.113.7', 'source': 'own', 'added': gnu_date(own).decode(), 'added_epoch': own,
                     'count': 1450, 'ban': '1d', 'ban_seconds': 86400, 'expires': own + 86400,
                     'expires_date': gnu_date(own + 86400).decode(), 'state': 'at'}
    assert [(e['address'], e['source'], e['state']) for e in doc['entries'][1:]] == [
        ('198.51.100.4', 'fleet', 'at'), ('192.0.2.50', 'hand', 'never'), ('2001:db8::9', 'sync', 'at'),
        ('192.0.2.60', 'own', 'due')]
    assert doc['windows'][0]['records'][2] == {'address': '203.0.113.99', 'count': 1000, 'percent': 100, 'verdict': 'block'}
    assert [w['name'] for w in doc['windows']] == ['previous', 'current']
    # Without a log: the entries only; without a ban time: none expires.
    plain = json.loads(run_core(files.options() + ['--status', '--json']).stdout)
    assert 'windows' not in plain and [e['state'] for e in plain['entries']] == ['no_ban_time'] * 5
    assert run_core(files.options() + ['--status']).stdout.decode().splitlines()[1].endswith('; no ban time set')
    for path, content in before.items():
        assert path.read_bytes() == content


def test_status_of_a_missing_blocklist(files):
    got = run_core(files.options() + ['--status'])
    assert got.returncode == 0 and got.stdout == b'Blocklist %s: 0 entries\n' % bytes(files.blocklist)
    assert not files.blocklist.exists() and not files.activity_log.exists()


def test_status_of_one_entry_added_by_hand(files):
    files.blocklist.write_bytes(b'192.0.2.1\n')
    got = run_core(files.options() + ['--status'])
    lines = got.stdout.decode().splitlines()
    assert got.returncode == 0 and lines[0] == 'Blocklist %s: 1 entry' % files.blocklist and lines[1].startswith('192.0.2.1')


def test_status_of_a_list_it_cannot_read_is_an_error_naming_it(files):
    """Not '0 entries' for a blocklist that is there but cannot be read (a directory here:
    the tests run as root, who reads any file)."""
    files.blocklist.mkdir()
    got = run_core(files.options() + ['--status'])
    assert got.returncode == 3 and got.stdout == b''
    assert got.stderr.decode().strip() == 'bot-detector: error: cannot read %s: not a regular file' % files.blocklist


def test_a_follower_status_file_that_is_no_object_is_passed_over(tmp_path, monkeypatch):
    """The followers' status files in the lock directory: one garbled into JSON that is no object
    (a list, a string, null) is passed over as an unreadable one is (before: TypeError, --status
    and the info module ended by a traceback)."""
    import os
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers import status
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.lists import writer
    locks = tmp_path / 'run'
    locks.mkdir(mode=0o700)
    monkeypatch.setattr(writer, 'ROOT_LOCK_DIR', str(locks / 'bot-detector'))       # this test's, not the machine's
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(locks))
    (locks / 'bot-detector').mkdir(mode=0o700)
    directory = writer.lock_directory(create=False)
    assert directory == str(locks / 'bot-detector')
    for name, text in (('follow-1.json', '[1]'), ('follow-2.json', '"x"'), ('follow-3.json', 'null'),
                       ('follow-4.json', '{"pid": 4, "blocklist": "/x"}')):
        with open(os.path.join(directory, name), 'w') as handle:
            handle.write(text)
    assert [(doc['pid'], doc['running']) for doc in status.followers()] == [(4, False)]
