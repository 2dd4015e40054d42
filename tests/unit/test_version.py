"""One version, declared once (issue 39, section 6): galaxy.yml's. The core package carries a
copy (the host command has no galaxy.yml), which must agree, and ``--version`` prints it. The
command runs from a copy of the package under any folder name (it died with
``ModuleNotFoundError: No module named 'bot_detector'``), even beside another ``bot_detector``."""
import shutil
import subprocess
import sys

import pytest
import yaml

import loggen
from conftest import CORE, ROOT, in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector import VERSION

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423


def galaxy_version():
    return yaml.safe_load((ROOT / 'galaxy.yml').read_text())['version']


def test_the_core_version_is_galaxy_yml_s_and_version_prints_it():
    assert VERSION == galaxy_version()
    got = subprocess.run([sys.executable, str(CORE), '--version'], stdout=subprocess.PIPE, universal_newlines=True, check=True)
    assert got.stdout == 'bot-detector.sh %s\n' % galaxy_version()


def test_no_release_of_the_changelog_is_past_that_version():
    """galaxy.yml's version is the latest release or the one under way (whose fragments wait)."""
    def key(version):
        return tuple(int(part) for part in version.split('.'))
    releases = yaml.safe_load((ROOT / 'changelogs' / 'changelog.yaml').read_text())['releases']
    assert releases and max(key(release) for release in releases) <= key(galaxy_version())


@pytest.mark.parametrize('name,how', [('bd-copy', 'directory'), ('core', 'file'), ('bot_detector', 'file')])
def test_the_command_runs_from_a_copy_under_any_folder_name(tmp_path, name, how):
    copy = tmp_path / name
    shutil.copytree(str(CORE), str(copy), ignore=shutil.ignore_patterns('__pycache__'))
    if name != 'bot_detector':
        decoy = tmp_path / 'bot_detector'          # another package of that name beside it: not imported
        decoy.mkdir()
        (decoy / '__init__.py').write_text('raise ImportError("the decoy was imported")\n')
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    target = copy if how == 'directory' else copy / '__main__.py'
    got = subprocess.run([sys.executable, '-S', str(target), '--blocklist', tmp_path / 'bl', '--exclusions', tmp_path / 'ex',
                          '--activity-log', tmp_path / 'act', '--server-ip', '10.0.0.5', '--now', NOW, log],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={'TZ': 'UTC', 'LC_ALL': 'C.UTF-8'}, check=False)
    assert got.returncode == 0, got.stderr
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in got.stdout
    assert (tmp_path / 'bl').read_bytes() == b'203.0.113.7\n'
