# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deciding on the counts (rules 5.3.7 to 5.7): the ranking, the threshold and the lists'
verdicts. rules.py holds the reference script's rules, quirks included; precise.py the
precise ones (networks, verified crawlers; ranges.py is their arithmetic); choice.py picks
one by setting ``rules``; addresses.py says what an address is and which are the host's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
