"""The core is stdlib-only and runs on Python 3.8 to 3.13: compile it, import it and
run the command on each, and compare the output with this interpreter's."""
import glob
import os
import shutil
import subprocess

import pytest

import loggen
from conftest import CORE, mask_duration, run_core

VERSIONS = ['3.8', '3.9', '3.10', '3.11', '3.12', '3.13']


def interpreter(version):
    """pyenv's build of that version, else one on PATH (pyenv's shims only work for the active version)."""
    candidates = sorted(glob.glob(os.path.expanduser('~/.pyenv/versions/%s.*/bin/python%s' % (version, version))))
    if candidates:
        return candidates[-1]
    found = shutil.which('python' + version)
    return found if found and '/shims/' not in found else None


@pytest.mark.parametrize('version', VERSIONS)
def test_core_runs_on(version, tmp_path):
    python = interpreter(version)
    if python is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('Python %s is not installed (pyenv)' % version)
        pytest.skip('Python %s is not installed' % version)
    env = dict(os.environ, TZ='UTC', PYTHONDONTWRITEBYTECODE='1')
    sources = [str(f) for f in sorted(CORE.glob('*.py'))]
    subprocess.run([python, '-c', 'import ast, sys\nfor f in sys.argv[1:]: ast.parse(open(f).read(), f)'] + sources,
                   check=True, env=env)
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(1795234423, previous={'203.0.113.7': 1200}, current={'2001:db8::9': 1000}))
    outputs = []
    for runner in ('this', 'other'):
        d = tmp_path / runner
        d.mkdir()
        args = ['--blocklist', d / 'b', '--exclusions', d / 'e', '--activity-log', d / 'a', '--server-ip', '10.0.0.5',
                '--now', '2026-11-21 04:13:43', log]
        if runner == 'this':
            proc = run_core(args)
        else:
            proc = subprocess.run([python, '-I', str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, check=False)
        assert proc.returncode == 0, proc.stderr
        outputs.append((mask_duration(proc.stdout), (d / 'b').read_bytes()))
    assert outputs[0] == outputs[1]
    assert b'Blocking IP address: 203.0.113.7 (1200 requests)' in outputs[1][0]
