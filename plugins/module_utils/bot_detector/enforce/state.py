# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The enforcement point's state for --status, read from what the backend records of its
last load (nftables: the record beside the run's lock, confirmed by nft; nginx: the geo
file's header); nothing is loaded or written."""

from __future__ import absolute_import, division, print_function

import os

from ..base.errors import BotDetectorError
from ..decision.never_blocked import never_blocked
from .sync import _backend, digest_of

__metaclass__ = type


def enforcement_state(settings, content):
    """{backend, in_sync, entries, loaded_epoch} for the blocklist ``content`` (bytes), or
    None with enforcement none. ``in_sync``: the last load was of this very blocklist;
    ``entries`` and ``loaded_epoch`` (when its record was written) None when nothing is loaded."""
    if settings.enforcement == 'none':
        return None
    backend = _backend(settings.enforcement)
    loaded = backend.loaded(settings)
    record = settings.nginx_geo_file if settings.enforcement == 'nginx' else backend.record_path(settings)
    try:
        when = int(os.stat(record).st_mtime) if loaded is not None else None
    except OSError:
        when = None
    try:        # the exemptions are part of what was loaded
        digest = digest_of(settings, content, never_blocked(settings))
    except BotDetectorError:        # unknown: a sync would fail, and say why
        digest = None
    return {'backend': settings.enforcement, 'in_sync': loaded is not None and loaded[0] == digest,
            'entries': loaded[1] if loaded is not None else None, 'loaded_epoch': when}
