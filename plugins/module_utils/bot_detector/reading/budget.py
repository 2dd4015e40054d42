# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where counts past count_budget go (issue 44): to spill files (spill.py) in a directory
only this user writes, or, when there is none or it fails (full, over quota, refused), into
memory up to a share of the process's memory limit, and past that the smallest counts are
dropped. Never a failed run or a dead follower, never a directory another user can fill.

- ``base_for(state_dir)``: where a session makes its directory: the state directory's
  ``spill`` (made 0700 when absent), else TMPDIR when set; a directory any user writes
  (/tmp, /run/user...) is refused (``private``), and /tmp and /run are memory anyway (tmpfs on
  Debian 13, charged to the unit).
- ``sweep(base)``: the directories of runs killed with SIGKILL removed.
- ``private(path, create)``: the checks: a real directory (not a link), this user's, that
  no other user can write into, in a parent no other user can rename it out of.
- ``memory_keys(budget)``: the distinct keys held in memory without spilling: a quarter of
  the memory limit (the cgroup's, else the machine's) at BYTES_PER_KEY each, at least the budget.
- ``drop_smallest(counters, keep)``: the counts of the fewest requests dropped until at
  most ``keep`` keys are held.
"""

from __future__ import absolute_import, division, print_function

import fcntl
import os
import re
import stat
from collections import Counter
from itertools import chain, compress, repeat
from operator import gt

__metaclass__ = type

SUBDIRECTORY = 'spill'      # in the state directory
PREFIX = 'bot-detector-spill-'     # a session's directory: PREFIX, the owner's pid, '-', 12 hex digits
STALE = re.compile(r'%s([0-9]+)-[0-9a-f]{12}\Z' % PREFIX)
OWNER_FILE = '.owner'         # locked by the owner while it runs
BYTES_PER_KEY = 160         # a Counter's entry with an IPv6 address for key, as Python 3.11 holds it (about 130 for IPv4)
MEMORY_SHARE = 4            # counts held in memory take at most 1/MEMORY_SHARE of the limit: forked workers, buffers, the rest
CGROUP_ROOT = '/sys/fs/cgroup'
UNLIMITED = 1 << 62         # cgroup v1's "no limit" is 2^63 rounded down to a page


class Refused(Exception):
    """A spill directory that is not private (the text says why)."""


def base_for(state_dir):
    """The directory a spill session makes its own in, or None (nowhere: memory only)."""
    if state_dir:
        return os.path.join(state_dir, SUBDIRECTORY)
    return os.environ.get('TMPDIR') or None


def private(path, create=True):
    """``path`` when it is a directory only this user writes (made 0700 when absent, with
    ``create``); Refused or OSError otherwise."""
    if path is None:
        raise Refused('no state_dir, no TMPDIR to spill to')
    parent = os.path.dirname(os.path.abspath(path))
    if create:
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o700)
        try:
            os.mkdir(path, 0o700)
        except OSError as exc:
            if not os.path.lexists(path):
                raise exc
    for where in (parent, path):
        info = os.lstat(where)
        if where == path and stat.S_ISLNK(info.st_mode):
            raise Refused('%s is a symbolic link' % path)
        if not stat.S_ISDIR(info.st_mode):
            if stat.S_ISLNK(info.st_mode):
                info = os.stat(where)       # the state directory may be a link (root's or this user's, below)
            if not stat.S_ISDIR(info.st_mode):
                raise Refused('%s is not a directory' % where)
        if where == path and info.st_uid != os.geteuid():
            raise Refused('%s belongs to user %d, not to this run\'s' % (path, info.st_uid))
        if info.st_uid not in (0, os.geteuid()):
            raise Refused('%s belongs to user %d' % (where, info.st_uid))
        if info.st_mode & 0o022 and not (where == parent and info.st_mode & stat.S_ISVTX):
            raise Refused('%s is writable by other users' % where)
    return path


def sweep(base):
    """Remove the spill directories that runs killed (SIGKILL, the OOM killer) left in
    ``base``: only a directory of this kind (PREFIX, a pid, 12 hex digits; not a link),
    of this user, whose pid is not a running process and whose OWNER_FILE no process holds
    locked (a pid of another pid namespace sharing ``base``). Failures are ignored."""
    try:
        names = [name for name in os.listdir(base) if STALE.match(name)]
    except OSError:
        return
    for name in names:
        try:
            os.kill(int(STALE.match(name).group(1)), 0)
            continue                    # its process runs (or is another user's: not ours)
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            fd = os.open(os.path.join(base, name), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or not stat.S_ISDIR(info.st_mode):
                continue
            lock = os.open(OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)      # fails while its owner lives
                for entry in os.listdir(fd):
                    os.unlink(entry, dir_fd=fd)
                os.rmdir(os.path.join(base, name))
            finally:
                os.close(lock)
        except OSError:
            pass
        finally:
            os.close(fd)


def memory_limit(cgroup_list='/proc/self/cgroup', root=CGROUP_ROOT):
    """Bytes this process may use: the smallest memory limit of its cgroup and the cgroups
    above it (v2 memory.max, v1 memory.limit_in_bytes), else the machine's memory."""
    limits = [os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')]
    try:
        with open(cgroup_list) as handle:
            entries = [entry.rstrip('\n').split(':', 2) for entry in handle]
    except (OSError, IOError):
        entries = []
    for entry in entries:
        if len(entry) != 3:
            continue
        hierarchy, controllers, path = entry
        if hierarchy == '0' and not controllers:
            base, name = root, 'memory.max'
        elif 'memory' in controllers.split(','):
            base, name = os.path.join(root, 'memory'), 'memory.limit_in_bytes'
        else:
            continue
        parts = [part for part in path.split('/') if part and part != '..']
        for depth in range(len(parts), -1, -1):
            try:
                with open(os.path.join(base, *(parts[:depth] + [name]))) as handle:
                    text = handle.read().strip()
            except (OSError, IOError):
                continue
            if text.isdigit() and int(text) < UNLIMITED:
                limits.append(int(text))
    return min(limits)


def memory_keys(budget, limit=None):
    """Distinct keys a process holds in memory when its counts cannot spill."""
    limit = memory_limit() if limit is None else limit
    return max(budget, limit // MEMORY_SHARE // BYTES_PER_KEY)


def drop_smallest(counters, keep):
    """Drop the entries of the fewest requests from ``counters`` (all windows together)
    until at most ``keep`` keys are held: every key of a count up to a floor, the lowest
    floor that does it. Returns (keys dropped, the floor)."""
    counters = list(counters)
    held = sum(map(len, counters))
    if held <= keep:
        return 0, 0
    spread = sorted(Counter(chain.from_iterable(counter.values() for counter in counters)).items())
    floor, dropping = 0, 0
    for count, keys in spread:
        floor, dropping = count, dropping + keys
        if held - dropping <= keep:
            break
    for counter in counters:
        kept = list(compress(counter.items(), map(gt, counter.values(), repeat(floor))))
        dict.clear(counter)
        dict.update(counter, kept)
    return dropping, floor
