"""The core package's shape: small files, each one in the README's table of concerns."""
import re

from conftest import ROOT

PACKAGE = ROOT / 'plugins' / 'module_utils' / 'bot_detector'
MAX_LINES = 450


def test_no_core_file_over_450_lines():
    sizes = dict((path.name, len(path.read_text().splitlines())) for path in PACKAGE.glob('*.py'))
    assert len(sizes) > 10
    assert dict((name, n) for name, n in sizes.items() if n > MAX_LINES) == {}


def test_every_core_file_is_in_the_readme_layout_table():
    readme = (ROOT / 'README.md').read_text()
    table = set(name for row in re.findall(r'^\| (`[^|]+`) \|', readme, re.M) for name in re.findall(r'`([\w.]+\.py)`', row))
    files = set(path.name for path in PACKAGE.glob('*.py')) - {'__init__.py'}
    assert files - table == set()
    assert table - files == set()
