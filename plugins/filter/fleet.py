# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: fleet_totals
short_description: Sum the bot_detector reports of a fleet and decide what to block everywhere
version_added: 1.0.0
description:
  - Takes the web hosts' names and their registered C(jobboard.bot_detector.bot_detector) results from
    O(jobboard.bot_detector.bot_detector#module:mode=report) runs, sums each address's requests per window across the hosts, and returns the
    addresses at or over the fleet O(threshold) as decisions to apply on every host.
  - With O(sync), it also returns, as decisions, the addresses any host's own runs blocked (its
    C(local_blocks)), so that the other hosts block them too.
  - Its cost is proportional to the addresses reported, whatever the number of requests.
  - A host without a usable report (unreachable, failed, skipped) is listed in C(missing) and left out.
author:
  - Bot Detector maintainers (@jobboard)
positional: hosts, hostvars
options:
  _input:
    description: The hosts' names, for example C(groups['web']).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  result_var:
    description: The name of the variable each host registered its report in.
    type: str
    default: bot_detector_report
  threshold:
    description: Requests in one window, summed over the hosts, that block an address everywhere.
    type: int
    default: 1000
  sync:
    description: Also return each host's own blocks as decisions for the others.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Sum the reports and decide
  ansible.builtin.set_fact:
    bot_detector_fleet: "{{ groups['web'] | jobboard.bot_detector.fleet_totals(hostvars, threshold=1000, sync=true) }}"
'''

RETURN = r'''
_value:
  description: The fleet's totals and decisions.
  type: dict
  contains:
    threshold:
      description: The fleet threshold applied.
      type: int
    hosts:
      description: The hosts whose reports were summed.
      type: list
      elements: str
    missing:
      description: The hosts without a usable report.
      type: list
      elements: str
    totals:
      description: Per window, each reported address's requests summed over the hosts.
      type: dict
    offenders:
      description: Addresses at or over the threshold, C({address, count, window, reason=fleet}), highest first.
      type: list
      elements: dict
    sync:
      description: With O(sync), each host's own blocks, C({address, count, reason=sync, source}).
      type: list
      elements: dict
    decisions:
      description: RV(_value.offenders), then the O(sync) addresses not among them, for the module's O(jobboard.bot_detector.bot_detector#module:mode=apply).
      type: list
      elements: dict
'''

from ansible.errors import AnsibleFilterError


def fleet_totals(hosts, hostvars, result_var='bot_detector_report', threshold=1000, sync=False):
    if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
        raise AnsibleFilterError('fleet_totals: threshold must be a whole number of at least 1, got %r' % (threshold,))
    totals, reporting, missing, local = {}, [], [], []
    for host in hosts:
        report = hostvars.get(host, {}).get(result_var) if host in hostvars else None
        if not isinstance(report, dict) or report.get('failed') or report.get('skipped') or 'counts' not in report:
            missing.append(host)
            continue
        reporting.append(host)
        for window, counts in (report.get('counts') or {}).items():
            window_totals = totals.setdefault(window, {})
            for address, count in counts.items():
                window_totals[address] = window_totals.get(address, 0) + int(count)
        for block in report.get('local_blocks') or []:
            local.append(dict(block, source=host))
    best = {}
    for window, window_totals in totals.items():
        for address, count in window_totals.items():
            if count >= threshold and count > best.get(address, {}).get('count', -1):
                best[address] = {'address': address, 'count': count, 'window': window, 'reason': 'fleet'}
    offenders = sorted(best.values(), key=lambda d: (-d['count'], d['address']))
    synced, seen = [], set(best)
    if sync:
        for block in local:
            if block['address'] not in seen:
                seen.add(block['address'])
                synced.append({'address': block['address'], 'count': int(block.get('count') or 0), 'reason': 'sync',
                               'source': block['source']})
    return {'threshold': threshold, 'hosts': reporting, 'missing': missing, 'totals': totals,
            'offenders': offenders, 'sync': synced, 'decisions': offenders + synced}


class FilterModule(object):
    def filters(self):
        return {'fleet_totals': fleet_totals}
