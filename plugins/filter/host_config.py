# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: host_config
short_description: Render the bot detector's host config file from the role's variables
version_added: 2.0.0
description:
  - Takes a mapping of the role's variables (C(bot_detector_<setting>)) and returns the text of
    C(/etc/bot-detector/bot-detector.conf), INI section C([bot_detector]), one key per setting that is set.
    Settings left unset appear as a comment naming the detector's default.
  - The settings, their types and bounds come from the detector's one table of settings, the same that the
    command and the module use, and the text is written by the same code that reads it back. A value the
    detector would reject fails here, at deployment, with the variable's name.
author:
  - Bot Detector maintainers (@jobboard)
options:
  _input:
    description: The variables, for example built from C(lookup('ansible.builtin.varnames', '^bot_detector_')).
    type: dict
    required: true
'''

EXAMPLES = r'''
- name: Show the config file the role would write
  ansible.builtin.debug:
    msg: "{{ {'bot_detector_threshold': 5000, 'bot_detector_rules': 'precise'} | jobboard.bot_detector.host_config }}"
'''

RETURN = r'''
_value:
  description: The config file's text (without the ansible_managed header).
  type: str
'''

from ansible.errors import AnsibleFilterError

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.settings import SETTINGS, format_config

PREFIX = 'bot_detector_'


def host_config(variables):
    if not isinstance(variables, dict):
        raise AnsibleFilterError('host_config: expects a mapping of variables, got %r' % type(variables).__name__)
    values = {}
    for setting in SETTINGS:
        value = variables.get(PREFIX + setting.name)
        if value is not None:
            values[setting.name] = list(value) if setting.kind == 'list' and not isinstance(value, str) else (
                dict(value) if setting.kind == 'dict' and isinstance(value, dict) else value)
    try:
        return format_config(values)
    except BotDetectorError as exc:
        raise AnsibleFilterError('host_config: %s' % exc.message)


class FilterModule(object):
    def filters(self):
        return {'host_config': host_config}
