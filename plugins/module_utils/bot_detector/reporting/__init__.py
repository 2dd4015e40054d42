# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run found and did (result.py, which only receives) and the Prometheus metrics
file (metrics.py). The messages themselves are in base/messages.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
