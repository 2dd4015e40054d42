# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Detection core of jobboard.bot_detector, and the host command.

Standard library only (Python 3.8+), no Ansible import: the modules import it as
module_utils, the role installs it on each host, and ``python3 <this directory> LOG`` is
the command that replaces ``bot-detector.sh``. Data flows one way (see run.py):
settings.py (the one table of settings) -> clock.py (the hour windows, rule 5.2) ->
logfile.py + reading.py + tally.py (reading and counting, 5.3.1-5.3.7, into a WindowCounts) ->
rules.py / precise.py (ranking 5.3.7-5.3.9, list verdicts 5.5-5.7) -> writer.py
(appending, 5.8) -> result.py (what the run found and did).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The collection's version, declared in galaxy.yml; a copy here for the host command, which has
# no galaxy.yml (tests/unit/test_version.py checks that they agree).
VERSION = '2.0.0'
