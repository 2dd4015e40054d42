# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the settings' values come from: the host config file, read and written, and the
precedence over it of the options given.

Precedence: an option given explicitly, then the host config file
(``/etc/bot-detector/bot-detector.conf``, INI, section ``[bot_detector]``; its keys are the
settings' names and aliases, as the module's options), then the built-in default (the
spec's). The rows, their checks and formats are settings.py's.
"""

from __future__ import absolute_import, division, print_function

import os

from ..base.errors import bad_option
from .checks import nearest
from .settings import ALIASES, BY_NAME, SETTINGS, Settings

__metaclass__ = type

DEFAULT_CONFIG = '/etc/bot-detector/bot-detector.conf'
CONFIG_SECTION = 'bot_detector'


def read_config(path, required=False):
    """The settings in the host config file, {name: value}. A missing file is no settings
    unless ``required``; anything else wrong in it is a bad option naming the file."""
    try:
        with open(path, 'rb') as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if not required and not os.path.lexists(path):
            return {}
        raise bad_option('cannot read the config file %s: %s' % (path, exc.strerror or exc))
    return parse_config(raw, path)


def parse_config(raw, path):
    import configparser     # only runs that have a config file pay for it
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError:
        raise bad_option('%s: not UTF-8 text' % path)
    parser = configparser.ConfigParser(interpolation=None, delimiters=('=',), comment_prefixes=('#', ';'),
                                       inline_comment_prefixes=None, strict=True, empty_lines_in_values=False,
                                       default_section='\x00none')
    try:
        parser.read_string(text, source=path)
    except configparser.Error as exc:
        raise bad_option('%s: %s' % (path, str(exc).splitlines()[0]))
    values = {}
    for section in parser.sections():
        if section != CONFIG_SECTION:
            raise bad_option('%s: unknown section [%s] (expected [%s])' % (path, section, CONFIG_SECTION))
        for key, text_value in parser.items(section):
            setting = BY_NAME.get(ALIASES.get(key, key))     # the module's names and aliases
            where = '%s: %s = %s' % (path, key, text_value.strip().replace('\n', ' '))
            if setting is None:
                near = nearest(key, list(BY_NAME) + list(ALIASES))
                raise bad_option('%s: unknown setting %r; %s' % (path, key, 'did you mean %s?' % near if near else
                                                                 'the settings are listed in guide_command'))
            if key != setting.name and parser.has_option(section, setting.name):
                raise bad_option('%s: %s: %s is given twice (%s is its alias)' % (path, key, setting.name, key))
            if text_value.strip():      # an empty value: the built-in default
                values[setting.name] = setting.parse(text_value, where)
    return values


def format_config(values, header=''):
    """The config file for ``values`` ({name: value}, as the role has them): each set
    setting as a key, the others as a comment showing the default. Values are checked
    against the table, so a bad role variable fails the deployment, not the cron run."""
    lines = [header.rstrip('\n')] if header else []
    lines.append('[%s]' % CONFIG_SECTION)
    for setting in SETTINGS:
        value = values.get(setting.name)
        if isinstance(value, str) and setting.kind not in ('path', 'str'):
            value = setting.parse(value, setting.name)      # extra vars arrive as text
        value = setting.check(value, 'bot_detector_%s' % setting.name)
        if value is None or value == []:
            lines.append('# %s: default, %s' % (setting.name, setting.effective_default_text))
        else:
            text = setting.format(value)
            lines.append('%s =%s%s' % (setting.name, '' if text.startswith('\n') else ' ', text))
    return '\n'.join(lines) + '\n'


def resolve(explicit, config_path=None, config_required=False, surface='command'):
    """Settings from explicit values ({name: value}, None = not given) over the config file."""
    values = read_config(config_path, config_required) if config_path else {}
    for name, value in explicit.items():
        if value is not None:
            values[ALIASES.get(name, name)] = value
    return Settings(surface=surface, **values)
