#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: bot_detector
short_description: Block clients that scrape job-listing pages, from the access log
version_added: 1.0.0
description:
  - Counts requests to job-listing pages per client address in the previous and the current hour of the
    access log, drops bots and a search engine, and appends each address with O(threshold) or more
    requests to the blocklist, unless it is already listed or allow-listed. Each addition is logged to
    the activity log.
  - With its defaults it follows the reference C(bot-detector.sh) exactly, quirks included; see the
    collection README for the quirks (for example, the case-insensitive C(bot) filter drops every
    C(/stellenangebot/) request, and list matching is a substring search).
  - Safety additions that change nothing for valid input are always on. Only a syntactically valid IPv4 or
    IPv6 address is ever appended; any other first field of a log line is reported in RV(skipped_invalid).
    A missing newline at the end of the blocklist is added before appending. Appends run under an
    exclusive lock (a lock file of the run's own, keyed by the blocklist, that no other user can open),
    each as one fsync'ed write, so overlapping runs never append the same address twice; a blocklist line
    and its activity line are appended both or neither (see the collection README, Safety additions).
  - The blocklist, the exclusion list and the activity log are only ever appended to, never rewritten.
author:
  - Bot Detector maintainers (@jobboard)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Reports what would be blocked and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: Shows the lines that are, or would be, appended to the blocklist.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
options:
  log:
    description:
      - The access log to read. Several logs (one per virtual host) may be given; their counts are summed
        per address.
      - Each must be a readable regular file.
      - Required unless O(mode=apply).
    type: list
    elements: path
  mode:
    description:
      - V(detect) is the detector's run, as the reference script's.
      - V(report) counts and reads or writes no list; C(changed) is always false. Without O(candidates) (the
        fleet's phase 1) it returns RV(counts), every address at or over O(report_floor) per window, and
        RV(local_blocks), this host's own additions, from its activity log. With O(candidates) (phase 2) it
        returns the exact counts of the addresses asked. The fleet playbook C(jobboard.bot_detector.fleet) sums
        these reports across the hosts.
      - V(apply) reads no log; it appends O(addresses), decisions taken elsewhere (for example by the fleet
        playbook), with the same checks as a run (already listed, allow-listed, only addresses) and an
        activity log line noted with each decision's C(reason), C(RPH=3000 (fleet)).
    type: str
    choices: [detect, report, apply]
    default: detect
  report_floor:
    description:
      - Return RV(counts), every address with this many requests or more per window. With O(mode=report),
        defaults to O(threshold).
      - For exact fleet counts over N hosts it must be at most the fleet threshold over N, rounded up, as the fleet playbook
        sets it. An address with the fleet threshold over the hosts then has at least the floor on one of them.
      - A higher floor (the playbook's C(bot_detector_report_floor)) sends fewer addresses but loses exactness.
        An address under the floor on every host is never counted, though its total can reach N times
        (floor - 1).
      - Not used with O(candidates).
    type: int
  candidates:
    description:
      - With O(mode=report), the fleet's phase 2. Per window, named by its hour stamp (as the windows of
        RV(windows), C(21/Nov/2026:03)) or by its name (C(previous), C(current)), the addresses (keys, as
        RV(counts) reports them, networks with grouping) whose exact counts to return in RV(counts), 0
        included. O(report_floor) is not used, and RV(local_blocks) is not returned.
      - Pass phase 1's RV(now) as O(now), so that both phases count the same hours.
    type: dict
  compact:
    description:
      - With O(mode=report), return each window's RV(counts) as one text, a line C(<count> <address>) per
        address (as C(uniq -c) prints records), instead of a mapping. Ansible carries one text per window far
        more cheaply than thousands of values; the fleet playbook uses it and the fleet filters read both forms.
    type: bool
    default: false
  addresses:
    description: With O(mode=apply), the decisions to apply.
    type: list
    elements: dict
    default: []
    suboptions:
      address:
        description: The address (or, with precise rules, network) to block.
        type: str
        required: true
      count:
        description: The requests that decided it, for the activity log.
        type: int
        default: 0
      reason:
        description: Noted in the activity log line, C(RPH=<count> (<reason>)).
        type: str
        default: fleet
      window:
        description: The window it was counted in.
        type: str
      source:
        description: The host whose own run decided it (sync decisions); informational.
        type: str
  config:
    description:
      - The host config file (INI, section C([bot_detector]), keys are the settings' names), which the role
        C(jobboard.bot_detector.bot_detector) writes. Settings not given as options are taken from it, then from
        the defaults, so an ad-hoc run applies the settings deployed on the host.
      - A missing file at the default path is fine; a path given explicitly must exist. A bad value in it fails
        the task with a message naming the file, the key and the value.
    type: path
    default: /etc/bot-detector/bot-detector.conf
  now:
    description:
      - Evaluate as if the run started at this local time, C(YYYY-MM-DD HH:MM:SS), or at C(@SECONDS) since the
        epoch (as RV(now) returns it). For replays, tests and the fleet's phase 2.
      - Defaults to the current time.
    type: str
extends_documentation_fragment:
  - jobboard.bot_detector.settings
notes:
  - Runs on the managed host and needs Python 3.8 or newer there, nothing else.
  - The run holds an exclusive flock on its own lock file for O(blocklist) while it reads the lists and appends
    (as root in C(/run/bot-detector/), mode 0700), waiting at most O(lock_timeout) seconds for another run.
  - A rotated file that cannot be read whole (O(rotated)) is left out with a warning; the run goes on.
'''

EXAMPLES = r'''
- name: Block scrapers found in the nginx access log
  jobboard.bot_detector.bot_detector:
    log: /var/log/nginx/access.log
  register: detection

- name: Show what was blocked
  ansible.builtin.debug:
    msg: "{{ detection.blocked | map(attribute='address') | list }}"

- name: Report what would be blocked, with a lower threshold, without writing anything
  jobboard.bot_detector.bot_detector:
    log:
      - /var/log/nginx/jobs.example.com.access.log
      - /var/log/nginx/stellen.example.com.access.log
    threshold: 500
  check_mode: true
  diff: true

- name: Replay a saved log as of a given time, into scratch files
  jobboard.bot_detector.bot_detector:
    log: /srv/incident/access.log
    now: '2026-11-21 04:10:00'
    blocklist: /srv/incident/blocklist.txt
    activity_log: /srv/incident/activity.log
    server_ip: [10.0.0.5]
'''

RETURN = r'''
blocked:
  description: The addresses appended to the blocklist (in check mode, those that would be), in order.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The client address.
      type: str
      sample: 203.0.113.7
    count:
      description: Its requests in the window.
      type: int
      sample: 1450
    window:
      description: The window it was found in, C(previous) or C(current) hour.
      type: str
      sample: previous
already_blocked:
  description: Addresses at or over the threshold that the blocklist already holds (substring search); same keys as RV(blocked).
  returned: always
  type: list
  elements: dict
allow_listed:
  description: Addresses at or over the threshold found in the exclusion list; same keys as RV(blocked).
  returned: always
  type: list
  elements: dict
skipped_invalid:
  description: First fields at or over the threshold that are not an IPv4 or IPv6 address, never appended; same keys as RV(blocked).
  returned: always
  type: list
  elements: dict
windows:
  description:
    - Per window, its name, its hour stamp and the records examined (the top O(top) after the server address drop).
    - With O(mode=report), C(records) is empty.
  returned: always
  type: list
  elements: dict
  sample:
    - name: previous
      hour_stamp: 21/Nov/2026:03
      records: [{count: 1450, address: 203.0.113.7}, {count: 12, address: 198.51.100.4}]
    - name: current
      hour_stamp: 21/Nov/2026:04
      records: []
messages:
  description: The console lines of the reference script, in order.
  returned: always
  type: list
  elements: str
  sample:
    - Checking the previous hour...
    - 'Blocking IP address: 203.0.113.7 (1450 requests)'
    - Checking the current hour...
    - IP address 203.0.113.7 is already blocked.
    - 'Execution time: 0 seconds'
scans:
  description: >-
    How each file was read, C(seek) (from C(start)), C(full), C(full-gzip) or C(incremental) (with
    O(state_dir), from where the previous run left it, C(start)), and how many bytes.
  returned: always
  type: list
  elements: dict
  sample: [{path: /var/log/nginx/access.log, mode: seek, start: 704643072, bytes_read: 52428800}]
counts:
  description:
    - With O(report_floor) or O(mode=report), per window name, every address with that many requests or more.
    - With O(candidates), per window name, each address asked for that window with its exact count, 0 included.
    - With O(compact), each window's counts are one text, a line C(<count> <address>) each.
  returned: when O(report_floor) is set or O(mode=report)
  type: dict
  sample: {previous: {203.0.113.7: 400, 198.51.100.4: 73}, current: {}}
local_blocks:
  description: With O(mode=report) without O(candidates), the additions this host's own runs made, from its activity log, once each.
  returned: when O(mode=report) without O(candidates)
  type: list
  elements: dict
  sample: [{address: 203.0.113.7, count: 1450}]
report_floor:
  description: With O(mode=report) without O(candidates), the floor applied to RV(counts).
  returned: when O(mode=report) without O(candidates)
  type: int
  sample: 42
now:
  description: With O(mode=report), the instant evaluated, in whole seconds since the epoch; C(@) and it make phase 2's O(now).
  returned: when O(mode=report)
  type: int
  sample: 1795234423
rules:
  description: The rules the run applied, C(spec) or C(precise).
  returned: always
  type: str
  sample: spec
verifications:
  description: With O(rules=precise), each crawler claim checked, in order, and whether the address verified.
  returned: always
  type: list
  elements: dict
  sample: [{address: 66.249.66.1, crawler: google, verified: true}]
execution_time:
  description: The run's duration in whole seconds.
  returned: always
  type: int
  sample: 0
ansible_facts:
  description: The same summary under C(bot_detector), for later tasks and fact caching.
  returned: always
  type: dict
  contains:
    bot_detector:
      description: RV(blocked), RV(already_blocked), RV(allow_listed), RV(skipped_invalid) and RV(windows).
      type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.clock import parse_now
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.run import apply, compact_counts, detect, report
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.settings import (
    DEFAULT_CONFIG, SETTINGS, resolve,
)

# The module's type for each kind of setting in the table.
_MODULE_TYPES = {'path': 'path', 'str': 'str', 'int': 'int', 'float': 'float', 'bool': 'bool', 'list': 'list', 'dict': 'dict'}


def argument_spec():
    """The options of the settings table (no defaults here: an option not given comes from the
    host config file, then the table's default), and the module's own."""
    spec = {}
    for setting in SETTINGS:
        option = {'type': _MODULE_TYPES[setting.kind]}
        if setting.kind == 'list':
            option['elements'] = 'str'
        if setting.choices:
            option['choices'] = list(setting.choices)
        if setting.aliases:
            option['aliases'] = list(setting.aliases)
        spec[setting.name] = option
    spec.update(
        log=dict(type='list', elements='path'),
        config=dict(type='path', default=DEFAULT_CONFIG),
        mode=dict(type='str', default='detect', choices=['detect', 'report', 'apply']),
        report_floor=dict(type='int'),
        candidates=dict(type='dict'),
        compact=dict(type='bool', default=False),
        addresses=dict(type='list', elements='dict', default=[], options=dict(
            address=dict(type='str', required=True),
            count=dict(type='int', default=0),
            reason=dict(type='str', default='fleet'),
            window=dict(type='str'),
            source=dict(type='str'),
        )),
        now=dict(type='str'),
    )
    return spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[('mode', 'detect', ['log']), ('mode', 'report', ['log'])],
        supports_check_mode=True,
    )
    p = module.params
    mode = p['mode']
    try:
        if p['report_floor'] is not None and p['report_floor'] < 1:
            raise BotDetectorError('report_floor: must be a whole number of at least 1, got %r' % p['report_floor'], 2)
        for option in ('candidates', 'compact'):
            if p[option] not in (None, False) and mode != 'report':
                raise BotDetectorError('%s: only with mode=report' % option, 2)
        explicit = dict((setting.name, p[setting.name]) for setting in SETTINGS)
        # The default config path may be missing; one named explicitly must exist.
        settings = resolve(explicit, config_path=p['config'], config_required=p['config'] != DEFAULT_CONFIG,
                           surface='module')
        now = parse_now(p['now']) if p['now'] is not None else None
        if mode == 'apply':
            result = apply(settings, p['addresses'], check_mode=module.check_mode)
        elif mode == 'report':
            result = report(settings, p['log'], floor=p['report_floor'], candidates=p['candidates'], now=now)
        else:
            result = detect(settings, p['log'], now=now, check_mode=module.check_mode, report_floor=p['report_floor'])
    except BotDetectorError as exc:
        module.fail_json(msg=exc.message)

    output = result.as_dict()
    output.pop('check_mode')
    for warning in output.pop('warnings'):
        module.warn(warning)
    if p['compact']:
        output['counts'] = dict((window, compact_counts(counts)) for window, counts in output['counts'].items())
    for key in ('counts', 'local_blocks', 'report_floor', 'now'):
        if output[key] is None:
            del output[key]
    summary = dict((key, output[key]) for key in ('blocked', 'already_blocked', 'allow_listed', 'skipped_invalid', 'windows'))
    output['ansible_facts'] = {'bot_detector': summary}
    if module._diff and result.appended:
        output['diff'] = {'prepared': result.blocklist_diff(settings.blocklist)}
    module.exit_json(**output)


if __name__ == '__main__':
    main()
