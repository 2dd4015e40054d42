"""The test set-up (issue 21, finding 6): the tests pass from a clone under a directory only
root can enter (`mktemp -d` is 0700, and so is /root), where another user cannot read the
checkout. The tests that run the command as `nobody` must give it a copy it can read."""
import os
import shutil
import subprocess
import sys
import tempfile

from conftest import ROOT, require_root

# Every test that runs the command as another user.
AS_ANOTHER_USER = [
    'tests/unit/test_lock.py::test_a_run_as_another_user_locks_in_its_own_directory',
    'tests/unit/test_unblock.py::test_as_another_user_links_are_followed_as_its_appends_follow_them',
    'tests/unit/test_unblock.py::test_a_user_who_cannot_keep_the_owner_changes_nothing',
]


def private_clone(base):
    """The files git tracks or would track, as a clone has them, under ``base`` (0700), linked
    into .build/ as `make setup` does."""
    clone = os.path.join(base, 'bot_detector')
    names = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=str(ROOT),
                           stdout=subprocess.PIPE, check=True).stdout.decode().split('\0')
    for name in filter(None, names):
        source = os.path.join(str(ROOT), name)
        if not os.path.lexists(source):
            continue        # deleted, not yet committed
        target = os.path.join(clone, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    link = os.path.join(clone, '.build', 'ansible_collections', 'jobboard', 'bot_detector')
    os.makedirs(os.path.dirname(link))
    os.symlink(clone, link)
    return clone


def test_the_tests_run_as_another_user_pass_from_a_clone_in_a_private_directory():
    require_root('this test needs root (the tests it runs switch to nobody)')
    base = tempfile.mkdtemp(prefix='bd-clone-')      # 0700, as `mktemp -d`
    try:
        assert os.stat(base).st_mode & 0o777 == 0o700
        clone = private_clone(base)
        got = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-rs'] + AS_ANOTHER_USER,
                             cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                             env=dict(os.environ, CI='true'), timeout=600, check=False)
        assert got.returncode == 0, got.stdout[-3000:]
        assert '%d passed' % len(AS_ANOTHER_USER) in got.stdout, got.stdout[-3000:]
    finally:
        shutil.rmtree(base)
