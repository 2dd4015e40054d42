"""The address_list module by real ad-hoc `ansible` runs: appends only, keeps lines
added by hand, check mode and diff, idempotence."""
from test_module import ansible


def test_appends_missing_entries_only(tmp_path):
    path = tmp_path / 'ipexcludedlist.txt'
    path.write_bytes(b'# office\n198.51.100.230\n  203.0.113.9  \n192.0.2.1')   # no final newline
    before = path.stat().st_ino
    rc, res = ansible({'path': str(path), 'entries': ['203.0.113.9', '198.51.100.23', '2001:db8::5', '198.51.100.23']},
                      module='jobboard.bot_detector.address_list')
    assert rc == 0 and res['changed'] is True
    assert res['added'] == ['198.51.100.23', '2001:db8::5']      # exact lines: 198.51.100.230 is another address
    assert path.read_bytes() == b'# office\n198.51.100.230\n  203.0.113.9  \n192.0.2.1\n198.51.100.23\n2001:db8::5\n'
    assert path.stat().st_ino == before                         # appended in place, never replaced
    rc, again = ansible({'path': str(path), 'entries': ['198.51.100.23']}, module='jobboard.bot_detector.address_list')
    assert rc == 0 and again['changed'] is False and again['added'] == []


def test_check_mode_and_diff_write_nothing(tmp_path):
    path = tmp_path / 'new.txt'
    rc, res = ansible({'path': str(path), 'entries': ['192.0.2.7']}, module='jobboard.bot_detector.address_list',
                      flags=['--check', '--diff'])
    assert rc == 0 and res['changed'] is True and res['added'] == ['192.0.2.7']
    assert '+192.0.2.7' in res['diff']['prepared']
    assert not path.exists()
    rc, res = ansible({'path': str(path), 'entries': ['192.0.2.7']}, module='jobboard.bot_detector.address_list')
    assert path.read_bytes() == b'192.0.2.7\n' and oct(path.stat().st_mode & 0o777) == '0o644'


def test_bad_entry_fails_cleanly(tmp_path):
    path = tmp_path / 'list.txt'
    path.write_bytes(b'192.0.2.1\n')
    rc, res = ansible({'path': str(path), 'entries': ['192.0.2.2', '']}, module='jobboard.bot_detector.address_list')
    assert rc != 0 and 'an entry must be one non-empty line' in res['msg']
    assert path.read_bytes() == b'192.0.2.1\n'
