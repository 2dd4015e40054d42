"""The fleet_totals filter: sums per address and window, the threshold, sync, missing hosts."""
import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.jobboard.bot_detector.plugins.filter.fleet import fleet_totals


def report(previous=None, current=None, local=None):
    return {'changed': False, 'counts': {'previous': previous or {}, 'current': current or {}}, 'local_blocks': local or []}


HOSTVARS = {
    'web1': {'bot_detector_report': report({'203.0.113.7': 400, '198.51.100.1': 900}, {'203.0.113.9': 700},
                                           local=[{'address': '192.0.2.5', 'count': 1500}])},
    'web2': {'bot_detector_report': report({'203.0.113.7': 400, '198.51.100.1': 99}, {'203.0.113.9': 300})},
    'web3': {'bot_detector_report': report({'203.0.113.7': 400}, local=[{'address': '192.0.2.5', 'count': 1200},
                                                                        {'address': '203.0.113.7', 'count': 1000}])},
    'web4': {'bot_detector_report': {'unreachable': True, 'msg': 'Failed to connect'}},
    'web5': {'bot_detector_report': {'failed': True, 'msg': 'File not found or not readable: /x'}},
    'web6': {},
}


def test_sums_across_hosts_per_window():
    result = fleet_totals(['web1', 'web2', 'web3', 'web4', 'web5', 'web6', 'web7'], HOSTVARS, threshold=1000)
    assert result['hosts'] == ['web1', 'web2', 'web3']
    assert result['missing'] == ['web4', 'web5', 'web6', 'web7']
    assert result['totals']['previous'] == {'203.0.113.7': 1200, '198.51.100.1': 999}
    assert result['offenders'] == [{'address': '203.0.113.7', 'count': 1200, 'window': 'previous', 'reason': 'fleet'},
                                   {'address': '203.0.113.9', 'count': 1000, 'window': 'current', 'reason': 'fleet'}]
    assert result['sync'] == [] and result['decisions'] == result['offenders']


def test_sync_adds_each_hosts_own_blocks_once():
    result = fleet_totals(['web1', 'web2', 'web3'], HOSTVARS, threshold=1000, sync=True)
    assert result['sync'] == [{'address': '192.0.2.5', 'count': 1500, 'reason': 'sync', 'source': 'web1'}]
    assert [d['address'] for d in result['decisions']] == ['203.0.113.7', '203.0.113.9', '192.0.2.5']


def test_bad_threshold():
    with pytest.raises(AnsibleFilterError):
        fleet_totals(['web1'], HOSTVARS, threshold=0)
