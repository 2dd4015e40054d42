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
    contract guide's R(Quirks, ansible_collections.jobboard.bot_detector.docsite.guide_contract.quirks)
    (for example, the case-insensitive C(bot) filter drops every C(/stellenangebot/) request, and list
    matching is a substring search).
  - Safety additions that change nothing for valid input are always on. Only a syntactically valid IPv4 or
    IPv6 address is ever appended; any other first field of a log line is reported in RV(skipped_invalid).
    A missing newline at the end of the blocklist is added before appending. Appends run under an
    exclusive lock (a lock file of the run's own, keyed by the blocklist, that no other user can open),
    each as one fsync'ed write, so overlapping runs never append the same address twice; a blocklist line
    and its activity line are appended both or neither (see the contract guide's
    R(Safety additions, ansible_collections.jobboard.bot_detector.docsite.guide_contract.safety)).
  - The blocklist, the exclusion list and the activity log are only ever appended to, except that O(mode=unblock)
    and ban expiry (O(ban_time)) remove blocklist lines by an atomic replace that keeps every other line byte for
    byte and in order, and the file's owner and mode.
  - When the part of a log read holds lines but none carries an access-log timestamp C([dd/Mon/yyyy:HH:MM:SS +zzzz])
    (a log in another format, such as ISO 8601 times or JSON), the task returns a warning naming the log and the
    format expected.
author:
  - Bot Detector maintainers (@jobboard)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Reports what would be blocked, expired or unblocked, and writes nothing (no metrics either).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: Shows the lines that are, or would be, appended to and removed from the blocklist.
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
      - Required with O(mode=detect) and O(mode=report); optional with O(mode=status); not used by O(mode=apply)
        and O(mode=unblock).
    type: list
    elements: path
  mode:
    description:
      - V(detect) is the detector's run, as the reference script's. With O(ban_time), the entries whose ban is
        over are removed first (RV(expired)).
      - V(report) is deprecated and will be removed in 3.0.0; use M(jobboard.bot_detector.bot_detector_info) with
        O(jobboard.bot_detector.bot_detector_info#module:query=report), which returns the same.
        It counts and reads or writes no list; C(changed) is always false. Without O(candidates) (the
        fleet's phase 1) it returns RV(counts), every address at or over O(report_floor) per window, and
        RV(local_blocks), this host's own additions, from its activity log, less those removed since or no
        longer in its blocklist. With O(candidates) (phase 2) it returns the exact counts of the addresses asked.
        The fleet playbook C(jobboard.bot_detector.fleet) sums these reports across the hosts.
      - V(apply) reads no log; it appends O(addresses), decisions taken elsewhere (for example by the fleet
        playbook), with the same checks as a run (already listed, allow-listed, only addresses) and an
        activity log line noted with each decision's C(reason), C(RPH=3000 (fleet)).
      - V(unblock) reads no log; it removes the blocklist lines equal to one of O(addresses) (blanks around a line
        ignored; an address or network written another way, C(2001:db8:0::bad) for C(2001:db8::BAD), counts as
        equal, but a network with host bits set, C(203.0.113.0/22), is that address and prefix only, with a warning), under the
        run's lock, keeping every other line byte for byte and in order and the file's owner
        and mode; the file is replaced atomically. Each address removed is one activity log line,
        C(<date> | IP addess <address> removed from the block list (unblock)). An address not listed is
        reported in RV(not_listed) and changes nothing.
      - V(status) is deprecated and will be removed in 3.0.0; use M(jobboard.bot_detector.bot_detector_info)
        (O(jobboard.bot_detector.bot_detector_info#module:query=status)), which returns the same.
        It reads, never writes; it returns RV(entries), each blocklist entry with when and why it was
        added and when it expires, and with O(log) also RV(windows), the top addresses of the current windows
        against the threshold.
      - V(enforce) reads no log; it loads the blocklist into the enforcement point of O(enforcement) (C(nftables)
        or C(nginx)) even when it looks in sync already, as the command's C(--enforce-now) does. C(changed) is
        true when the enforcement point was loaded anew. In check mode it does nothing. Added in 2.0.0.
      - With O(enforcement) set, every V(detect), V(apply) and V(unblock) run that is not in check mode also makes the
        enforcement point equal to the blocklist after its changes. When that fails, the task fails with the
        cause in C(msg) and RV(enforcement); the blocklist keeps the run's changes (a failed enforcement never
        undoes an append or a removal), and the next run or V(enforce) tries again.
    type: str
    choices: [detect, report, apply, unblock, status, enforce]
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
    version_added: 2.0.0
    description:
      - With O(mode=report), the fleet's phase 2. Per window, named by its hour stamp (as the windows of
        RV(windows), C(21/Nov/2026:03)) or by its name (C(previous), C(current)), the addresses (keys, as
        RV(counts) reports them, networks with grouping) whose exact counts to return in RV(counts), 0
        included. O(report_floor) is not used, and RV(local_blocks) is not returned.
      - Pass phase 1's RV(now) as O(now), so that both phases count the same hours.
    type: dict
  compact:
    version_added: 2.0.0
    description:
      - With O(mode=report), return each window's RV(counts) as one text, a line C(<count> <address>) per
        address (as C(uniq -c) prints records), instead of a mapping. Ansible carries one text per window far
        more cheaply than thousands of values; the fleet playbook uses it and the fleet filters read both forms.
    type: bool
    default: false
  addresses:
    description:
      - With O(mode=apply), the decisions to apply; with O(mode=unblock), the addresses to remove.
      - Each item is an address (or, with precise rules, a network) as text, or a mapping with the keys
        C(address) (required, text), C(count) (the requests that decided it, for the activity log; default
        V(0)), C(reason) (noted in the activity log line, C(RPH=<count> (<reason>)); default V(fleet)),
        C(window) (the window it was counted in) and C(source) (the host whose own run decided it, for sync
        decisions; informational) and C(answer) (V(block), the default, or V(challenge), a network of a campaign the
        fleet summed, put on the challenge list like the campaign profile's own challenges, never on the blocklist,
        and not when it holds an address never blocked). O(mode=unblock) uses only C(address), so the fleet's decisions
        can be given back to undo them.
    type: list
    elements: raw
    default: []
  config:
    version_added: 2.0.0
    description:
      - The host config file (INI, section C([bot_detector]), keys are the settings' names or their aliases), which the role
        C(jobboard.bot_detector.bot_detector) writes. Settings not given as options are taken from it, then from
        the defaults, so an ad-hoc run applies the settings deployed on the host.
      - A missing file at the default path is fine; a path given explicitly must exist. A bad value in it fails
        the task with a message naming the file, the key and the value.
      - Not read when O(settings) is given.
    type: path
    default: /etc/bot-detector/bot-detector.conf
  settings:
    description:
      - The settings by name (the config file's keys and their aliases), in place of the config file, which is
        then not read; options given explicitly still apply over them, and a setting in neither has its default.
      - The fleet playbook passes each web host's own role variables here, through the filter
        P(jobboard.bot_detector.role_settings#filter), so that every phase of a fleet run takes the lists and
        rules from the inventory, whatever config file the host has.
    type: dict
    version_added: 2.0.0
  now:
    description:
      - Evaluate as if the run started at this local time, C(YYYY-MM-DD HH:MM:SS), or at C(@SECONDS) since the
        epoch (as RV(now) returns it). For replays, tests and the fleet's phase 2.
      - Defaults to the current time.
    type: str
extends_documentation_fragment:
  - jobboard.bot_detector.settings
seealso:
  - module: jobboard.bot_detector.bot_detector_info
notes:
  - Runs on the managed host and needs Python 3.8 or newer there, nothing else.
  - O(mode=report) and O(mode=status) only read; they moved into M(jobboard.bot_detector.bot_detector_info)
    and are deprecated (removed in 3.0.0).
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

- name: Take a false positive off the blocklist
  jobboard.bot_detector.bot_detector:
    mode: unblock
    addresses: [203.0.113.7]
  check_mode: false
  diff: true

# What is blocked, why and until when, and who is close to the threshold: the module
# jobboard.bot_detector.bot_detector_info (mode=status and mode=report are deprecated).

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
    - With O(mode=status), each record also has C(percent) (of the threshold) and C(verdict) (C(block),
      C(already_blocked), C(allow_listed), C(invalid) or C(below_threshold)), and each window its C(threshold).
  returned: with O(mode=detect) and O(mode=report), and given O(log), O(mode=status)
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
  description:
    - How each file was read, C(seek) (from C(start)), C(full), C(full-gzip) or C(incremental) (with
      O(state_dir), from where the previous run left it, C(start)), and how many bytes.
    - C(lines), the lines read, is counted only with O(metrics_file) (null otherwise).
    - For a log in another format than C(combined) (O(log_format)), also C(format) and C(unparsed_lines), its lines
      that did not parse (each run warns once when there are any).
  returned: always
  type: list
  elements: dict
  sample: [{path: /var/log/nginx/access.log, mode: seek, start: 704643072, bytes_read: 52428800, lines: null}]
formats:
  description: With O(log_format=auto), the format detected for each log.
  returned: when a log's format was detected (O(log_format=auto))
  type: dict
  sample: {/var/log/nginx/jobs.json: nginx_json}
  version_added: 2.0.0
challenged:
  description:
    - With O(campaigns), the campaign profile's decisions answered with a challenge (the answer_* options say which
      kinds), in order, once each; they go to O(challenge_list) when it is set, never to the blocklist.
  returned: with O(campaigns)
  type: list
  elements: dict
  contains:
    address:
      description: The address or CIDR network challenged.
      type: str
    count:
      description: Its job-page requests in the window.
      type: int
    window:
      description: The window, V(previous) or V(current).
      type: str
    reason:
      description: Why, for instance V(network 203.0.113.0/24, 254 addresses).
      type: str
  sample: [{address: 203.0.113.0/24, count: 6000, window: current, reason: "network 203.0.113.0/24, 254 addresses"}]
  version_added: 2.0.0
throttled:
  description:
    - With O(campaigns), the campaign profile's decisions answered with a throttle (O(answer_network=throttle) for
      instance), as RV(challenged) is; they go to O(throttle_list), never to the blocklist.
  returned: with O(campaigns)
  type: list
  elements: dict
  sample: [{address: 203.0.113.0/24, count: 6000, window: current, reason: "network 203.0.113.0/24, 254 addresses"}]
  version_added: 2.0.0
counts:
  description:
    - With O(report_floor) or O(mode=report), per window name, every address with that many requests or more.
    - With O(candidates), per window name, each address asked for that window with its exact count, 0 included.
    - With O(compact), each window's counts are one text, a line C(<count> <address>) each.
  returned: when O(report_floor) is set or O(mode=report)
  type: dict
  sample: {previous: {203.0.113.7: 400, 198.51.100.4: 73}, current: {}}
local_blocks:
  description: With O(mode=report) without O(candidates), the additions this host's own runs made, from its activity log,
    once each, that are still in its blocklist.
  returned: when O(mode=report) without O(candidates)
  type: list
  elements: dict
  sample: [{address: 203.0.113.7, count: 1450}]
report_floor:
  version_added: 2.0.0
  description: With O(mode=report) without O(candidates), the floor applied to RV(counts).
  returned: when O(mode=report) without O(candidates)
  type: int
  sample: 42
now:
  version_added: 2.0.0
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
  description:
    - With O(rules=precise), each crawler claim checked, in order, and whether the address verified.
    - V(verified) is null for a claim left unverified when the run's O(dns_budget) or O(dns_lookups) ran out
      (neither exempt nor counted in that run).
  returned: always
  type: list
  elements: dict
  sample: [{address: 66.249.66.1, crawler: google, verified: true}]
expired:
  version_added: 2.0.0
  description: With O(ban_time), the entries removed (in check mode, to remove) because their ban is over.
  returned: when O(mode=detect)
  type: list
  elements: dict
  sample: [{address: 203.0.113.7, added: 'Sat Nov 21 04:13:43 UTC 2026', ban: 1d, ban_seconds: 86400, expires: 1795320823}]
unblocked:
  version_added: 2.0.0
  description: With O(mode=unblock), the addresses removed (in check mode, to remove) and how many lines each was.
  returned: when O(mode=unblock)
  type: list
  elements: dict
  sample: [{address: 203.0.113.7, lines: 1}]
not_listed:
  version_added: 2.0.0
  description: With O(mode=unblock), the addresses that no blocklist line is.
  returned: when O(mode=unblock)
  type: list
  elements: str
  sample: [198.51.100.9]
blocklist:
  version_added: 2.0.0
  description: With O(mode=status), the blocklist's path.
  returned: when O(mode=status)
  type: str
  sample: /etc/ipblocklist.txt
entries:
  version_added: 2.0.0
  description:
    - With O(mode=status), each blocklist entry, in order, once each, with its latest addition in the activity log
      and its rotated files.
    - C(source) is C(own) (this host's run), C(fleet), C(sync) or C(hand) (no addition line, never expires);
      C(added) and C(count) are the addition's date and requests; C(state) is C(at) (expires at C(expires)),
      C(due) (the next run removes it), C(never), C(no_ban_time) or C(unknown_date).
  returned: when O(mode=status)
  type: list
  elements: dict
  sample:
    - {address: 203.0.113.7, source: own, added: 'Sat Nov 21 04:13:43 UTC 2026', added_epoch: 1795234423, count: 1450,
       ban: 1d, ban_seconds: 86400, expires: 1795320823, expires_date: 'Sun Nov 22 04:13:43 UTC 2026', state: at}
enforcement:
  description:
    - With O(enforcement) set, the sync of the enforcement point after the run (V(detect), V(apply), V(unblock),
      V(enforce)).
  returned: when O(enforcement) is not V(none) and the run synced
  type: dict
  version_added: 2.0.0
  contains:
    backend:
      description: The enforcement backend, V(nftables) or V(nginx).
      type: str
    in_sync:
      description: Whether the enforcement point equals the blocklist after the sync.
      type: bool
    entries:
      description: The entries loaded (addresses and networks, merged where they overlap); null when the sync failed.
      type: int
    skipped:
      description: The blocklist lines that are not an address or network, left out (one warning names them).
      type: list
      elements: str
    changed:
      description: Whether the enforcement point was loaded anew (false when it already held the blocklist).
      type: bool
    error:
      description: Why the sync failed, or null.
      type: str
    too_wide:
      description:
        - Allow-list lines and trusted proxies wider than O(enforcement_min_prefix_v4)/O(enforcement_min_prefix_v6),
          which spare no one (one warning names them); null when the sync failed before reading them.
      type: int
      version_added: 2.0.0
  sample: {backend: nftables, in_sync: true, entries: 1204, skipped: [], changed: true, error: null, too_wide: 0}
fleet:
  description:
    - With O(fleet_store) set, what the run did with the fleet store (V(detect) outside check mode).
  returned: when O(fleet_store) is set and the run used it
  type: dict
  version_added: 2.0.0
  contains:
    store:
      description: The store's URL, its password shown as C(***).
      type: str
    host:
      description: This host's name in the store (O(fleet_host)).
      type: str
    up:
      description: Whether the store took the run's counts and answered.
      type: bool
    decisions_received:
      description: The addresses whose fleet-wide sum crossed the threshold, as the store listed them.
      type: int
  sample: {store: 'redis://bd:***@10.0.0.9:6379/0', host: web1, up: true, decisions_received: 2}
execution_time:
  description: The run's duration in whole seconds.
  returned: always
  type: int
  sample: 0
'''

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.after_change import enforce_now
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.messages import ENFORCEMENT_FAILED, MODE_DEPRECATED
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.result import Result
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.run import apply, detect
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.unblock import unblock
from ansible_collections.jobboard.bot_detector.plugins.module_utils.module_queries import (
    QUERIES, argument_spec as common_spec, check_report_options, module_settings, query_output, run_query, task_now)

MODES = ['detect', 'report', 'apply', 'unblock', 'status', 'enforce']
# An item of ``addresses`` given as a mapping.
ADDRESS_SPEC = dict(
    address=dict(type='str', required=True),
    count=dict(type='int', default=0),
    reason=dict(type='str', default='fleet'),
    window=dict(type='str'),
    source=dict(type='str'),
    answer=dict(type='str', choices=['block', 'challenge'], default='block'),
)


def argument_spec():
    """The options every mode takes (module_queries.argument_spec), and the modes' own."""
    spec = common_spec()
    spec.update(
        mode=dict(type='str', default='detect', choices=MODES),
        addresses=dict(type='list', elements='raw', default=[]),
    )
    return spec


def address_items(items):
    """``addresses``: each item an address (text) or a mapping checked against ADDRESS_SPEC."""
    decisions = []
    validator = ArgumentSpecValidator(ADDRESS_SPEC)
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = {'address': item}
        if not isinstance(item, dict):
            raise BotDetectorError('addresses: item %d must be an address or a mapping with an address, got %r'
                                   % (index + 1, item), 2)
        checked = validator.validate(item)
        if checked.unsupported_parameters:
            # Names, or (older ansible-core) tuples of a name's path.
            unknown = sorted('.'.join(name) if isinstance(name, tuple) else name for name in checked.unsupported_parameters)
            raise BotDetectorError('addresses: item %d: unknown key %s (known: %s)' % (
                index + 1, ', '.join(unknown), ', '.join(sorted(ADDRESS_SPEC))), 2)
        if checked.error_messages:
            raise BotDetectorError('addresses: item %d: %s' % (index + 1, '; '.join(checked.error_messages)), 2)
        decisions.append(checked.validated_parameters)
    return decisions


def run(module, mode):
    """The core's entry point for ``mode``, and its result."""
    p = module.params
    check_report_options(p, mode, 'mode')
    settings = module_settings(p)
    now = task_now(p)
    if mode in QUERIES:
        return settings, run_query(p, mode, settings, now)
    if mode == 'apply':
        return settings, apply(settings, address_items(p['addresses']), check_mode=module.check_mode)
    if mode == 'unblock':
        addresses = [item['address'] for item in address_items(p['addresses'])]
        if not addresses:
            raise BotDetectorError('addresses: mode unblock needs at least one address', 2)
        return settings, unblock(settings, addresses, check_mode=module.check_mode)
    if mode == 'enforce':
        if settings.enforcement == 'none':
            raise BotDetectorError('mode enforce: setting enforcement is none (set it to nftables or nginx)', 2)
        if module.check_mode:
            return settings, Result(check_mode=True)
        return settings, enforce_now(settings)
    return settings, detect(settings, p['log'], now=now, check_mode=module.check_mode, report_floor=p['report_floor'])


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[('mode', 'detect', ['log']), ('mode', 'report', ['log'])],
        supports_check_mode=True,
    )
    mode = module.params['mode']
    if mode in QUERIES:
        module.deprecate(MODE_DEPRECATED % (mode, mode), version='3.0.0', collection_name='jobboard.bot_detector')
    try:
        settings, result = run(module, mode)
    except BotDetectorError as exc:
        module.fail_json(msg=exc.message)

    if mode in QUERIES:
        output, warnings = query_output(result, mode, module.params['compact'])
        for warning in warnings:
            module.warn(warning)
        module.exit_json(**output)
    output = result.as_dict()
    for warning in output.pop('warnings'):
        module.warn(warning)
    output.pop('check_mode')
    enforcement = output.get('enforcement')
    if mode == 'enforce':
        output = {'changed': bool(enforcement and enforcement['changed']), 'messages': output['messages']}
        if enforcement is not None:
            output['enforcement'] = enforcement
    elif mode == 'unblock':
        output = dict((key, output[key]) for key in ('changed', 'unblocked', 'not_listed', 'messages', 'enforcement')
                      if key in output)
    else:
        for key in ('counts', 'local_blocks', 'report_floor', 'now', 'unblocked', 'not_listed'):
            if output[key] is None:
                del output[key]
    if module._diff and result.changed:
        output['diff'] = {'prepared': result.blocklist_diff(settings.blocklist)}
    if enforcement is not None and not enforcement['in_sync']:
        module.fail_json(msg=ENFORCEMENT_FAILED % (enforcement['backend'], enforcement['error']), **output)
    module.exit_json(**output)


if __name__ == '__main__':
    main()
