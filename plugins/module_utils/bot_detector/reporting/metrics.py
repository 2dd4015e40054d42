# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus metrics (``metrics_file``), in the text format node_exporter's textfile
collector reads, written atomically after every run.

One file serves every run on the host: the cron entries (one per log), the fleet's apply
runs and unblocks. So each detection run replaces only the series of its own logs (label
``log``), the counters of additions and removals are carried forward and added to, and the
file is read, merged and replaced under the run's lock. A log's series that no run has
renewed for a day (a log no longer scheduled) are dropped.
"""

from __future__ import absolute_import, division, print_function

import re
import time

from ..lists.content import entries, read_list
from ..lists.writer import BlocklistWriter
from .result import Result

__metaclass__ = type

PREFIX = 'bot_detector_'
# (name, type, help), in the file's order. Series of one detection run carry label ``log``.
FAMILIES = (
    ('last_run_timestamp_seconds', 'gauge', 'When the last detection run of these logs ended, in seconds since the epoch.'),
    ('last_run_success', 'gauge', '1 when the last detection run of these logs completed, 0 when it failed.'),
    ('last_run_duration_seconds', 'gauge', 'How long the last detection run of these logs took, in seconds.'),
    ('last_run_read_bytes', 'gauge', 'Bytes of access log the last detection run of these logs read.'),
    ('last_run_read_lines', 'gauge', 'Lines of access log the last detection run of these logs read.'),
    ('last_run_unparsed_lines', 'gauge', 'Lines of access log in another format than combined (log_format) that the '
                                         'last detection run of these logs could not parse, of the lines that could count '
                                         '(the two hourly windows\'); lines outside them are not parsed nor counted here, '
                                         'so 0 does not mean that every line of the log parsed.'),
    ('last_run_top_requests', 'gauge', 'The highest request count of an examined address per window in the last '
                                       'detection run of these logs.'),
    ('threshold', 'gauge', 'Requests in one hourly window that block an address, in the last detection run of these logs.'),
    ('additions_total', 'counter', "Addresses appended to the blocklist, by reason: own (this host's runs), fleet, sync, "
                                   'escalated (a throttled or challenged client at a scraper\'s pace).'),
    ('last_run_answers', 'gauge', 'With an answer list: requests of each hourly window nginx answered, read back from the '
                                  'access log by the last detection run of these logs: throttled (429), challenged (428), '
                                  'passed and failed (the challenge\'s pass URL answered 303 or 403).'),
    ('removals_total', 'counter', 'Entries removed from the blocklist, by reason: expired, unblock.'),
    ('blocklist_entries', 'gauge', 'Entries in the blocklist after the last run.'),
    ('list_unreadable', 'gauge', '1 when the last run that read this list could not (the spec rules: taken as empty, '
                                 'no address allow-listed), 0 when it could.'),
    ('enforcement_in_sync', 'gauge', '1 when the enforcement point equals the blocklist after the last sync, 0 when not.'),
    ('enforcement_entries', 'gauge', 'Entries (networks, merged) loaded into the enforcement point by the last good sync.'),
    ('enforcement_never_blocked_too_wide', 'gauge', 'Allow-list lines and trusted proxies wider than the enforcement\'s '
                                                    'prefix limits (a typo such as /0), which spare no one; 0 when none.'),
    ('follow_behind_seconds', 'gauge', 'Follow mode: seconds since the follower last had every line of these logs '
                                       'read and decided on; 0 when it has.'),
    ('follow_behind_bytes', 'gauge', 'Follow mode: bytes written to these logs and not read yet.'),
    ('follow_unparsed_lines', 'gauge', 'Follow mode: lines of these logs in another format than combined (log_format) '
                                       'that did not parse since the follower started.'),
    ('fleet_store_up', 'gauge', 'Fleet store (fleet_store): 1 when the store answered the last push of these logs\' '
                                'counts, 0 when it did not (the host then decides on its own counts).'),
    ('fleet_push_behind_seconds', 'gauge', 'Fleet store: seconds since every count of these logs read so far was last '
                                           'in the store; 0 when it is.'),
    ('fleet_decisions_received_total', 'counter', 'Fleet store: addresses the store reported over the threshold '
                                                  'fleet-wide, each decided on by this host.'),
    ('fleet_store_eviction_safe', 'gauge', 'Fleet store: 1 when its maxmemory_policy (label policy) is noeviction, '
                                           '0 when it may drop keys of the fleet (every key expires) under maxmemory.'),
)
ENFORCEMENT = ('enforcement_in_sync', 'enforcement_entries', 'enforcement_never_blocked_too_wide')
COUNTERS = ('additions_total', 'removals_total', 'fleet_decisions_received_total')
LISTS = ('exclusions',)      # list_unreadable's label list
STALE_AFTER = 86400

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {'\\\\': '\\', '\\"': '"', '\\n': '\n'}


def _escape(value):
    return value.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _unescape(value):
    return re.sub(r'\\.', lambda m: _UNESCAPE.get(m.group(0), m.group(0)), value)


def parse(text):
    """The samples of a metrics file this module wrote: [(name, ((label, value), ...), number)]."""
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if line.startswith('#') or match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = tuple(sorted((k, _unescape(v)) for k, v in _LABEL.findall(match.group(2) or '')))
        samples.append((match.group(1)[len(PREFIX):], labels, value))
    return samples


def render(samples):
    """The text format: HELP and TYPE per family, then its samples."""
    out = []
    for name, kind, help_text in FAMILIES:
        mine = sorted((labels, value) for sample_name, labels, value in samples if sample_name == name)
        if not mine:
            continue
        out.append('# HELP %s%s %s' % (PREFIX, name, help_text))
        out.append('# TYPE %s%s %s' % (PREFIX, name, kind))
        for labels, value in mine:
            text = ','.join('%s="%s"' % (k, _escape(v)) for k, v in labels)
            number = '%d' % value if float(value).is_integer() else repr(float(value))
            out.append('%s%s%s %s' % (PREFIX, name, '{%s}' % text if text else '', number))
    return '\n'.join(out) + '\n'


def run_samples(result, logs, success, started, ended, settings):
    """The series of one run: per-log ones for a detection run (``logs``), the counters' increments."""
    samples = []
    if logs:
        log = ','.join(logs)
        samples += [('last_run_timestamp_seconds', (('log', log),), round(ended, 3)),
                    ('last_run_success', (('log', log),), 1 if success else 0),
                    ('last_run_duration_seconds', (('log', log),), round(ended - started, 3))]
        if success:
            samples += [('last_run_read_bytes', (('log', log),), sum(s['bytes_read'] for s in result.scans)),
                        ('last_run_read_lines', (('log', log),), sum(s['lines'] or 0 for s in result.scans)),
                        ('threshold', (('log', log),), settings.threshold)]
            if any('format' in s for s in result.scans):
                samples.append(('last_run_unparsed_lines', (('log', log),),
                                sum(s.get('unparsed_lines', 0) for s in result.scans)))
            answered = result.answered.totals_by_window() if getattr(result, 'answered', None) is not None else {}
            for window in result.windows:
                for answer, count in sorted(answered.get(window.get('hour_stamp'), {}).items()):
                    samples.append(('last_run_answers', (('answer', answer), ('log', log), ('window', window['name'])), count))
                top = window['records'][0]['count'] if window['records'] else 0
                samples.append(('last_run_top_requests', (('log', log), ('window', window['name'])), top))
    if logs and getattr(result, 'fleet', None) is not None:     # a run with fleet_store: what it did with the store
        fleet = result.fleet
        samples += [('fleet_store_up', (('log', log), ('store', fleet['store'])), 1 if fleet['up'] else 0),
                    ('fleet_decisions_received_total', (), fleet['decisions_received'])]
        if fleet['up']:         # every count of the run pushed
            samples.append(('fleet_push_behind_seconds', (('log', log),), 0))
        samples += eviction_samples(fleet.get('store'), fleet.get('eviction_policy'))
    if result.unreadable_lists is not None:     # the lists were read
        samples += [('list_unreadable', (('list', name),), int(name in result.unreadable_lists)) for name in LISTS]
    for reason, count in sorted(result.additions.items()):
        samples.append(('additions_total', (('reason', reason),), count))
    for reason, count in (('expired', len(result.expired)), ('unblock', len(result.unblocked or []))):
        samples.append(('removals_total', (('reason', reason),), count))
    return samples


def merge(old, new, logs, now):
    """The file's samples after a run: ``new`` for its logs, other logs' series unless stale,
    counters added up (every reason present, from 0)."""
    log = ','.join(logs) if logs else None
    stale = set(dict(labels)['log'] for name, labels, value in old
                if name == 'last_run_timestamp_seconds' and 'log' in dict(labels) and now - value > STALE_AFTER)
    totals = {}
    for name, labels, value in old + new:
        if name in COUNTERS:
            totals[(name, labels)] = totals.get((name, labels), 0) + value
    for name, reasons in (('additions_total', ('own', 'fleet', 'sync')), ('removals_total', ('expired', 'unblock'))):
        for reason in reasons:
            totals.setdefault((name, (('reason', reason),)), 0)
    merged = [(name, labels, value) for (name, labels), value in totals.items()]
    for name, labels, value in old:
        other = dict(labels).get('log')
        if name not in COUNTERS and other is not None and other != log and other not in stale:
            merged.append((name, labels, value))
    merged += [sample for sample in new if sample[0] not in COUNTERS]
    return merged


def write(settings, result, logs, success, started, extra=()):
    """Read, merge and replace the metrics file under the run's lock."""
    from ..lists.replace import replace_file       # tempfile: only runs that write metrics pay for it
    path = settings.metrics_file
    writer = BlocklistWriter(settings.blocklist, settings.activity_log, settings.lock_timeout)
    writer.lock()
    try:
        try:
            old = parse(read_list(path).decode('utf-8'))
        except UnicodeDecodeError:
            old = []            # not a file of ours: start it anew
        ended = time.time()
        samples = merge(old, run_samples(result, logs, success, started, ended, settings) + list(extra), logs, ended)
        samples.append(('blocklist_entries', (), len(entries(read_list(settings.blocklist)))))
        if not any(sample[0] == 'list_unreadable' for sample in samples):       # a run that read no list: kept
            samples += [sample for sample in old if sample[0] == 'list_unreadable']
        samples += enforcement_samples(settings, result.enforcement, old)
        replace_file(path, render(samples).encode('utf-8'))
    finally:
        writer.unlock()


def fleet_samples(log, fleet, received):
    """The fleet store's series of a follower or a run of ``log`` (with ``fleet_store``):
    ``fleet`` is the object that drives the fleet (``store_up``: True, False or None before
    the store's first answer, when the gauge is left out; ``push_behind_seconds``,
    ``describe()``: the store's URL without its password), ``received`` the decisions it
    received since the last write (a counter: added to the file's)."""
    labels = (('log', log),)
    samples = [('fleet_push_behind_seconds', labels, round(fleet.push_behind_seconds, 3)),
               ('fleet_decisions_received_total', (), received)]
    if fleet.store_up is not None:      # None: no answer yet, either way
        samples.append(('fleet_store_up', labels + (('store', fleet.describe()),), 1 if fleet.store_up else 0))
    return samples + eviction_samples(fleet.describe(), getattr(getattr(fleet, 'store', None), 'policy', None))


def eviction_samples(store, policy):
    """fleet_store_eviction_safe once the store's maxmemory_policy is known (None: not yet)."""
    if policy is None:
        return []
    return [('fleet_store_eviction_safe', (('store', store), ('policy', policy)), 1 if policy == 'noeviction' else 0)]


def write_follow(settings, log, behind_seconds, behind_bytes, additions, removals, enforcement=None, unparsed=None,
                 read=(0, 0), tops=(), fleet=()):
    """A follower's metrics (follow.py): how far behind it is, its additions and removals
    since its last write, and last_run_timestamp_seconds and last_run_success as a run's, so
    that the alerts on runs that stopped hold for a follower too; ``read`` (bytes, lines) since
    its last write as last_run_read_bytes and _lines, ``tops`` [(window, the highest count
    now)] as last_run_top_requests; with a fleet store, its series (``fleet``: fleet_samples)."""
    result = Result()
    result.scans = [{'bytes_read': read[0], 'lines': read[1]}]
    result.windows = [{'name': name, 'records': [{'count': top}] if top else []} for name, top in tops]
    result.additions = dict(additions)
    result.expired = [None] * removals
    result.enforcement = enforcement      # the last sync's status (None: the file's gauges kept)
    started = time.time()
    extra = [('follow_behind_seconds', (('log', log),), round(behind_seconds, 3)),
             ('follow_behind_bytes', (('log', log),), behind_bytes)]
    if unparsed is not None:        # logs in another format than combined
        extra.append(('follow_unparsed_lines', (('log', log),), unparsed))
    write(settings, result, [log], True, started, extra=extra + list(fleet))


def enforcement_samples(settings, status, old):
    """The enforcement gauges: this run's sync (``status``), else the file's last ones; none
    once enforcement is off. A failed sync keeps the entries of the last good one."""
    if settings.enforcement == 'none':
        return []
    kept = [sample for sample in old if sample[0] in ENFORCEMENT and dict(sample[1]).get('backend') == settings.enforcement]
    if status is None:
        return kept
    labels = (('backend', status['backend']),)
    wide = [('enforcement_never_blocked_too_wide', labels, status['too_wide'])] if status.get('too_wide') is not None else \
        [sample for sample in kept if sample[0] == 'enforcement_never_blocked_too_wide']
    if status['in_sync']:
        return [('enforcement_in_sync', labels, 1), ('enforcement_entries', labels, status['entries'])] + wide
    return [('enforcement_in_sync', labels, 0)] + [sample for sample in kept if sample[0] == 'enforcement_entries'] + wide
