# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The formats of the logs a follower reads (drivers/follow.py) when they are not all
combined: each log's reader, told once it is there (``auto``: from its first lines, and at
least choice.FEW that agree for a log made after the start), the lines that did not parse,
and with ``auto`` a watch that the format still fits as the log grows (choice.Watch): when
most new lines no longer fit, the follower says so and decides again."""

from __future__ import absolute_import, division, print_function

import os

from ..base import messages
from ..base.errors import BotDetectorError
from ..base.text import printable, to_text
from ..values.log_formats import format_of
from . import choice

__metaclass__ = type


class FollowedFormats:
    """Each followed log's reader (None: combined), its unparsed lines, auto's watches."""

    def __init__(self, settings, logs, warn):
        self.settings, self.warn = settings, warn
        self.readers, self.unparsed, self.watches = {}, {}, {}
        for path in logs:
            try:
                if os.path.exists(path):
                    self._choose(path, choice.reader_for(settings, path))
            except choice.NoLineYet:
                pass        # auto on a log with no whole line yet: told once it has one (known)

    def _choose(self, path, chosen):
        name, self.readers[path] = chosen
        if format_of(self.settings, path) == 'auto':
            self.watches[path] = choice.Watch(name)

    def known(self, path):
        """Whether the log's format is known; a log made after the start is told here."""
        if path not in self.readers and os.path.exists(path):
            try:        # auto waits for a few lines that agree: one odd first line does not choose
                self._choose(path, choice.reader_for(self.settings, path, least=choice.FEW))
            except BotDetectorError:
                pass
        return path in self.readers

    def counted(self, path, fd, start, end):
        """Lines ``start`` to ``end`` of the log's open file were counted: auto's watch sees the last ones."""
        watch = self.watches.get(path)
        if watch is not None and end > start:
            seen = min(end - start, choice.HEAD_BYTES)
            watch.see(os.pread(fd, seen, end - seen), seen == end - start)

    def polled(self, path, reader):
        """After a round of the log: its unparsed lines taken; auto's format checked again."""
        self.take_unparsed(path, reader)
        watch = self.watches.get(path)
        if watch is None or not watch.astray():
            return
        old, lines = watch.name, len(watch.recent)
        try:
            name = watch.redecide(path)
        except BotDetectorError:
            self.warn(messages.FOLLOW_FORMAT_ASTRAY % (path, lines, old, 'no other format reads their addresses; read on as ' + old))
            return
        self.warn(messages.FOLLOW_FORMAT_ASTRAY % (path, lines, old, 'read as %s from now on' % name))
        if name != old:
            self._choose(path, (name, choice.reader_of(self.settings, name, path)))

    def take_unparsed(self, path, reader):
        """Add the lines ``reader`` found unparsed to the log's count; warn of a log's first, once."""
        if reader is None or not reader.unparsed:
            return
        if path not in self.unparsed:
            self.warn(messages.FOLLOW_UNPARSED % (path, reader.name, printable(to_text(reader.example or b''))))
        self.unparsed[path] = self.unparsed.get(path, 0) + reader.unparsed
        reader.unparsed, reader.example = 0, None
