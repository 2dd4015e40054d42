# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the logs and counting their lines (rules 5.3.1 to 5.3.7), into a WindowCounts.

logfile.py opens a log, finds the windows' first line (the seek) and its rotated file;
chunks.py brings whole lines a chunk at a time (gzip, long lines, forked workers);
tally.py counts a chunk's lines with the rules' line filter; spill.py bounds the counts'
memory (``count_budget``); state.py, saves.py and incremental.py let a run with
``state_dir`` read on from where the last one stopped."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
