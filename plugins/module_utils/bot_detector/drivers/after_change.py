# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What follows a change to the blocklist, whoever made it (a run, a follower's decision, an
unblock, an expiry): the enforcement point synced to it (setting ``enforcement``) and the
metrics file written (``metrics_file``); and ``--enforce-now``, which does only that.

The drivers' step, not a side effect of a stage: the enforcement and the metrics each do
their own part, and only this module calls both."""

from __future__ import absolute_import, division, print_function

import time

from ..base.errors import BotDetectorError
from ..base.messages import ENFORCEMENT_FAILED, ENFORCEMENT_SYNCED, METRICS_UNWRITABLE
from ..reporting import metrics
from ..reporting.result import Result

__metaclass__ = type


class recorded:  # pylint: disable=invalid-name      # used as a function: ``with recorded(...):``
    """After the run in the block, unless in check mode: with enforcement, sync it (after a
    failed run only when the run changed the blocklist); then write the metrics
    (``logs``: a detection run's), success or failure. A metrics file that cannot be
    written is a warning: the run itself did its work."""

    def __init__(self, settings, result, logs=None):
        self.settings, self.result, self.logs = settings, result, logs
        self.started = time.time()

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, traceback):
        if self.result.check_mode:
            return False
        if self.settings.enforcement != 'none' and self.result.enforcement is None and (kind is None or self.result.changed):
            after_run(self.settings, self.result)
        if self.settings.metrics_file is None:
            return False
        if kind is not None:
            if issubclass(kind, BotDetectorError):
                try:
                    metrics.write(self.settings, self.result, self.logs, False, self.started)
                except BotDetectorError:
                    pass            # the run's own error is the one to report
            return False
        try:
            metrics.write(self.settings, self.result, self.logs, True, self.started)
        except BotDetectorError as exc:
            self.result.warn(METRICS_UNWRITABLE % exc.message)
        return False


def after_run(settings, result, force=False):
    """The one call the drivers make (recorded): sync, file the status with ``result``
    (``result.enforcement``), and warn about skipped lines and a failed sync."""
    from ..enforce.sync import sync     # enforcement on only: the others load none of it
    status = sync(settings, force, on_skipped=result.warn)
    result.enforcement = status.as_dict()
    if status.error is not None:
        result.warn(ENFORCEMENT_FAILED % (status.backend, status.error))
    return status


def enforce_now(settings, emit=None, on_warning=None):
    """``--enforce-now`` (module: mode enforce): read no log, load the blocklist into the
    enforcement point even when it looks equal already; write the metrics."""
    result = Result(False, emit, on_warning)
    with recorded(settings, result):
        status = after_run(settings, result, force=True)
    if status.in_sync:
        result.say(ENFORCEMENT_SYNCED % (status.backend, status.entries, 'entry' if status.entries == 1 else 'entries',
                                         settings.blocklist, '' if status.changed else ', unchanged'))
    return result
