"""--status shows the enforcement point's state (issue 39 §5): in sync or not, the entries
loaded, when they were loaded; read from what enforcement records, nothing loaded by it.
nginx here, with a geo file in a tmp dir and `true` as its test and reload commands."""
import json
import os

from conftest import run_core


def nginx_options(tmp_path):
    return ['--enforcement', 'nginx', '--nginx-geo-file', tmp_path / 'blocked.conf',
            '--nginx-test-command', 'true', '--nginx-reload-command', 'true']


def status(files, tmp_path, *extra):
    got = run_core(files.options() + nginx_options(tmp_path) + ['--status'] + list(extra))
    assert got.returncode == 0, got.stderr
    return got.stdout.decode()


def test_status_shows_the_enforcement_points_state(tmp_path, files):
    files.base.mkdir(parents=True, exist_ok=True)
    files.blocklist.write_bytes(b'203.0.113.7\n198.51.100.0/24\n198.51.100.9\n')
    # Nothing loaded yet.
    assert 'Enforcement nginx: nothing loaded, not in sync with the blocklist\n' in status(files, tmp_path)
    synced = run_core(files.options() + nginx_options(tmp_path) + ['--enforce-now'])
    assert synced.returncode == 0, synced.stderr
    geo = tmp_path / 'blocked.conf'
    os.utime(str(geo), (1795234423, 1795234423))
    before = geo.read_bytes()
    text = status(files, tmp_path)
    assert 'Enforcement nginx: in sync, 2 entries loaded at Sat Nov 21 04:13:43 UTC 2026\n' in text, text
    doc = json.loads(status(files, tmp_path, '--json'))
    assert doc['enforcement'] == {'backend': 'nginx', 'in_sync': True, 'entries': 2, 'loaded_epoch': 1795234423}
    # The blocklist changed, not loaded since: not in sync; status loads nothing.
    with open(str(files.blocklist), 'ab') as handle:
        handle.write(b'192.0.2.1\n')
    assert 'Enforcement nginx: not in sync with the blocklist, 2 entries loaded at ' in status(files, tmp_path)
    assert geo.read_bytes() == before


def test_status_without_enforcement_says_nothing_of_it(tmp_path, files):
    files.base.mkdir(parents=True, exist_ok=True)
    files.blocklist.write_bytes(b'203.0.113.7\n')
    got = run_core(files.options() + ['--status'])
    assert got.returncode == 0 and b'Enforcement' not in got.stdout
    assert 'enforcement' not in json.loads(run_core(files.options() + ['--status', '--json']).stdout)
