# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules a run decides by (setting ``rules``): the reference script's (rules.py), or the
precise ones (precise.py)."""

from __future__ import absolute_import, division, print_function

from .rules import SpecRules

__metaclass__ = type


def rules_for(settings, resolver=None):
    if getattr(settings, 'campaigns', False):
        from .campaigns import CampaignRules    # the campaign profile only: a default run loads none of it
        return CampaignRules(settings, resolver)
    if settings.rules == 'precise':
        from .precise import PreciseRules       # precise mode only: a spec run loads none of it
        return PreciseRules(settings, resolver)
    return SpecRules(settings, resolver)
