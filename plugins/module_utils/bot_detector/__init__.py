# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Detection core of jobboard.bot_detector, and the host command.

Standard library only (Python 3.8+), no Ansible import: the modules import it as
module_utils, the role installs it on each host, and ``python3 <this directory> LOG`` is
the command that replaces ``bot-detector.sh``. One subpackage a stage, imports running
one way, down: base (errors, text, messages, time) <- values (settings, config) <-
reading (the logs read and counted, 5.3.1-5.3.7) <- formats (other log formats) <-
decision (ranking and verdicts, 5.3.7-5.7) <- lists (appends, 5.8; removal) <- enforce <-
reporting (result, metrics) <- drivers (run, follow, status, unblock, cli). docs/design.md
follows a line through them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The collection's version, declared in galaxy.yml; a copy here for the host command, which has
# no galaxy.yml (tests/unit/test_version.py checks that they agree).
VERSION = '2.0.0'
