"""The fleet filters on hand-made reports: what counts as missing, windows matched by hour
stamp, sync, bad input. The exactness on random fleets is test_fleet_exact.py."""
import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.jobboard.bot_detector.plugins.filter.fleet import fleet_candidates, fleet_totals

H3, H4, H5 = '21/Nov/2026:03', '21/Nov/2026:04', '21/Nov/2026:05'


def report(previous=None, current=None, local=None, floor=334, hours=(H3, H4)):
    return {'changed': False, 'report_floor': floor, 'local_blocks': local or [],
            'windows': [{'name': 'previous', 'hour_stamp': hours[0]}, {'name': 'current', 'hour_stamp': hours[1]}],
            'counts': {'previous': previous or {}, 'current': current or {}}}


HOSTVARS = {
    'web1': {'bot_detector_report': report({'203.0.113.7': 400, '198.51.100.1': 900}, {'203.0.113.9': 700},
                                           local=[{'address': '192.0.2.5', 'count': 1500}]),
             'bot_detector_exact': report({'203.0.113.7': 400, '198.51.100.1': 900}, {'203.0.113.9': 710})},
    'web2': {'bot_detector_report': report({'203.0.113.7': 400}, {}),
             'bot_detector_exact': report({'203.0.113.7': 400, '198.51.100.1': 99}, {'203.0.113.9': 300})},
    'web3': {'bot_detector_report': report({'203.0.113.7': 400}, local=[{'address': '192.0.2.5', 'count': 1200},
                                                                        {'address': '203.0.113.7', 'count': 1000}]),
             'bot_detector_exact': report({'203.0.113.7': 400, '198.51.100.1': 0}, {'203.0.113.9': 0})},
    'web4': {'bot_detector_report': {'unreachable': True, 'msg': 'Failed to connect', 'changed': False}},
    'web5': {'bot_detector_report': {'failed': True, 'msg': 'File not found or not readable: /x'}},
    'web6': {'bot_detector_report': {'skipped': True, 'changed': False}},
    'web7': {},
}


def test_candidates_and_what_counts_as_missing():
    result = fleet_candidates(['web1', 'web2', 'web3', 'web4', 'web5', 'web6', 'web7', 'web8'], HOSTVARS, threshold=1000)
    assert result['hosts'] == ['web1', 'web2', 'web3']
    assert result['missing'] == ['web4', 'web5', 'web6', 'web7', 'web8']
    # 198.51.100.1: 900 + 333 + 333 could reach 1000; 203.0.113.9: 700 + 333 + 333 too: phase 2
    # counts them. 203.0.113.7 is reported by every host: 1200, settled in phase 1.
    assert result['sums'] == {H3: {'198.51.100.1': 900, '203.0.113.7': 1200}, H4: {'203.0.113.9': 700}}
    assert result['candidates'] == {H3: ['198.51.100.1'], H4: ['203.0.113.9']}
    assert result['total'] == 3 and result['count'] == 2 and result['exact'] is True


def test_totals_sum_the_exact_answers():
    result = fleet_totals(['web1', 'web2', 'web3', 'web4'], HOSTVARS, threshold=1000)
    assert result['missing'] == ['web4'] and result['missing_exact'] == []
    # Phase 2 adds the counts of the hosts that did not report a candidate (web1's own, reported
    # in phase 1, stays phase 1's).
    assert result['totals'] == {H3: {'203.0.113.7': 1200, '198.51.100.1': 999}, H4: {'203.0.113.9': 1000}}
    assert result['offenders'] == [{'address': '203.0.113.7', 'count': 1200, 'window': H3, 'reason': 'fleet'},
                                   {'address': '203.0.113.9', 'count': 1000, 'window': H4, 'reason': 'fleet'}]
    assert result['undecided'] == [] and result['sync'] == [] and result['decisions'] == result['offenders']


def test_sync_adds_each_hosts_own_blocks_once():
    result = fleet_totals(['web1', 'web2', 'web3'], HOSTVARS, threshold=1000, sync=True)
    assert result['sync'] == [{'address': '192.0.2.5', 'count': 1500, 'reason': 'sync', 'source': 'web1'}]
    assert [d['address'] for d in result['decisions']] == ['203.0.113.7', '203.0.113.9', '192.0.2.5']


def test_hosts_either_side_of_an_hours_end_are_summed_per_hour():
    # web2 ran at 05:00:01: its previous hour is web1's current one.
    hostvars = {'web1': {'bot_detector_report': report({'203.0.113.7': 50}, {'203.0.113.8': 600}, floor=500),
                         'bot_detector_exact': report({}, {'203.0.113.8': 600}, floor=500)},
                'web2': {'bot_detector_report': report({'203.0.113.8': 500}, {}, floor=500, hours=(H4, H5)),
                         'bot_detector_exact': report({'203.0.113.8': 500}, {}, floor=500, hours=(H4, H5))}}
    result = fleet_totals(['web1', 'web2'], hostvars, threshold=1000)
    assert result['offenders'] == [{'address': '203.0.113.8', 'count': 1100, 'window': H4, 'reason': 'fleet'}]


def test_reports_without_hour_stamps_are_matched_by_window_name():
    bare = {'web1': {'bot_detector_report': {'report_floor': 500, 'counts': {'previous': {'203.0.113.7': 600}}},
                     'bot_detector_exact': {'counts': {'previous': {'203.0.113.7': 600}}}},
            'web2': {'bot_detector_report': {'report_floor': 500, 'counts': {'previous': {}}},
                     'bot_detector_exact': {'counts': {'previous': {'203.0.113.7': 400}}}}}
    assert fleet_totals(['web1', 'web2'], bare)['offenders'] == [
        {'address': '203.0.113.7', 'count': 1000, 'window': 'previous', 'reason': 'fleet'}]


def test_no_phase_2_needed_when_nothing_can_reach_the_threshold():
    hostvars = {'web1': {'bot_detector_report': report({'203.0.113.7': 400}), 'bot_detector_exact': {'skipped': True}},
                'web2': {'bot_detector_report': report({'203.0.113.7': 400}), 'bot_detector_exact': {'skipped': True}}}
    result = fleet_totals(['web1', 'web2'], hostvars, threshold=1000)     # 400 + 400, all known: under 1000
    assert result['candidates'] == {H3: [], H4: []}
    assert result['missing_exact'] == [] and result['offenders'] == [] and result['undecided'] == []


@pytest.mark.parametrize('threshold', [0, -1, True, '1000', 1.5])
def test_bad_threshold(threshold):
    with pytest.raises(AnsibleFilterError, match='threshold must be a whole number'):
        fleet_totals(['web1'], HOSTVARS, threshold=threshold)
    with pytest.raises(AnsibleFilterError, match='threshold must be a whole number'):
        fleet_candidates(['web1'], HOSTVARS, threshold=threshold)


@pytest.mark.parametrize('floor', [None, 0, '50', True])
def test_a_report_without_its_floor_is_refused_naming_the_host(floor):
    hostvars = {'web1': {'bot_detector_report': dict(report(), report_floor=floor)}}
    with pytest.raises(AnsibleFilterError, match=r'the report of web1 in bot_detector_report has no report_floor'):
        fleet_candidates(['web1'], hostvars)


def test_a_count_that_is_not_a_number_is_refused_naming_the_host():
    hostvars = {'web1': {'bot_detector_report': report({'203.0.113.7': '400'})}}
    with pytest.raises(AnsibleFilterError, match=r'the report of web1 holds a count that is not a whole number in 21/Nov/2026:03'):
        fleet_candidates(['web1'], hostvars)
    hostvars = {'web1': {'bot_detector_report': report({'203.0.113.7': 400}, floor=400)},
                'web2': {'bot_detector_report': report({}, floor=400), 'bot_detector_exact': report({'203.0.113.7': '12'})}}
    with pytest.raises(AnsibleFilterError, match=r'the answer of web2 holds a count that is not a whole number'):
        fleet_totals(['web1', 'web2'], hostvars, threshold=500)


def test_candidates_from_another_threshold_are_refused():
    candidates = fleet_candidates(['web1', 'web2', 'web3'], HOSTVARS, threshold=1000)
    assert fleet_totals(['web1', 'web2', 'web3'], HOSTVARS, candidates=candidates)['offenders'][0]['count'] == 1200
    with pytest.raises(AnsibleFilterError, match='candidates must be the result of fleet_candidates with the same threshold'):
        fleet_totals(['web1', 'web2', 'web3'], HOSTVARS, threshold=900, candidates=candidates)


def test_compact_reports_read_like_mappings_and_bad_lines_name_the_host():
    compact = report({'203.0.113.7': 400, '2001:db8:1:2::/64': 700}, {'192.0.2.9': 1000})
    compact['counts'] = {'previous': '700 2001:db8:1:2::/64\n400 203.0.113.7\n', 'current': '1000 192.0.2.9\n'}
    hostvars = {'web1': {'bot_detector_report': compact, 'bot_detector_exact': dict(compact)}}
    result = fleet_totals(['web1'], hostvars, threshold=700)
    assert [(o['address'], o['count']) for o in result['offenders']] == [('192.0.2.9', 1000), ('2001:db8:1:2::/64', 700)]
    for bad in ('400\n', 'x 203.0.113.7\n', '-4 203.0.113.7\n'):
        hostvars['web1']['bot_detector_report'] = dict(compact, counts={'previous': bad})
        with pytest.raises(AnsibleFilterError, match='fleet_candidates: the report of web1, window previous: not a line'):
            fleet_candidates(['web1'], hostvars)
