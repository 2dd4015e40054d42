# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The filters' documentation: host_config.yml, role_settings.yml, role_problems.yml, nginx_answers.yml.

from ansible.errors import AnsibleFilterError

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.checks import nearest
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.config import format_config
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SETTINGS, Settings

PREFIX = 'bot_detector_'


def _set_values(name, variables):
    """{setting: value} of the variables that are set, as plain Python values."""
    if not isinstance(variables, dict):
        raise AnsibleFilterError('%s: expects a mapping of variables, got %r' % (name, type(variables).__name__))
    values = {}
    for setting in SETTINGS:
        value = variables.get(PREFIX + setting.name)
        if value is not None:
            values[setting.name] = list(value) if setting.kind == 'list' and not isinstance(value, str) else (
                dict(value) if setting.kind == 'dict' and isinstance(value, dict) else value)
    return values


def host_config(variables):
    try:
        return format_config(_set_values('host_config', variables))
    except BotDetectorError as exc:
        raise AnsibleFilterError('host_config: %s' % exc.message)


def nginx_answers(variables, part):
    """The text ``bot-detector.sh --nginx-snippet PART`` prints for the role's settings: the same
    code, so that the role installs exactly what the command prints."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce.answers_nginx import snippet
    try:
        return snippet(Settings(surface='module', **checked_settings(_set_values('nginx_answers', variables))), part)
    except BotDetectorError as exc:
        raise AnsibleFilterError('nginx_answers: %s' % exc.message)


def checked_settings(values):
    """``values`` ({setting: value}, as the role's variables give them: extra vars as text)
    typed and checked by the table, row by row and together (Settings.validate). Raises
    BotDetectorError naming the variable, bot_detector_<setting>, and the reason."""
    checked = {}
    for setting in SETTINGS:
        value = values.get(setting.name)
        if value is None:
            continue
        where = PREFIX + setting.name
        if isinstance(value, str) and setting.kind not in ('path', 'str'):
            value = setting.parse(value, where)
        checked[setting.name] = setting.check(value, where)
    try:
        Settings(surface='module', **checked)
    except BotDetectorError as exc:     # Settings.validate: '<setting>: reason'
        raise BotDetectorError(PREFIX + exc.message, exc.exit_status)
    return checked


def role_settings(variables):
    try:
        return checked_settings(_set_values('role_settings', variables))
    except BotDetectorError as exc:
        raise AnsibleFilterError(exc.message)


def role_problems(variables, argument_specs, internal=()):
    """One line per problem of the role's variables: a bot_detector_* name that is no option
    of ``argument_specs`` (the role's, every entry point) nor ``internal``, with the nearest
    known name; then the first value the detector rejects."""
    if not isinstance(variables, dict) or not isinstance(argument_specs, dict):
        raise AnsibleFilterError('role_problems: expects the variables and the argument_specs as mappings')
    known = set(internal)
    for entry in argument_specs.get('argument_specs', argument_specs).values():
        known.update(entry.get('options') or {})
    problems = []
    # The role's own lists (not settings, whose text the table parses) are looped over: a
    # string would be taken a character at a time.
    lists = set(name for entry in argument_specs.get('argument_specs', argument_specs).values()
                for name, option in (entry.get('options') or {}).items() if option.get('type') == 'list')
    for name in sorted(lists - set(PREFIX + setting.name for setting in SETTINGS)):
        if isinstance(variables.get(name), str):
            problems.append('%s: a list is needed, not the string %r; write it as a YAML list, [%s]' % (
                name, variables[name], variables[name]))
    for name in sorted(variables):
        if name.startswith(PREFIX) and name not in known:
            # Nearest by what follows the prefix, which every name shares.
            near = nearest(name[len(PREFIX):], [k[len(PREFIX):] for k in known])      # the config file's too
            problems.append('%s: not a variable of the role; %s' % (
                name, 'did you mean %s%s?' % (PREFIX, near) if near else 'meta/argument_specs.yml lists them'))
    try:
        checked_settings(_set_values('role_problems', variables))
    except BotDetectorError as exc:
        problems.append(exc.message)
    return problems


class FilterModule(object):
    def filters(self):
        return {'host_config': host_config, 'role_settings': role_settings, 'role_problems': role_problems,
                'nginx_answers': nginx_answers}
