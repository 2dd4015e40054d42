#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: bot_detector_info
short_description: What the bot detector sees on a host - the blocklist's entries, the windows' counts
version_added: 2.0.0
description:
  - Reads the access logs, the blocklist, the exclusion list and the activity log of a host, as the module
    M(jobboard.bot_detector.bot_detector) would, and returns what it finds. It never writes anything (no list,
    no state file, no metrics file; counts past O(count_budget) spill to temporary files removed before it returns),
    so C(changed) is always false, and it runs the same in check mode.
  - O(query=status) returns each blocklist entry with when and why it was added and when it expires, the
    enforcement point's state, the host's followers, and, given O(log), the top addresses of the current
    windows against the threshold, with the verdict a run would give each (as the host command's C(--status)).
  - O(query=report) counts the windows of O(log) and returns every address at or over O(report_floor), or the
    exact counts of O(candidates); the fleet playbook C(jobboard.bot_detector.fleet) sums these reports across
    the hosts.
  - These were M(jobboard.bot_detector.bot_detector)'s O(jobboard.bot_detector.bot_detector#module:mode=status) and
    O(jobboard.bot_detector.bot_detector#module:mode=report), deprecated in 2.0.0 and removed in 3.0.0; this module
    runs the same code and returns the same results.
author:
  - Bot Detector maintainers (@jobboard)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: It never changes anything; in check mode it returns the same as without.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: N/A
    details: It changes nothing.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
options:
  query:
    description:
      - V(status) reads the blocklist, the activity log (and its rotated files) and, given O(log), the logs'
        current windows; it returns RV(blocklist), RV(entries), with O(log) also RV(windows), with O(enforcement)
        also RV(enforcement), and any running followers in RV(followers).
      - V(report) reads O(log) (required) and the activity log. Without O(candidates) (the fleet's phase 1) it
        returns RV(counts), every address at or over O(report_floor) per window, and RV(local_blocks), this host's
        own additions, from its activity log, less those removed since or no longer in its blocklist. With
        O(candidates) (phase 2) it returns the exact counts of the addresses asked.
    type: str
    choices: [status, report]
    default: status
  log:
    description:
      - The access logs to read (one per virtual host, say); their counts are summed per address. Each must be a
        readable regular file.
      - Required with O(query=report); optional with O(query=status).
    type: list
    elements: path
  report_floor:
    description:
      - With O(query=report), return in RV(counts) every address with this many requests or more per window.
        Defaults to O(threshold).
      - For exact fleet counts over N hosts it must be at most the fleet threshold over N, rounded up, as the fleet
        playbook sets it. An address with the fleet threshold over the hosts then has at least the floor on one
        of them.
      - Not used with O(candidates).
    type: int
  candidates:
    description:
      - With O(query=report), the fleet's phase 2. Per window, named by its hour stamp (as the windows of
        RV(windows), C(21/Nov/2026:03)) or by its name (C(previous), C(current)), the addresses (keys, as
        RV(counts) reports them, networks with grouping) whose exact counts to return in RV(counts), 0
        included. O(report_floor) is not used, and RV(local_blocks) is not returned.
      - Pass phase 1's RV(now) as O(now), so that both phases count the same hours.
    type: dict
  compact:
    description:
      - With O(query=report), return each window's RV(counts) as one text, a line C(<count> <address>) per
        address (as C(uniq -c) prints records), instead of a mapping. Ansible carries one text per window far
        more cheaply than thousands of values; the fleet playbook uses it and the fleet filters read both forms.
    type: bool
    default: false
  config:
    description:
      - The host config file (INI, section C([bot_detector])), which the role C(jobboard.bot_detector.bot_detector)
        writes. Settings not given as options are taken from it, then from the defaults, so that the query sees
        what the host's runs see.
      - A missing file at the default path is fine; a path given explicitly must exist.
      - Not read when O(settings) is given.
    type: path
    default: /etc/bot-detector/bot-detector.conf
  settings:
    description:
      - The settings by name (the config file's keys and their aliases), in place of the config file, which is
        then not read; options given explicitly still apply over them. The fleet playbook passes each web host's
        role variables here, through the filter P(jobboard.bot_detector.role_settings#filter).
    type: dict
  now:
    description:
      - Evaluate the windows as if at this local time, C(YYYY-MM-DD HH:MM:SS), or at C(@SECONDS) since the
        epoch (as RV(now) returns it). Defaults to the current time. Ban expiry in RV(entries) is judged on the
        wall clock.
    type: str
extends_documentation_fragment:
  - jobboard.bot_detector.settings
notes:
  - Runs on the managed host and needs Python 3.8 or newer there, nothing else.
  - Reading the lists needs the rights a run has (the role's runs are root's); a blocklist or an exclusion list
    that cannot be read fails the task with the file named.
  - Settings that only a run uses (O(metrics_file), O(ban_time) aside, which RV(entries) uses) are accepted, so
    that the same settings serve both modules, and change nothing here.
seealso:
  - module: jobboard.bot_detector.bot_detector
  - ref: ansible_collections.jobboard.bot_detector.docsite.guide_fleet
    description: Fleet mode, which runs O(query=report) on every web host.
'''

EXAMPLES = r'''
- name: Show what is blocked, why and until when, and who is close to the threshold
  jobboard.bot_detector.bot_detector_info:
    log: /var/log/nginx/access.log
  register: bot_detector_status

- name: List the entries that the next run removes
  ansible.builtin.debug:
    msg: "{{ bot_detector_status.entries | selectattr('state', 'equalto', 'due') | map(attribute='address') | list }}"

- name: Count the windows of two logs, every address with 300 requests or more
  jobboard.bot_detector.bot_detector_info:
    query: report
    log:
      - /var/log/nginx/jobs.example.com.access.log
      - /var/log/nginx/stellen.example.com.access.log
    report_floor: 300
  register: bot_detector_report

- name: Count two addresses exactly, in the hours of the report above
  jobboard.bot_detector.bot_detector_info:
    query: report
    log: /var/log/nginx/jobs.example.com.access.log
    candidates:
      previous: [203.0.113.7, 198.51.100.4]
    now: "@{{ bot_detector_report.now }}"
'''

RETURN = r'''
blocklist:
  description: With O(query=status), the blocklist's path.
  returned: when O(query=status)
  type: str
  sample: /etc/ipblocklist.txt
entries:
  description:
    - With O(query=status), each blocklist entry, in order, once each, with its latest addition in the activity log
      and its rotated files.
    - C(source) is C(own) (this host's run), C(fleet), C(sync) or C(hand) (no addition line, never expires);
      C(added) and C(count) are the addition's date and requests; C(state) is C(at) (expires at C(expires)),
      C(due) (the next run removes it), C(never), C(no_ban_time) or C(unknown_date).
  returned: when O(query=status)
  type: list
  elements: dict
  sample:
    - {address: 203.0.113.7, source: own, added: 'Sat Nov 21 04:13:43 UTC 2026', added_epoch: 1795234423, count: 1450,
       ban: 1d, ban_seconds: 86400, expires: 1795320823, expires_date: 'Sun Nov 22 04:13:43 UTC 2026', state: at}
followers:
  description: With O(query=status), the followers (C(--follow)) of this blocklist that this user's lock directory lists.
  returned: when O(query=status) and a follower is listed
  type: list
  elements: dict
  sample: [{pid: 4242, logs: [/var/log/nginx/access.log], running: true, behind_seconds: 0, behind_bytes: 0}]
enforcement:
  description: With O(query=status) and O(enforcement) set, the enforcement point's state.
  returned: when O(query=status) and O(enforcement) is not V(none)
  type: dict
  contains:
    backend:
      description: The enforcement backend, V(nftables) or V(nginx).
      type: str
    in_sync:
      description: Whether the last load was of this very blocklist.
      type: bool
    entries:
      description: The entries loaded; null when nothing is loaded.
      type: int
    loaded_epoch:
      description: When the last load was recorded, in seconds since the epoch; null when nothing is loaded.
      type: int
  sample: {backend: nftables, in_sync: true, entries: 1204, loaded_epoch: 1795234423}
windows:
  description:
    - Per window, its name, its hour stamp and, with O(query=status), the records examined (the top O(top) after
      the server address drop), each with C(percent) (of the threshold) and C(verdict) (C(block),
      C(already_blocked), C(allow_listed), C(invalid) or C(below_threshold)), and the window's C(threshold).
    - With O(query=report), C(records) is empty.
  returned: with O(query=report), and given O(log), with O(query=status)
  type: list
  elements: dict
  sample:
    - name: previous
      hour_stamp: 21/Nov/2026:03
      threshold: 1000
      records: [{count: 1450, address: 203.0.113.7, percent: 145, verdict: block}]
    - name: current
      hour_stamp: 21/Nov/2026:04
      threshold: 1000
      records: []
counts:
  description:
    - With O(query=report), per window name, every address with O(report_floor) requests or more.
    - With O(candidates), per window name, each address asked for that window with its exact count, 0 included.
    - With O(compact), each window's counts are one text, a line C(<count> <address>) each.
  returned: when O(query=report)
  type: dict
  sample: {previous: {203.0.113.7: 400, 198.51.100.4: 73}, current: {}}
campaign_counts:
  description:
    - With O(query=report) without O(candidates) and the campaign profile, the campaign keys the fleet playbook sums.
    - C(limits), the host's thresholds (a network's requests and distinct addresses, an AS's), and C(windows), per hour
      stamp a text of lines C(<count> <name>), every one of them, a union needing every member; C(n NETWORK) and
      C(a ASN), the requests of addresses without browser behaviour; C(m n NETWORK HEX) and C(m a ASN HEX), 1, each
      such address (HEX, as a hexadecimal number) as a member.
  returned: when O(query=report) without O(candidates), with the campaign profile
  type: dict
  sample: {limits: 200 16 300 20, windows: {'21/Nov/2026:04': "100 n 203.0.113.0/24\n1 m n 203.0.113.0/24 cb007101\n"}}
local_blocks:
  description: With O(query=report) without O(candidates), the additions this host's own runs made, from its activity
    log, once each, that are still in its blocklist.
  returned: when O(query=report) without O(candidates)
  type: list
  elements: dict
  sample: [{address: 203.0.113.7, count: 1450}]
report_floor:
  description: With O(query=report) without O(candidates), the floor applied to RV(counts).
  returned: when O(query=report) without O(candidates)
  type: int
  sample: 42
now:
  description: With O(query=report), the instant evaluated, in whole seconds since the epoch; C(@) and it make phase 2's
    O(now).
  returned: when O(query=report)
  type: int
  sample: 1795234423
scans:
  description:
    - With O(query=report), how each file was read, C(seek) (from C(start)), C(full), C(full-gzip) or C(incremental),
      and how many bytes.
    - For a log in another format than C(combined) (O(log_format)), also C(format) and C(unparsed_lines).
  returned: when O(query=report)
  type: list
  elements: dict
  sample: [{path: /var/log/nginx/access.log, mode: seek, start: 704643072, bytes_read: 52428800, lines: null}]
formats:
  description: With O(log_format=auto) and O(query=report), the format detected for each log.
  returned: when a log's format was detected (O(log_format=auto)) by O(query=report)
  type: dict
  sample: {/var/log/nginx/jobs.json: nginx_json}
rules:
  description: With O(query=report), the rules the counts follow, C(spec) or C(precise).
  returned: when O(query=report)
  type: str
  sample: spec
verifications:
  description: With O(query=report) and O(rules=precise), each crawler claim checked, in order, and whether the address verified.
  returned: when O(query=report)
  type: list
  elements: dict
  sample: [{address: 66.249.66.1, crawler: google, verified: true}]
execution_time:
  description: With O(query=report), the query's duration in whole seconds.
  returned: when O(query=report)
  type: int
  sample: 0
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.module_queries import (
    argument_spec, check_report_options, module_settings, query_output, run_query, task_now)


def main():
    spec = argument_spec()
    spec['query'] = dict(type='str', default='status', choices=['status', 'report'])
    module = AnsibleModule(argument_spec=spec, required_if=[('query', 'report', ['log'])], supports_check_mode=True)
    query = module.params['query']
    try:
        check_report_options(module.params, query, 'query')
        settings = module_settings(module.params)
        result = run_query(module.params, query, settings, task_now(module.params))
    except BotDetectorError as exc:
        module.fail_json(msg=exc.message)
    output, warnings = query_output(result, query, module.params['compact'])
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**output)


if __name__ == '__main__':
    main()
