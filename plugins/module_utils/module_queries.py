# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules jobboard.bot_detector.bot_detector and bot_detector_info share: the
options of the settings table, the settings resolved from the options, the config file or
``settings``, and the two read-only queries (``report``, ``status``) with their results.
bot_detector's deprecated mode=report and mode=status and bot_detector_info run the same
code here, so that they return the same thing."""

from __future__ import absolute_import, division, print_function

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import parse_now
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.run import report
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.status import status
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting.compact import compact_counts
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.config import DEFAULT_CONFIG, resolve
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SETTINGS

__metaclass__ = type

QUERIES = ('report', 'status')
# The options only a report takes (a floor of 1 or more; candidates and compact only there).
REPORT_OPTIONS = ('candidates', 'compact')


def argument_spec():
    """The options of the settings table (no defaults here: an option not given comes from the
    host config file, then the table's default), and those every mode or query takes."""
    spec = {}
    for setting in SETTINGS:
        option = {'type': setting.ansible_type}
        if setting.kind == 'list':
            option['elements'] = setting.elements
        if setting.choices:
            option['choices'] = list(setting.choices)
        if setting.aliases:
            option['aliases'] = list(setting.aliases)
        if setting.group == 'fleet' or 'pass' in setting.name:
            # fleet_store's URL may hold the password; no other setting holds a secret, though Ansible
            # takes a name with 'pass' (password_file, challenge_pass_time) for one unless told.
            option['no_log'] = setting.name == 'fleet_store'
        spec[setting.name] = option
    spec.update(
        log=dict(type='list', elements='path'),
        config=dict(type='path', default=DEFAULT_CONFIG),
        settings=dict(type='dict'),
        report_floor=dict(type='int'),
        candidates=dict(type='dict'),
        compact=dict(type='bool', default=False),
        now=dict(type='str'),
    )
    return spec


def check_report_options(params, chosen, option):
    """The report's options: a floor of at least 1; ``candidates`` and ``compact`` only when
    ``option`` (``mode`` or ``query``) is ``report``."""
    if params['report_floor'] is not None and params['report_floor'] < 1:
        raise BotDetectorError('report_floor: must be a whole number of at least 1, got %r' % params['report_floor'], 2)
    for name in REPORT_OPTIONS:
        if params[name] not in (None, False) and chosen != 'report':
            raise BotDetectorError('%s: only with %s=report' % (name, option), 2)


def module_settings(params):
    """The settings of a task: the options given explicitly over ``settings`` (which replaces
    the config file) or over the config file, then the defaults."""
    explicit = dict((setting.name, params[setting.name]) for setting in SETTINGS)
    if params['settings'] is not None:
        # The settings given in place of the config file; explicit options over them.
        given = dict(params['settings'])
        given.update((name, value) for name, value in explicit.items() if value is not None)
        return resolve(given, surface='module')
    # The default config path may be missing; one named explicitly must exist.
    return resolve(explicit, config_path=params['config'], config_required=params['config'] != DEFAULT_CONFIG,
                   surface='module')


def task_now(params):
    """The instant of ``now``, or None for the current time."""
    return parse_now(params['now']) if params['now'] is not None else None


def run_query(params, query, settings, now):
    """The core's result of the read-only ``query`` (report or status) as of ``now``."""
    if query == 'status':
        return status(settings, params['log'] or [], now=now)
    return report(settings, params['log'], floor=params['report_floor'], candidates=params['candidates'], now=now)


def query_output(result, query, compact):
    """The task's result of a query, as ``result.as_dict()`` shaped for the module's return,
    and the warnings to give (module.warn)."""
    output = result.as_dict()
    warnings = output.pop('warnings')
    if query == 'report':
        output.pop('check_mode')
        if compact:
            output['counts'] = dict((window, compact_counts(counts)) for window, counts in output['counts'].items())
        for key in ('counts', 'local_blocks', 'report_floor', 'now', 'unblocked', 'not_listed'):
            if output[key] is None:
                del output[key]
    return output, warnings
