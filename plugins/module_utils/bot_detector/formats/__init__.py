# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Logs in other formats than combined (``log_format``): each line turned into its combined
twin, which the tally counts as a combined log's line (reading/tally.py), so every rule and
mode works unchanged. A combined run imports nothing of this package.

choice.py gives a log its reader (``auto`` included); readers.py is what every format's
reader does; escaping.py writes fields as nginx does; json_logs.py (nginx JSON, Caddy,
Traefik JSON) and text_logs.py (Traefik, HAProxy, W3C) read the formats; times.py and
layouts.py are the JSON formats' fast paths; proxies.py is ``trusted_proxies``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
