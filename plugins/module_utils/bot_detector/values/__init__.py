# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a run's values come from: the one table of settings and the checks of their
values (settings.py), the host config file and the options given over it (config.py), and
the log formats' names as the settings spell them (log_formats.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
