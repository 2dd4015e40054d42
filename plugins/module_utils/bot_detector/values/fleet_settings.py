# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rows of the settings table for the fleet store, kept here so that settings.py stays under
the layout's line limit: settings.py adds them to its one table, ``SETTINGS``, in this place of
its order. Each row is the arguments of a ``settings.Setting``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

_GROUP = dict(group='fleet', version_added='2.0.0')

FLEET_ROWS = (
    ('fleet_store', 'str', None,
     'Share counts with the fleet through Redis or Valkey (follow mode, state_dir runs): '
     'redis://[USER[:PASSWORD]@]HOST:PORT/DB, rediss:// (TLS) or unix://PATH?db=DB; ?cluster=yes for a '
     'Redis Cluster. Never shown with its password; a password holding / ? # [ ] is percent-encoded '
     '(or in fleet_store_password_file). Off when unset.', dict(metavar='URL', **_GROUP)),
    ('fleet_store_password_file', 'path', None, "The fleet store's password, read from this file (its first line).",
     dict(metavar='PATH', **_GROUP)),
    ('fleet_host', 'str', None, "This host's name in the fleet (its counts in the store kept per log of this machine).",
     dict(metavar='NAME', default_text="the host's name", **_GROUP)),
    ('fleet_name', 'str', 'bot-detector', "The store's key prefix, so that several fleets share one store "
     "(no * ? [ ] \\ { } : or blanks: its ACL user's key pattern and the keys' hash tag would read them).",
     dict(metavar='NAME', **_GROUP)),
)
