# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who pushes to the fleet store, and with what (issue 43): the machine's id (one writer is a
machine and its log's path, hashed: the store never sees the id itself), the password file
(a regular file, read bounded), StoreDown, what a failure of the store is to its callers, and
the client (redis-py, imported by ``import_redis`` only, only with a fleet store)."""

from __future__ import absolute_import, division, print_function

import hashlib
import os
import stat
import sys

from ..base import messages
from ..base.errors import EXIT_BAD_OPTION, BotDetectorError

__metaclass__ = type

DEBIAN_PACKAGES = '/usr/lib/python3/dist-packages'
MACHINE_ID_FILES = ('/etc/machine-id', '/var/lib/dbus/machine-id')
PASSWORD_FILE_MAX = 4096        # bytes read of the password file


def machine_id():
    """This machine's id (systemd's, else D-Bus's, else its host name): told apart from another
    machine given the same fleet_host."""
    for path in MACHINE_ID_FILES:
        try:
            with open(path, 'rb') as handle:
                found = handle.read(256).strip()
            if found:
                return found.decode('ascii', 'replace')
        except OSError:
            continue
    import socket        # no machine id: the host name
    return socket.gethostname()


def digest(*parts):
    """A short hash of ``parts``: the machine's id is not shown to the store as it is."""
    return hashlib.sha256('\0'.join(('bot-detector fleet',) + parts).encode('utf-8', 'surrogateescape')).hexdigest()[:16]


def read_password(path, warn):
    """The first line of the password file: a regular file (a FIFO or a device would hold the
    run), its first PASSWORD_FILE_MAX bytes; readable by others: said once. Else StoreDown."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOCTTY', 0))
    except OSError as exc:      # as a store away: the host's own counts decide
        raise StoreDown(messages.FLEET_PASSWORD_FILE % (path, exc.strerror))
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise StoreDown(messages.FLEET_PASSWORD_FILE % (path, 'not a regular file'))
        if found.st_mode & 0o044:
            warn(messages.FLEET_PASSWORD_READABLE % (path, stat.S_IMODE(found.st_mode)))
        data = os.read(fd, PASSWORD_FILE_MAX)
    except OSError as exc:
        raise StoreDown(messages.FLEET_PASSWORD_FILE % (path, exc.strerror))
    finally:
        os.close(fd)
    try:
        return data.decode('utf-8').splitlines()[0].strip()
    except (IndexError, UnicodeDecodeError):
        raise StoreDown(messages.FLEET_PASSWORD_FILE % (path, 'empty' if not data.strip() else 'not UTF-8 text'))


class StoreDown(Exception):
    """The store did not answer (refused, timed out, dropped, an error reply): the batch may or
    may not have been applied; sending it again is safe (absolute counts)."""


def import_redis():
    """The redis module; Debian's python3-redis also under ``python3 -S``. Missing: exit 2.
    Its log records (the cluster client logs each failure with a traceback) go nowhere: a store
    away is said once, by the fleet's own warning."""
    try:
        import redis      # only with a fleet store: a run without one stays standard library only
    except ImportError:
        if os.path.isdir(DEBIAN_PACKAGES) and DEBIAN_PACKAGES not in sys.path:
            sys.path.append(DEBIAN_PACKAGES)        # after everything else: nothing of the core is shadowed
        try:
            import redis      # Debian's python3-redis, outside the path python3 -S sees
        except ImportError:
            raise BotDetectorError(messages.FLEET_NO_CLIENT, EXIT_BAD_OPTION)
    import logging      # only with a fleet store, as redis-py itself imports it
    logging.getLogger('redis').addHandler(logging.NullHandler())
    logging.getLogger('redis').propagate = False
    return redis
