"""The core package's shape (docs/design.md, "Layout"): one subpackage a
stage, imports running one way down the stages with no circle, small files each in the
design notes' table, an import inside a function only to spare start-up time, and a
default cron run that loads only the code it uses."""
import ast
import os
import re
import subprocess
import sys

import pytest

from conftest import CORE, ROOT

MAX_LINES = 450
# The stages from the bottom up: a module imports from its own stage or one below it.
STAGES = ('base', 'values', 'reading', 'formats', 'decision', 'lists', 'enforce', 'reporting', 'drivers')
# The package's own files outside the stages: its face (VERSION) and the command's entry.
TOP_FILES = {'__init__.py', '__main__.py'}


def core_files():
    """{path within the package ('drivers/run.py'): source} of every module of the core."""
    found = {}
    for directory, dirs, names in os.walk(str(CORE)):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in names:
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                found[os.path.relpath(path, str(CORE)).replace(os.sep, '/')] = open(path).read()
    return found


def module_of(path):
    """'drivers/run.py' -> 'drivers.run'; 'enforce/__init__.py' -> 'enforce'; '__init__.py' -> ''."""
    name = path[:-3].replace('/', '.')
    return name[:-len('.__init__')] if name.endswith('.__init__') else ('' if name == '__init__' else name)


def stage_of(module):
    return module.split('.')[0] if module.split('.')[0] in STAGES else ''


def imports(path, source, modules):
    """[(imported module, line, in a function)] of one file: every import of the package's own
    modules, at the top or inside a function, relative or as ``bot_detector.*``."""
    here = module_of(path)
    package = here if path.endswith('__init__.py') else here.rpartition('.')[0]
    tree = ast.parse(source)
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(sub) for sub in ast.walk(node) if sub is not node)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = package.split('.') if package else []
            base = parts[:len(parts) - (node.level - 1)]
            target = '.'.join(base + ([node.module] if node.module else []))
        elif node.module and (node.module == 'bot_detector' or node.module.startswith('bot_detector.')):
            target = node.module[len('bot_detector.'):] if '.' in node.module else ''
        else:
            continue
        for alias in node.names:
            submodule = (target + '.' + alias.name) if target else alias.name
            found.append((submodule if submodule in modules else target, node.lineno, id(node) in in_function))
    return found


@pytest.fixture(scope='module')
def graph():
    files = core_files()
    modules = set(module_of(path) for path in files)
    return files, dict((module_of(path), imports(path, source, modules)) for path, source in files.items())


def test_the_core_is_one_subpackage_a_stage_each_with_a_short_face():
    files = core_files()
    assert set(path for path in files if '/' not in path) == TOP_FILES
    assert set(path.split('/')[0] for path in files if '/' in path) == set(STAGES)
    assert all(path.count('/') == 1 for path in files if '/' in path)         # no deeper nesting
    for stage in STAGES:
        face = files[stage + '/__init__.py']
        tree = ast.parse(face)
        assert ast.get_docstring(tree), stage                   # says what it is and offers
        assert len(face.splitlines()) <= 20, stage
        assert [type(node) for node in tree.body[1:]] == [ast.ImportFrom, ast.Assign], stage     # __future__, __metaclass__


def test_no_core_file_over_450_lines():
    sizes = dict((path, len(source.splitlines())) for path, source in core_files().items())
    assert len(sizes) > 40
    assert dict((path, n) for path, n in sizes.items() if n > MAX_LINES) == {}


def test_a_file_name_borrows_no_prefix_from_a_sibling():
    """In the flat layout, formats_fast.py beside formats.py was a folder missing: a name is its concern."""
    for stage in STAGES:
        names = [path.split('/')[1][:-3] for path in core_files() if path.startswith(stage + '/')]
        assert [n for n in names if n.startswith(stage + '_')] == [], stage
        assert [(a, b) for a in names for b in names if a != b and b.startswith(a + '_') and a != '__init__'] == [], stage


def test_imports_run_down_the_stages_without_a_circle(graph):
    files, edges = graph
    upward = [(module, target, line) for module, found in edges.items() for target, line, dummy in found
              if stage_of(module) and stage_of(target) and STAGES.index(stage_of(target)) > STAGES.index(stage_of(module))]
    assert upward == []
    assert [(module, target) for module, found in edges.items() for target, dummy, dummy2 in found
            if stage_of(module) and not stage_of(target) and target != ''] == []
    # No circle among modules either, imports inside functions included (a depth-first walk).
    state, circles = {}, []

    def walk(module, path):
        state[module] = 'open'
        for target, dummy, dummy2 in edges.get(module, []):
            if target == module or target not in edges:
                continue
            if state.get(target) == 'open':
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                walk(target, path + [target])
        state[module] = 'done'
    for module in sorted(edges):
        if module not in state:
            walk(module, [module])
    assert circles == []


def test_the_layout_test_finds_a_circle_and_an_upward_import():
    """The checks above, on a package made to break them: they can fail."""
    modules = {'base.a', 'base.b', 'reading.c'}
    found = imports('base/a.py', 'from __future__ import absolute_import\nfrom .b import x\n', modules)
    found += imports('base/a.py', 'def f():\n    from ..reading.c import y\n', modules)
    assert found == [('base.b', 2, False), ('reading.c', 2, True)]
    assert STAGES.index(stage_of('reading.c')) > STAGES.index(stage_of('base.a'))


def test_an_import_inside_a_function_says_why(graph):
    """For start-up cost only, and it says so: an import that hides a circle has no place."""
    files, dummy = graph
    silent = []
    for path, source in files.items():
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)) and '#' not in lines[sub.end_lineno - 1]:
                        silent.append('%s:%d' % (path, sub.lineno))
    assert silent == []


def core_table():
    """The paths of the design notes' table of the core's files (header ``| stage | files |``)."""
    design = (ROOT / 'docs' / 'design.md').read_text()
    assert design.count('| stage | files |\n|---|---|\n') == 1
    rows = design.split('| stage | files |\n|---|---|\n', 1)[1].split('\n\n', 1)[0].splitlines()
    assert rows and all(row.startswith('| ') for row in rows)
    paths = set()
    for row in rows:
        stage = re.match(r'\| `(\w+)/` \|', row)
        assert stage, row
        paths.update('%s/%s' % (stage.group(1), name) for name in re.findall(r'`(\w+\.py)`', row.split(' | ', 1)[1]))
    return paths


def test_every_core_file_is_in_the_design_notes_layout_table():
    files = set(path for path in core_files() if '/' in path and not path.endswith('/__init__.py'))
    table = core_table()
    assert files - table == set()
    assert table - files == set()


def test_the_role_installs_every_stage():
    """roles/bot_detector/vars/main.yml names the subpackages it copies (enforce/ apart,
    with enforcement only)."""
    vars_text = (ROOT / 'roles' / 'bot_detector' / 'vars' / 'main.yml').read_text()
    listed = re.search(r'^bot_detector_core_packages: \[([\w, ]+)\]$', vars_text, re.M).group(1).split(', ')
    assert sorted(listed + ['enforce']) == sorted(STAGES)


# What a default cron run (combined, the spec's rules, state_dir, no enforcement, no metrics)
# imports of the core: each module is start-up paid at every run, 144 runs a day.
CRON_RUN_MODULES = {
    'bot_detector', 'bot_detector.drivers.cli', 'bot_detector.drivers.run', 'bot_detector.drivers.after_change',
    'bot_detector.base', 'bot_detector.base.clock', 'bot_detector.base.errors', 'bot_detector.base.messages', 'bot_detector.base.text',
    'bot_detector.values', 'bot_detector.values.config', 'bot_detector.values.settings', 'bot_detector.values.log_formats',
    'bot_detector.values.answer_settings',
    'bot_detector.values.checks', 'bot_detector.lists.allow', 'bot_detector.drivers.format_hint',
    'bot_detector.values.fleet_settings',
    'bot_detector.values.campaign_settings',    # rows of the one table: the command's options are built from all of them
    'bot_detector.reading', 'bot_detector.reading.chunks', 'bot_detector.reading.incremental', 'bot_detector.reading.logfile',
    'bot_detector.reading.spill', 'bot_detector.reading.budget', 'bot_detector.reading.state', 'bot_detector.reading.saves', 'bot_detector.reading.tally',
    'bot_detector.decision', 'bot_detector.decision.addresses', 'bot_detector.decision.choice', 'bot_detector.decision.rules',
    'bot_detector.lists', 'bot_detector.lists.content', 'bot_detector.lists.writer',
    'bot_detector.reporting', 'bot_detector.reporting.metrics', 'bot_detector.reporting.result', 'bot_detector.drivers',
}


def imported_by(args, tmp_path):
    """The modules a run of the command imports, as the role runs it (``python3 -S``)."""
    env = dict(os.environ, TZ='UTC', LC_ALL='C')
    out = subprocess.run([sys.executable, '-S', '-X', 'importtime', str(CORE / '__main__.py')] + [str(a) for a in args],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, cwd=str(tmp_path))
    return out.stdout, set(line.rsplit(b'|', 1)[1].strip().decode() for line in out.stderr.splitlines() if line.startswith(b'import time:'))


def test_a_cron_run_imports_only_what_it_uses(tmp_path, files):
    """No code of the other formats, enforcement, follow mode, precise mode, the other modes
    (unblock, status, expiry) or the config file's parser: each is imported where it is used."""
    import loggen
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(1763698423, previous={'203.0.113.7': 1100}))
    stdout, imported = imported_by(files.options() + ['--server-ip', '10.0.0.5', '--now', '2025-11-21 04:13:43',
                                                      '--state-dir', tmp_path / 'state', log], tmp_path)
    assert b'Blocking IP address: 203.0.113.7' in stdout
    assert set(name for name in imported if name.startswith('bot_detector')) == CRON_RUN_MODULES
    assert imported & {'tempfile', 'configparser', 'pickle', 'ipaddress', 'calendar'} == set()


def test_version_loads_no_stage_below_the_settings(tmp_path):
    """``--version`` and ``--help`` (and so every run's start) pay for the command line only."""
    stdout, imported = imported_by(['--version'], tmp_path)
    assert stdout.startswith(b'bot-detector.sh ')
    loaded = set(name for name in imported if name.startswith('bot_detector.'))
    assert set(stage_of(name[len('bot_detector.'):]) for name in loaded) == {'base', 'values', 'drivers'}
    assert 'bot_detector.drivers.run' not in loaded


def test_a_campaign_run_without_answer_lists_imports_no_list_code_nor_digests(tmp_path, files):
    """A campaign run whose challenges have no list only says them (with one warning): it imports
    none of the answer lists' code (their writer, history, removal) and no hashlib (the allow-list's
    spans are kept by its lines, not by a digest), each a few milliseconds of every such run."""
    lines = ''.join('203.0.113.%d - - [21/Nov/2026:10:%02d:00 +0000] "GET /job/%d HTTP/1.1" 200 512 "-" "curl/8"\n'
                    % (i, i, i) for i in range(1, 17))
    log = tmp_path / 'access.log'
    log.write_text(lines)
    files.exclusions.write_text('192.0.2.0/24\n')
    stdout, imported = imported_by(files.options() + ['--server-ip', '10.0.0.5', '--now', '2026-11-21 10:50:00', '--campaigns',
                                                      log], tmp_path)
    assert b'Challenging IP address: 203.0.113.0/24 (RPH=16, network 203.0.113.0/24, 16 addresses)' in stdout
    assert imported & {'hashlib', 'bot_detector.lists.answers', 'bot_detector.lists.history', 'bot_detector.lists.removal'} == set()
