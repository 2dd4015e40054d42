# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule 5.8: appending to the blocklist and the activity log, under the run's lock."""

from __future__ import absolute_import, division, print_function

import errno
import fcntl
import os
import stat
import time
import zlib

from ..base.clock import date_default_format
from ..base.errors import BotDetectorError
from ..base.messages import activity_added
from ..base.text import to_bytes, to_text
from ..values.settings import BY_NAME

__metaclass__ = type

# Where the lock files go: root's, and a user's own when not root (XDG_RUNTIME_DIR/bot-detector,
# else /tmp/bot-detector-<uid>). Each is a directory only its owner can enter.
ROOT_LOCK_DIR = '/run/bot-detector'
USER_LOCK_DIR = '/tmp/bot-detector-%d'
MAX_LINKS = 40


def lock_directory(create=True):
    """The directory for this user's lock files, created 0700 when absent. One that is not
    a real directory of this user's, entered by no one else, is refused: another user may
    have planted it. Without ``create`` (check mode) nothing is made or changed: an absent
    directory is only checked to be creatable."""
    uid = os.geteuid()
    if uid == 0:
        path = ROOT_LOCK_DIR
    elif os.environ.get('XDG_RUNTIME_DIR', '').startswith('/'):
        path = os.path.join(os.environ['XDG_RUNTIME_DIR'], 'bot-detector')
    else:
        path = USER_LOCK_DIR % uid
    if not create and not os.path.lexists(path):
        problem = creation_problem(os.path.dirname(path))
        if problem:
            raise BotDetectorError('cannot create the lock directory %s: %s' % (path, problem))
        return path
    try:
        os.mkdir(path, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise BotDetectorError('cannot create the lock directory %s: %s' % (path, exc.strerror))
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
        raise BotDetectorError('the lock directory %s is not a directory of user %d: another user may have made it; '
                               'remove it' % (path, uid))
    if info.st_mode & 0o077 and create:
        os.chmod(path, 0o700)       # ours: only its mode is off
    return path


def lock_file(blocklist, create=True, kind='blocklist'):
    """The lock file of every run that appends to ``blocklist``, however the path is spelled;
    without ``create`` (what only reads beside it: --status) its directory is neither made nor
    changed. ``kind``: what the path is ('answers': an answers' directory, synced under it)."""
    # CRC-32 and Adler-32 of the path: hashlib's import (OpenSSL's start) costs a cron run
    # tens of milliseconds; two paths sharing a key would only share a lock.
    name = to_bytes(os.path.realpath(blocklist))
    key = '%08x%08x' % (zlib.crc32(name) & 0xffffffff, zlib.adler32(name) & 0xffffffff)
    return os.path.join(lock_directory(create), '%s-%s.lock' % (kind, key))


def take_lock(target, timeout, kind='blocklist'):
    """(fd, path): the lock of ``target`` (a blocklist, or with ``kind`` 'answers' an answers'
    directory) held, waited for at most ``timeout`` seconds; ``release`` lets go of it."""
    try:
        path = lock_file(target, kind=kind)
    except BotDetectorError as exc:
        raise BotDetectorError('cannot lock %s: %s' % (target, exc.message))
    return hold(path, target, timeout), path


def hold(path, what, timeout):
    """The fd of the lock file ``path``, created mode 0600, with flock(2) held on it: waited for
    at most ``timeout`` seconds (``what``: the locked thing, for the errors). A file its holder
    removed on release (``release``) while this one waited is let go and the new one taken."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise BotDetectorError('cannot lock %s: %s: %s' % (what, path, exc.strerror))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise BotDetectorError('cannot lock %s: %s: %s' % (what, path, exc.strerror))
            if time.monotonic() >= deadline:
                raise BotDetectorError('cannot lock %s: another run has held its lock (%s) for %d seconds (lock_timeout)'
                                       % (what, path, timeout))
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
            continue
        if _same_file(fd, path):
            return fd
        os.close(fd)            # its holder removed it on release: take the new one


def release(fd, path):
    """Let go of ``hold``'s lock, its file removed first (so none pile up)."""
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(fd)


class BlocklistWriter:
    """Appends to the blocklist and the activity log, under an exclusive lock.

    The lock is flock(2) on a file the run creates itself, mode 0600, in a directory only
    its user can enter (lock_directory), keyed by the blocklist's real path: every run of
    that user that appends to the same blocklist serialises on it, and no other user can
    open it. A run waits at most ``lock_timeout`` seconds for it (None: the setting's
    default). The file is removed on unlock (a waiter that then holds a removed file tries
    again), so none pile up.
    """

    def __init__(self, blocklist, activity_log, lock_timeout=None):
        self.blocklist = blocklist
        self.activity_log = activity_log
        self.lock_timeout = BY_NAME['lock_timeout'].default if lock_timeout is None else lock_timeout
        self.lock_path = None
        self._lock_fd = None
        self._append_checked = False

    def lock(self):
        self._lock_fd, self.lock_path = take_lock(self.blocklist, self.lock_timeout)

    def check(self, appending=False):
        """Check mode: what lock() would fail on (and with ``appending``, what block() would),
        found without writing anything: the lock directory; the activity log and the
        blocklist opened for appending as block() opens them, neither created. Checked
        once a run: what it finds does not change between a run's appends."""
        if self._append_checked:
            return
        try:
            lock_directory(create=False)
        except BotDetectorError as exc:
            raise BotDetectorError('cannot lock %s: %s' % (self.blocklist, exc.message))
        for path in (self.activity_log, self.blocklist) if appending and not self._append_checked else ():
            fd = self.open_for_append(path, create=False)
            if fd is not None:
                os.close(fd)
        self._append_checked = self._append_checked or appending

    def unlock(self):
        if self._lock_fd is not None:
            release(self._lock_fd, self.lock_path)
            self._lock_fd = None

    def __enter__(self):
        self.lock()
        return self

    def __exit__(self, *exc_info):
        self.unlock()

    @staticmethod
    def open_for_append(path, create=True):
        """An fd to append to the regular file ``path``, created 0644 when absent; without
        ``create``, None when it is absent and could be created. As root, a symbolic link is
        followed only as the kernel's protected_symlinks rule would (append_target), and the
        last step is opened with O_NOFOLLOW."""
        flags = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        target = path
        if os.geteuid() == 0:
            target = append_target(path)
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise BotDetectorError('refusing to append to %s: it became a symbolic link (running as root)' % path)
            reason = exc.strerror
            if exc.errno == errno.ENOENT and not create:
                reason = creation_problem(os.path.dirname(os.path.abspath(target)))
                if not reason:
                    return None
            raise BotDetectorError('cannot append to %s: %s' % (path, reason))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise BotDetectorError('refusing to append to %s: not a regular file' % path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def write_line(fd, path, line, fsync):
        """Append ``line`` (bytes ending in a newline) as one write(2); a newline first when the
        file's last line lacks one. Returns (the size before, the bytes written). A failed or
        short write is taken back (take_back) and raised."""
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b'\n':
            line = b'\n' + line   # never glue our entry to an unterminated last line
        written = 0
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            if fsync:
                os.fsync(fd)
        except OSError as exc:
            kept = '' if take_back(fd, size, written) else '; %d bytes of it could not be taken back' % written
            raise BotDetectorError('cannot append to %s: %s%s' % (path, exc.strerror, kept))
        return size, written

    @classmethod
    def append_line(cls, path, line, fsync):
        """Append one line to ``path`` (see write_line)."""
        fd = cls.open_for_append(path)
        try:
            cls.write_line(fd, path, line, fsync)
        finally:
            os.close(fd)

    def block(self, address, count, note=None):
        """Append ``address`` to the blocklist and its activity line to the activity log, both
        or neither: the date is taken and both files are checked (an existing activity log
        opened, an absent one's directory checked) before either is written, and when the
        activity line then fails, the blocklist line is taken back (take_back). ``note``
        (fleet, sync) marks a decision not taken by this host's own count: 'RPH=3000 (fleet)'."""
        self.block_all([(address, count, note)])

    def block_all(self, entries):
        """Block each (address, count, note) of ``entries`` as block() does one, in one write and
        one fsync per file, all or none: a campaign run appends thousands, and a sync of each
        took seconds on a disk."""
        if entries:
            date = date_default_format()
            self.append(b'\n'.join(address for address, count, note in entries), b''.join(
                to_bytes(activity_added(date, to_text(address), count, note)) + b'\n' for address, count, note in entries))

    def append(self, address, entry):
        """Append ``address`` (bytes; lines, without the last newline) to the list and ``entry`` (its
        activity lines, bytes ending in a newline) to the activity log, both or neither, as block() says."""
        activity_fd = self.open_for_append(self.activity_log, create=False)
        try:
            blocklist_fd = self.open_for_append(self.blocklist)
            try:
                size, written = self.write_line(blocklist_fd, self.blocklist, address + b'\n', fsync=True)
                try:
                    if activity_fd is None:         # created only now, with a line to write
                        activity_fd = self.open_for_append(self.activity_log)
                    self.write_line(activity_fd, self.activity_log, entry, fsync=True)
                except BotDetectorError as exc:
                    back, lines = take_back(blocklist_fd, size, written), address.count(b'\n') + 1
                    raise BotDetectorError('%s; the %s %s' % (
                        exc.message, 'blocklist line' if lines == 1 else '%d blocklist lines' % lines,
                        ('was' if lines == 1 else 'were') + ' taken back' if back else 'could not be taken back (%s)' % self.blocklist))
            finally:
                os.close(blocklist_fd)
        finally:
            if activity_fd is not None:
                os.close(activity_fd)


def creation_problem(directory):
    """Why a file could not be created in ``directory`` (as open(2) would say it), or None."""
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    return os.strerror(errno.ENOENT if not os.path.isdir(directory)
                       else errno.EROFS if os.statvfs(directory).f_flag & os.ST_RDONLY else errno.EACCES)


def take_back(fd, size, written):
    """Truncate the file back to ``size``, only when it is exactly that plus our ``written``
    bytes: never take away what another writer appended meanwhile. True when nothing of
    ours is left."""
    if not written:
        return True
    try:
        if os.fstat(fd).st_size == size + written:
            os.ftruncate(fd, size)
            os.fsync(fd)
            return True
    except OSError:
        pass
    return False


def _same_file(fd, path):
    try:
        held, named = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def rewrite_target(path):
    """The file that unblock and expiry replace for ``path``: the one appends go to. As root,
    append_target's (a link followed only when trusted); as another user, every link
    followed, as its appends follow them. Replacing ``path`` itself would turn an operator's
    link into a file of its own, which the appends would then leave."""
    if os.geteuid() == 0:
        return append_target(path, 'rewrite')
    return os.path.realpath(path)


def removal_journal(target):
    """The journal of a removal under way (removal.Journal), beside the file it rewrites:
    '.ipblocklist.txt.bot-detector-removing'."""
    directory, base = os.path.split(os.path.abspath(target))
    return os.path.join(directory, '.%s.bot-detector-removing' % base)


def removal_pending(blocklist):
    """Whether a killed unblock or expiry left its journal beside ``blocklist``: one lstat,
    so that every run can look without importing the rewriters. A link refused here is
    refused, with its message, by the run's own use of the blocklist."""
    try:
        return os.path.lexists(removal_journal(rewrite_target(blocklist)))
    except BotDetectorError:
        return False


def append_target(path, action='append to'):
    """As root: the file to append to for ``path``. A symbolic link (and each link after it)
    is followed only when it is owned by root or the running user and so is the directory it
    points into, as the kernel's protected_symlinks rule trusts a link; any other link could
    have been planted by another user to redirect root's appends, and is refused."""
    trusted = (0, os.geteuid())
    current = path
    for dummy in range(MAX_LINKS):
        try:
            info = os.lstat(current)
        except OSError:
            return current              # absent: created with O_NOFOLLOW
        if not stat.S_ISLNK(info.st_mode):
            return current
        target = os.path.join(os.path.dirname(current), os.readlink(current))
        try:
            directory_owner = os.stat(os.path.dirname(target) or '.').st_uid
        except OSError:
            directory_owner = None
        if info.st_uid not in trusted or directory_owner not in trusted:
            raise BotDetectorError('refusing to %s %s: the symbolic link %s, or the directory it points into, '
                                   'belongs to another user (running as root)' % (action, path, current))
        current = target
    raise BotDetectorError('refusing to %s %s: more than %d symbolic links (running as root)' % (action, path, MAX_LINKS))
