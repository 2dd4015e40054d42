"""The bot_detector role with a fleet store (issue 37): the command it installs runs Debian's
python3 without -S then, so that redis-py (Debian's python3-redis, in dist-packages, which only
site puts on the path) imports, and with -S otherwise (the standard library only). Rendered
by real Ansible from the role's template, run with the host's /usr/bin/python3. The password
file, its mode and the config file on a host: molecule/fleet."""
import os
import shlex
import subprocess

import pytest

from test_role_scheduler import render

PYTHON = '/usr/bin/python3'
REDIS_PY = '/usr/lib/python3/dist-packages/redis/__init__.py'


def exec_line(path):
    line = [l for l in path.read_text().splitlines() if l.startswith('exec ')][0]
    return shlex.split(line)[1:]


def imports_redis(argv):
    """Whether the command's interpreter, with the command's flags, imports redis."""
    flags = [arg for arg in argv[1:] if arg.startswith('-') and not arg.startswith('--')][:1]
    flags = [flag for flag in flags if flag == '-S']
    got = subprocess.run([argv[0]] + flags + ['-c', 'import redis'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, check=False)
    return got.returncode == 0


@pytest.mark.parametrize('store, plain', [(None, True), ('redis://bot-detector@10.0.0.9:6379/0', False),
                                          ('rediss://bot-detector@store.internal:6380/0', False)])
def test_the_command_sees_python3_redis_only_with_a_fleet_store(tmp_path, store, plain):
    if not os.path.exists(REDIS_PY):
        if os.environ.get('CI') == 'true':
            pytest.fail('python3-redis is missing: tests/tools/install-prereqs.sh installs it')
        pytest.skip('needs python3-redis')
    variables = {'bot_detector_python': PYTHON, 'bot_detector_lib_dir': str(tmp_path / 'lib')}
    if store:
        variables['bot_detector_fleet_store'] = store
    argv = exec_line(render(tmp_path, variables)['bot-detector.sh'])
    assert argv[0] == PYTHON
    assert ('-S' in argv) == plain, argv
    assert imports_redis(argv) == (not plain)
