# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The answers' directory (``answer_dir``) made equal to the answer lists, for nginx's njs
script (answers.js), which stats it on each request: nginx needs no reload when a list
changes, where a reload beside a large geo blocklist takes seconds.

One file per listed key, in a subdirectory per answer (``throttle/``, ``challenge/``), named
``<version>-<the network's first address in hex, its prefix length / 4 digits>``: the script
looks up a client's address at the lengths of ``LENGTHS`` only (one stat each), so an entry of
another length is written as the networks of the next longer one it holds. Each file's
modification time is when the entry expires, and the script answers only before it: an
entry runs out in nginx at its time even before the next run takes it off the list.
"""

from __future__ import absolute_import, division, print_function

import errno
import os

from ..base.errors import BotDetectorError
from ..decision.ranges import BITS
from ..lists.answers import listed, span
from ..lists.writer import release, take_lock
from ..values.answer_settings import ANSWERS

__metaclass__ = type

# The prefix lengths the script looks a client up at (answers.js LENGTHS: keep them equal).
LENGTHS = {4: (32, 24, 16), 6: (128, 64, 48, 32)}
# An entry that would be more files than this is refused (a warning): the width guards allow a
# /8 of IPv4 (256 files of a /16) and a /32 of IPv6 (one file).
MAX_FILES = 65536
NEVER = 4102444800      # 2100-01-01: the expiry of an entry that has none (put on the list by hand)


def key_files(found):
    """The file names of one entry (version, prefix length, first address); None when too many."""
    version, length, first = found
    longer = [checked for checked in LENGTHS[version] if checked >= length]
    if not longer:
        return None
    checked = min(longer)
    count = 1 << (checked - length)
    if count > MAX_FILES:
        return None
    shift = BITS[version] - checked
    digits = BITS[version] // 4
    return ['%d-%s' % (version, ('%0*x' % (digits, (first >> shift) + step << shift))[:checked // 4])
            for step in range(count)]


def wanted_files(settings, kind, now):
    """{file name: expiry} of ``kind``'s list, its entries still running; and the warnings."""
    wanted, warnings = {}, []
    for entry in listed(settings, kind):
        if entry.due(now):
            continue
        found = span(entry.address)
        names = key_files(found) if found else None
        if names is None:
            warnings.append('%s list: %s not put in %s: not an address or network of at most %d files'
                            % (kind, entry.address.decode('ascii', 'replace'), settings.answer_dir, MAX_FILES))
            continue
        expires = NEVER if entry.expires is None else int(entry.expires)
        for name in names:
            wanted[name] = max(expires, wanted.get(name, 0))
    return wanted, warnings


def _directory(path):
    try:
        os.makedirs(path, 0o755)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise BotDetectorError('cannot create %s: %s' % (path, exc.strerror))
    if os.path.islink(path) or not os.path.isdir(path):
        raise BotDetectorError('%s is not a directory (a link or a file): refused' % path)


def sync(settings, now=None):
    """Make each answer's subdirectory of ``answer_dir`` hold exactly its list's files, each with
    its expiry as modification time. Returns {'files': {answer: count}, 'warnings': [...],
    'changed': files made, removed or given another expiry}."""
    import time     # the wall clock: the lists' dates are the wall clock's
    # Syncs take turns (a follower's, a run's, an --unblock's): one that read the lists before
    # another's change and wrote after that one's sync would undo it until the next sync.
    fd, path = take_lock(settings.answer_dir, settings.lock_timeout, kind='answers')
    try:
        return _sync(settings, time.time() if now is None else now)
    finally:
        release(fd, path)


def _sync(settings, now):
    report = {'files': {}, 'warnings': [], 'changed': 0}
    for kind in ANSWERS:
        directory = os.path.join(settings.answer_dir, kind)
        if not getattr(settings, kind + '_list'):
            wanted = {}
            if not os.path.isdir(directory):
                continue
        else:
            wanted, warnings = wanted_files(settings, kind, now)
            report['warnings'].extend(warnings)
            _directory(directory)
        try:
            present = set(os.listdir(directory))
            for name in present - set(wanted):
                os.unlink(os.path.join(directory, name))
                report['changed'] += 1
            for name, expires in wanted.items():
                path = os.path.join(directory, name)
                if name not in present:
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
                if name not in present or int(os.lstat(path).st_mtime) != expires:
                    os.utime(path, (expires, expires))
                    report['changed'] += 1
        except OSError as exc:
            raise BotDetectorError('cannot update %s: %s' % (directory, exc.strerror))
        report['files'][kind] = len(wanted)
    return report
