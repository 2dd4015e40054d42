# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bytes and text. The log side works on bytes, as ``LC_ALL=C grep -a`` does, so no input
can make the core raise a decoding error; surrogateescape keeps every byte when a log's
bytes must be shown as text."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def to_bytes(value):
    if isinstance(value, bytes):
        return value
    return value.encode('utf-8', 'surrogateescape')


def to_text(value):
    """Bytes from the log as text; printing it back with surrogateescape is byte-exact."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    return value


def printable(value):
    """``value`` (str, list or dict) with undecodable bytes shown as escapes, for JSON."""
    if isinstance(value, dict):
        return dict((k, printable(v)) for k, v in value.items())
    if isinstance(value, list):
        return [printable(v) for v in value]
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')
    return value
