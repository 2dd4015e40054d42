# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every line the detector prints or logs, declared once. The spec's texts are exact,
"addess" included."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

USAGE_LINES = (
    'Path to log file missing.',
    'Usage: bot-detector.sh <logfile>',
    '    bot-detector.sh /var/log/nginx/access.log',
)
NOT_READABLE = 'File not found or not readable: %s'
NOT_REGULAR = 'Not a regular file: %s'

HEADINGS = {'previous': 'Checking the previous hour...', 'current': 'Checking the current hour...'}
ALREADY_BLOCKED = 'IP address %s is already blocked.'
ALLOW_LISTED = 'IP address %s is allow-listed and will not be blocked.'
INVALID = 'Skipping %s (%d requests): not an IP address.'
EXECUTION_TIME = 'Execution time: %d seconds'

# Warnings (standard error, the module's warnings): the run goes on.
ROTATED_LEFT_OUT = '%s; the run goes on without this rotated file'
# A state past its budget (count_budget distinct keys in memory, state_budget bytes on
# disk) is not kept: the next run counts that log cold, with the same decisions.
# A state file that cannot be trusted: the log is read cold, as without one.
STATE_IGNORED = 'state file %s ignored: %s'
STATE_NOT_SAVED = ('state file %s not saved: %s; following on, each save tries again (a restart before one '
                   'succeeds reads the windows of the log again)')
STATE_OVER_BUDGET = ('state file %(path)s not kept: %(why)s; the next run reads the windows of this log again '
                     '(the decisions are the same)')
# Counts past count_budget that cannot spill to files (reading/budget.py): in memory, then the smallest dropped.
SPILL_IN_MEMORY = ('counts past count_budget (%(budget)d distinct addresses) kept in memory, none spilled to disk '
                   '(%(problem)s): up to %(limit)d addresses are held, then the smallest counts are dropped')
SPILL_DROPPED = ('memory for counts full (%(limit)d distinct addresses): the counts of %(dropped)d addresses, each at '
                 'most %(floor)d, dropped; one of them may now reach the threshold later than its requests did, or not')

# The activity log line of an addition; a note marks a decision not taken by this host's
# own count: 'RPH=3000 (fleet)'.
ACTIVITY_ADDED = '%(date)s | IP addess %(address)s added to the block list, RPH=%(count)d%(note)s'
# A campaign's block says why, in words ('RPH=120 (trap, 1 hits, no browser behaviour: 0 assets, 0 referers)').
ACTIVITY_ADDED_PATTERN = br' \| IP addess (\S+) added to the block list, RPH=(\d+)(?: \((\w+)\)| \([^()]* [^()]*\))?$'


def blocking(address, count, check_mode=False, note=None):
    """'Blocking IP address: <ip> (<count> requests)', the spec's line; check mode says 'Would block'."""
    return '%s IP address: %s (%d requests%s)' % (
        'Would block' if check_mode else 'Blocking', address, count, ', %s' % note if note else '')


BROWSER_SPARED = 'IP address %s behaves as a browser and will not be blocked (%d requests, %s).'
ANSWERS_UNLISTED = ('%d %s decisions are not listed anywhere: %s_list is not set (they never go to the blocklist)')


def activity_added(date, address, count, note=None):
    return ACTIVITY_ADDED % {'date': date, 'address': address, 'count': count,
                             'note': ' (%s)' % note if note else ''}


# A removal from the blocklist (unblock, ban expiry), in the activity log: the spec's date and
# "IP addess" as in an addition, and a wording the tools reading the log tell from one:
# '... removed from the block list (unblock)', '... (expired, ban 12h)'.
ACTIVITY_REMOVED = '%(date)s | IP addess %(address)s removed from the block list (%(reason)s)'
ACTIVITY_REMOVED_PATTERN = br' \| IP addess (\S+) removed from the block list \((unblock|expired)(?:, ban (\w+))?\)$'
UNBLOCK_REASON = 'unblock'
EXPIRED_REASON = 'expired, ban %s'

UNBLOCKING = '%s IP address: %s'
UNBLOCKING_EXPIRED = '%s IP address: %s (ban of %s expired)'
NOT_LISTED = 'IP address %s is not in the block list.'
UNBLOCK_HOST_BITS = 'unblock: %s has host bits set (its network is %s): only a line of that address and prefix is taken off'

# Standard error: an error ends the run (one line), a warning does not.
ERROR_PREFIX = 'bot-detector: error: '
WARNING_PREFIX = 'bot-detector: warning: '
UNREADABLE_FORMAT = ('%s: no line of the part read carries an access-log timestamp [dd/Mon/yyyy:HH:MM:SS +zzzz], '
                     'so nothing was counted; log in the combined format (nginx: log_format combined; Apache: '
                     'LogFormat "%%h %%l %%u %%t \\"%%r\\" %%>s %%b \\"%%{Referer}i\\" \\"%%{User-Agent}i\\"")')
# Logs in another format (setting log_format; formats/readers.py).
UNPARSED_LINES = '%s: %d lines did not parse as %s and were not counted; the first: %s'
FORMAT_DETECTED = 'Log format of %s: %s (detected)'
# A log read as combined whose first lines mostly are not (formats/hint.py): which format reads them.
READ_AS = 'they read as %s: set log_format: %s (or auto)'
NOT_COMBINED = '%s: most of its first lines are not in the combined format (log_format), so its requests are not counted as such; ' + READ_AS
NO_USER_AGENT = ('%s: haproxy logs no user agent unless it is captured (haproxy_user_agent_capture): the bot and '
                 'search-engine exemptions cannot apply')
HISTORY_UNREADABLE = ('cannot read the rotated activity log %s: %s; entries whose addition is recorded only there '
                      'are kept')
METRICS_UNWRITABLE = 'metrics not written: %s'
# The exclusion list cannot be read (lists/allow.py): empty under the spec's rules, an error under precise.
EXCLUSIONS_UNREADABLE = '%s; the exclusion list counts as empty (as the reference does): no address is allow-listed'
# ... a device that never ends or a FIFO: the reference's grep never returns from it (spec rule 5.7), so its run never ends.
EXCLUSIONS_ENDLESS = "%s; the exclusion list counts as empty: no address is allow-listed (where the reference's search in it never ends)"
EXCLUSIONS_REQUIRED = '%s; the precise rules do not run without their exclusion list'
# Enforcement (enforce/): a warning for blocklist lines it cannot load, one for a failed sync
# (the blocklist keeps its changes), and --enforce-now's line.
ENFORCEMENT_SKIPPED = 'enforcement: %d blocklist %s not an address or network and not enforced: %s'
ENFORCEMENT_TOO_BROAD = ('enforcement: %d blocklist %s refused, covering together more than a /%d of IPv4 or a /%d of IPv6 '
                         '(enforcement_min_prefix_v4, enforcement_min_prefix_v6), not enforced: %s')
# An allow-list line or trusted proxy wider than the enforcement's limits (a typo such as /0):
# 'enforcement' or 'precise rules', the count, 'line ... is', the limits, the lines named.
NEVER_BLOCKED_TOO_WIDE = '%s: %d allow-list %s wider than a /%d of IPv4 or a /%d of IPv6 and spares no one: %s'
# The nftables record of the last load cannot be used (enforce/nftables.py: bad_record): removed, the table loaded whole.
BAD_RECORD = 'enforcement (nftables): the record of the last load %s is bad (%s): removed, the table is loaded whole'
ENFORCEMENT_FAILED = ('enforcement (%s) failed, the blocklist is updated but not in effect there: %s')
ENFORCEMENT_SYNCED = 'Enforcement %s: %d %s from %s, in sync%s'
# The module's read-only modes, moved into bot_detector_info (removed in 3.0.0).
MODE_DEPRECATED = ('mode=%s is deprecated: use the module jobboard.bot_detector.bot_detector_info with query=%s, '
                   'which returns the same')
# --follow
# The fleet store (fleet_store): never the password (values/checks.redact_url).
FLEET_NO_CLIENT = ('fleet_store is set but redis-py cannot be imported (Debian: apt-get install python3-redis; '
                   'else pip install redis)')
FLEET_PASSWORD_FILE = 'fleet_store_password_file %s cannot be read: %s'
FLEET_DOWN = 'fleet store %s unreachable (%s): deciding on this host\'s own counts; its counts are sent when it is back'
FLEET_BACK = 'fleet store %s reachable again: the counts held meanwhile sent (all of them again after a store emptied)'
FLEET_EVICTION = ('fleet store %s evicts keys under maxmemory (maxmemory_policy %s): a host\'s counts dropped make the '
                  'fleet\'s sums wrong; set maxmemory-policy noeviction (the fleet_store role does)')
FLEET_LOST = ('fleet store %s lost counts of the window starting at %s (a restore, a promoted replica, an eviction): '
              'every host sends its counts of it again')
FLEET_JUNK = ('fleet store %s holds campaign counts of the window starting at %s that no push of the product wrote (not a '
              'number): every host sends that window\'s campaign keys again under a new token')
FLEET_HOST_TWICE = ('fleet_host %s is used by another machine too: give each host its own name (their counts are kept '
                    'apart all the same)')
FLEET_OTHER_LAYOUT = ('fleet store %s holds counts of hosts of key layout %d (this host: %d): theirs and this host\'s are '
                      'summed apart until every host runs the same version')
FLEET_SLOW = 'no whole answer within %g s'
FLEET_PASSWORD_READABLE = 'fleet_store_password_file %s can be read by other users (mode %04o): chmod 0600 it'
FOLLOW_LOST = '%s: lines may be missed: %s'
FOLLOW_NOT_A_FILE = '%s is not a regular file: not read until a file is there'
FOLLOW_TWICE = 'a follower of %s already runs'
FOLLOW_UNPARSED = ('%s: a line did not parse as %s and was not counted (warned once; the count since the start is in '
                   '--status and the metric follow_unparsed_lines): %s')
FOLLOW_FORMAT_ASTRAY = '%s: most of the last %d lines do not parse as %s (log_format auto): %s'
FOLLOW_NEEDS = ('--follow needs a LOG and a state directory (--state-dir, or state_dir in the config file), and '
                'takes no --check, --json, --unblock or --status')
STATUS_FLEET_STORE = 'Fleet store %(store)s (fleet %(name)s, this host %(host)s): %(state)s'
STATUS_FOLLOWER = 'Follower of %(logs)s (pid %(pid)d): %(state)s, %(behind_seconds)s s and %(behind_bytes)d bytes behind at %(when)s'

# --status, in text: the blocklist's entries, then with a LOG each window's top records.
STATUS_HEADING = 'Blocklist %s: %d %s'
STATUS_ENFORCEMENT = 'Enforcement %s: %s'
STATUS_ENTRY = '%s  %s; %s'
STATUS_ADDED = {
    'own': "added %(date)s by this host's run, RPH=%(count)d",
    'fleet': 'added %(date)s by the fleet, RPH=%(count)d',
    'sync': "added %(date)s by the fleet, from another host's own run, RPH=%(count)d",
    'hand': 'added by hand or by other software (no addition in the activity log, or none since its last removal)',
}
STATUS_EXPIRES = {
    'at': 'expires %(date)s (ban %(ban)s)',
    'due': 'ban of %(ban)s over: the next run removes it',
    'never': 'never expires',
    'no_ban_time': 'no ban time set',
    'unknown_date': 'kept: the date of its addition cannot be read',
}
STATUS_WINDOW = '%s (%s), threshold %d:'
STATUS_WINDOW_NAMES = {'previous': 'Previous hour', 'current': 'Current hour'}
STATUS_RECORD = '%8d  %3d%%  %s%s'
STATUS_VERDICTS = {'block': 'would be blocked', 'already_blocked': 'already blocked',
                   'allow_listed': 'allow-listed', 'invalid': 'not an IP address', 'below_threshold': None}


def unblocking(address, check_mode=False, ban=None):
    """'Unblocking IP address: <ip>', and '(ban of 12h expired)' for an expiry; check mode says 'Would unblock'."""
    verb = 'Would unblock' if check_mode else 'Unblocking'
    if ban is None:
        return UNBLOCKING % (verb, address)
    return UNBLOCKING_EXPIRED % (verb, address, ban)


def activity_removed(date, address, reason):
    return ACTIVITY_REMOVED % {'date': date, 'address': address, 'reason': reason}


def status_heading(blocklist, entries):
    return STATUS_HEADING % (blocklist, entries, 'entry' if entries == 1 else 'entries')


def status_enforcement(state, date_format):
    """--status's line of the enforcement point (enforce/state.py's state)."""
    if state['entries'] is None:
        return STATUS_ENFORCEMENT % (state['backend'], 'nothing loaded, not in sync with the blocklist')
    return STATUS_ENFORCEMENT % (state['backend'], '%s, %d %s loaded at %s' % (
        'in sync' if state['in_sync'] else 'not in sync with the blocklist', state['entries'],
        'entry' if state['entries'] == 1 else 'entries',
        'an unknown time' if state['loaded_epoch'] is None else date_format(state['loaded_epoch'])))


# The answers softer than a block (lists/answers.py): their own activity lines, which the
# blocklist's history does not read as additions or removals of the blocklist.
ACTIVITY_ANSWERED = '%(date)s | IP addess %(address)s added to the %(answer)s list (%(reason)s)'
ACTIVITY_ANSWERED_PATTERN = br' \| IP addess (\S+) added to the (throttle|challenge) list \(([^)]*)\)$'
ACTIVITY_UNANSWERED = '%(date)s | IP addess %(address)s removed from the %(answer)s list (%(reason)s)'
ACTIVITY_UNANSWERED_PATTERN = br' \| IP addess (\S+) removed from the (throttle|challenge) list \(([^)]*)\)$'
ANSWERING = '%s IP address: %s (%s)'
ANSWER_REFUSED = '%s list: %s refused: %s'
ANSWER_NOT_LISTED = 'IP address %s is not in the %s list.'
STATUS_ANSWER_HEADING = '%s list %s: %d %s'
STATUS_ANSWER_ADDED = 'added %s (%s)'      # a throttle or challenge list's entry: its date and reason, as STATUS_ENTRY's


def unanswering(kind, address, check_mode=False):
    """'Unthrottling IP address: <ip>' ('Would unchallenge ...' in check mode)."""
    return '%s IP address: %s' % (('Would un%s' % kind) if check_mode else 'Un%sing' % kind[:-1], address)
