# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drivers on top of the stages, each calling the same reading loop, decision step and
append step, and differing in when: a run (run.py), a follower (follow.py, follower_state.py),
``--status`` (status.py), ``--unblock`` (unblock.py), and what follows any change to the
blocklist (after_change.py: the enforcement's sync, the metrics). cli.py is the command line."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
