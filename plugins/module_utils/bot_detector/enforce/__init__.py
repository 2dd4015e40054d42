# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enforcement (setting ``enforcement``): a stage after the blocklist, which it reads whoever
wrote it, making one enforcement point equal to it (sync.py): nftables sets (nftables.py)
or an nginx geo file (nginx.py), never blocking what decision/never_blocked.py spares (the
server, loopback, the allow-list, the trusted proxies). A third backend is one more file with ``loaded`` and ``load``
(and ``append``, to take lines appended alone). Nothing of the detection imports this package; the drivers call it after a
change (drivers/after_change.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
