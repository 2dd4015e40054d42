"""--status writes nothing (issue 44, item 9): not root's lock directory (/run/bot-detector: neither
made when absent nor its mode changed when present), not the state directory, the metrics file,
the enforcement's files or the lists. Root's own path is seen in a private mount namespace whose
/run is a tmpfs the test mounts, and a network namespace of its own (this machine's /run and
ruleset are never touched)."""
import os
import shutil
import subprocess
import sys

import pytest

import loggen
from conftest import CORE, in_timezone, require_root

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423

IN_NAMESPACE = r'''
set -u
mount -t tmpfs -o mode=0755 bd-test-run /run || exit 90
"$@" >/dev/null 2>"$SCRATCH/stderr-1"; echo "rc=$?"
if [ -e /run/bot-detector ]; then echo "made: $(stat -c %a /run/bot-detector)"; else echo absent; fi
mkdir -m 0750 /run/bot-detector
"$@" --json >/dev/null 2>"$SCRATCH/stderr-2"; echo "rc=$?"
echo "mode: $(stat -c %a /run/bot-detector) entries: $(ls -A /run/bot-detector | wc -l)"
'''


def snapshot(top):
    """Every path under ``top`` with its size and modification and change times."""
    found = {}
    for directory, dirs, names in os.walk(str(top)):
        for name in dirs + names:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            found[path] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    return found


@pytest.mark.parametrize('extra', [[], ['--enforcement', 'nginx'], ['--enforcement', 'nftables'],
                                   ['--rules', 'precise', '--ban-time', '1d']],
                         ids=['plain', 'nginx', 'nftables', 'precise'])
def test_status_writes_nothing_not_even_the_lock_directory(tmp_path, extra):
    require_root('a private mount namespace and its /run need root')
    if shutil.which('unshare') is None:
        pytest.fail('unshare (util-linux) is missing')
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    files = tmp_path / 'files'
    files.mkdir()
    (files / 'blocklist').write_bytes(b'203.0.113.7\n')
    (files / 'allow').write_bytes(b'198.51.100.0/24\n')
    (files / 'activity').write_bytes(b'')
    log = files / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'192.0.2.9': 1200})))
    command = [sys.executable, str(CORE), '--status', '--blocklist', files / 'blocklist', '--exclusions', files / 'allow',
               '--activity-log', files / 'activity', '--server-ip', '10.0.0.5', '--now', NOW,
               '--state-dir', files / 'state', '--metrics-file', files / 'metrics.prom',
               '--nginx-geo-file', files / 'geo.conf'] + extra + [log]
    before = snapshot(files)
    # --net: nftables' status reads the ruleset of a network namespace of its own, empty.
    got = subprocess.run(['unshare', '--mount', '--net', '--propagation', 'private', 'sh', '-c', IN_NAMESPACE, 'sh']
                         + [str(a) for a in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                         env=dict(os.environ, SCRATCH=str(scratch), TZ='UTC', LC_ALL='C.UTF-8'), timeout=120)
    report = got.stdout.decode().split('\n')
    assert got.returncode == 0, (got.stdout, got.stderr)
    assert report[:4] == ['rc=0', 'absent', 'rc=0', 'mode: 750 entries: 0'], (
        report, (scratch / 'stderr-1').read_text(), (scratch / 'stderr-2').read_text())
    assert snapshot(files) == before
