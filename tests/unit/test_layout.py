"""The core package's shape: small files, each one in the design notes' table of concerns
(docs/design.md), each imported only by the runs that use it."""
import os
import re

from conftest import ROOT

PACKAGE = ROOT / 'plugins' / 'module_utils' / 'bot_detector'
MAX_LINES = 450


def test_no_core_file_over_450_lines():
    sizes = dict((path.name, len(path.read_text().splitlines())) for path in PACKAGE.glob('*.py'))
    assert len(sizes) > 10
    assert dict((name, n) for name, n in sizes.items() if n > MAX_LINES) == {}


def core_table():
    """The file names of the design notes' table of the core's files (header ``| file | concern |``)."""
    design = (ROOT / 'docs' / 'design.md').read_text()
    assert design.count('| file | concern |\n|---|---|\n') == 1
    rows = design.split('| file | concern |\n|---|---|\n', 1)[1].split('\n\n', 1)[0].splitlines()
    assert rows and all(row.startswith('| ') for row in rows)
    return set(name for row in rows for name in re.findall(r'`([\w.]+\.py)`', row.split(' | ')[0]))


def test_every_core_file_is_in_the_design_notes_layout_table():
    table = core_table()
    files = set(path.name for path in PACKAGE.glob('*.py')) - {'__init__.py'}
    assert files - table == set()
    assert table - files == set()


def test_a_cron_run_imports_only_what_it_uses(tmp_path, files):
    """Every run pays for each module it imports (a cron run is mostly start-up): the code
    of the other modes and options (unblock, status, expiry, metrics writing, workers, the
    config file's parser) is imported where it is used."""
    import subprocess
    import sys

    import loggen
    from conftest import CORE
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(1763698423, previous={'203.0.113.7': 1100}))
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    args = [sys.executable, '-S', '-X', 'importtime', str(CORE / '__main__.py')] + [str(a) for a in files.options()]
    out = subprocess.run(args + ['--server-ip', '10.0.0.5', '--now', '2025-11-21 04:13:43', '--state-dir', str(tmp_path / 'state'),
                                 str(log)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    assert b'Blocking IP address: 203.0.113.7' in out.stdout
    imported = set(line.rsplit(b'|', 1)[1].strip().decode() for line in out.stderr.splitlines() if line.startswith(b'import time:'))
    assert 'bot_detector.incremental' in imported and 'json' in imported          # what it uses: imported
    unused = {'tempfile', 'configparser', 'pickle', 'bot_detector.expiry', 'bot_detector.history',
              'bot_detector.unblock', 'bot_detector.status', 'bot_detector.replace', 'bot_detector.precise'}
    assert imported & unused == set()
