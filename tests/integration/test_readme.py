"""The README's commands work as written: its install and first steps run, line for line, in a
fresh `git clone` of this repository (what is committed), as root; every other shell block
of the README is marked as needing a real fleet.

The clone gets this checkout's venv as its `.venv` (a link; making it anew takes minutes and
the package index), with `requirements-dev.txt` dated before the venv so that `make setup`
keeps it; everything else (`make run`, the collection link, the build) is the clone's own.
"""
import os
import re
import subprocess

import pytest

from conftest import ROOT, require_root

MARK = re.compile(r'<!-- commands: (need a real [^;]+; not run by the tests|run by (tests/\S+)) -->\n```sh\n(.*?)```', re.S)
SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def shell_blocks(readme):
    """{section title: [(mark, commands)]} of the README's shell blocks, each checked to be marked."""
    blocks = {}
    for section in re.split(r'(?m)^## ', readme)[1:]:
        title = section.splitlines()[0]
        assert section.count('```sh\n') == len(MARK.findall(section)), 'a shell block without a mark in %s' % title
        blocks[title] = [(m.group(2), m.group(3)) for m in MARK.finditer(section)]
    return blocks


def run(script, cwd, env):
    got = subprocess.run(['bash', '-euo', 'pipefail', '-c', script], cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=900, check=False)
    assert got.returncode == 0, got.stdout[-6000:]
    return got.stdout


@pytest.fixture(scope='module')
def clone(tmp_path_factory):
    require_root('the README\'s first steps run as root')
    base = tmp_path_factory.mktemp('readme')
    clone = base / 'bot_detector'
    subprocess.run(['git', 'clone', '-q', str(ROOT), str(clone)], check=True)
    venv = os.path.realpath(str(ROOT / '.venv'))
    installed = os.path.join(venv, 'bin', '.installed')
    assert os.path.exists(installed), 'make setup first'
    os.symlink(venv, str(clone / '.venv'))
    then = os.stat(installed).st_mtime - 60
    os.utime(str(clone / 'requirements-dev.txt'), (then, then))
    env = clean_env(base / 'home')
    # The shared venv must not be made anew through the link: make agrees that it is current.
    subprocess.run(['make', '-q', '.venv/bin/.installed'], cwd=str(clone), env=env, check=True)
    return base, clone


def clean_env(home):
    home.mkdir(exist_ok=True)
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(('ANSIBLE_', 'MAKE', 'MFLAGS', 'VIRTUAL_ENV', 'PYTEST', 'PYTHON')))
    env.update(HOME=str(home), PATH=SYSTEM_PATH, LC_ALL='C.UTF-8')
    return env


def test_every_shell_block_of_the_readme_is_run_here_or_marked():
    blocks = shell_blocks((ROOT / 'README.md').read_text())
    tested = [(title, commands) for title, found in blocks.items() for mark, commands in found if mark]
    assert [title for title, commands in tested] == ['Install', 'Install', 'First steps']
    for mark in [mark for found in blocks.values() for mark, commands in found if mark]:
        assert mark == 'tests/integration/test_readme.py'


def test_first_steps_in_a_fresh_clone(clone):
    base, checkout = clone
    (script,) = [commands for mark, commands in shell_blocks((checkout / 'README.md').read_text())['First steps'] if mark]
    cron_before = sorted(os.listdir('/etc/cron.d'))
    config_before = os.path.exists('/etc/bot-detector')
    out = run(script, checkout, clean_env(base / 'home'))
    # 1. make run: the sample's scrapers blocked, in ./scratch.
    assert 'Blocking IP address: ' in out and '(exit status 0)' in out
    assert (checkout / 'scratch' / 'ipblocklist.txt').read_text().strip()
    # 2. make setup: the checkout linked as the collection.
    assert os.path.realpath(str(checkout / '.build' / 'ansible_collections' / 'jobboard' / 'bot_detector')) == str(checkout)
    # 3. the module in check mode: what it would block, as a diff, nothing written.
    assert re.search(r'localhost \| CHANGED => \{', out), out[-3000:]
    assert re.search(r'(?m)^\+\d+\.\d+\.\d+\.\d+$', out), out[-3000:]
    assert not (checkout / 'scratch' / 'new-blocklist.txt').exists()
    assert not (checkout / 'scratch' / 'activity.log').exists()
    # 4. the deployment's dry run on this machine: planned, nothing changed.
    assert re.search(r'localhost +: ok=\d+ +changed=[1-9]\d* +unreachable=0 +failed=0', out), out[-3000:]
    assert '/etc/cron.d/bot-detector' in out
    assert sorted(os.listdir('/etc/cron.d')) == cron_before
    assert os.path.exists('/etc/bot-detector') == config_before


def test_install_the_built_collection(clone):
    """A user with ansible-core alone (no `make setup`): the README's build in the checkout,
    then its install where the tarball is."""
    base, checkout = clone
    build, script = [commands for mark, commands in shell_blocks((checkout / 'README.md').read_text())['Install'] if mark]
    assert 'make' not in build.split(), 'the user path builds with ansible-galaxy, not make (which needs make setup)'
    user = clean_env(base / 'home-user')
    user['PATH'] = str(checkout / '.venv' / 'bin') + ':' + SYSTEM_PATH      # a user with Ansible installed
    run(build, checkout, user)
    downloads = base / 'downloads'
    downloads.mkdir()
    (tarball,) = checkout.glob('jobboard-bot_detector-*.tar.gz')
    os.rename(str(tarball), str(downloads / tarball.name))
    out = run(script, downloads, user)
    installed = base / 'home-user' / '.ansible' / 'collections' / 'ansible_collections' / 'jobboard' / 'bot_detector'
    assert (installed / 'MANIFEST.json').exists()
    assert (installed / 'CODE_OF_CONDUCT.md').exists()
    assert 'Counts requests to job-listing pages' in out
