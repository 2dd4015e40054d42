"""roles/*/README.md is generated from meta/argument_specs.yml by
tests/tools/render_role_readme.py (`make docs`): the README in the checkout is current,
names every variable, and the generator renders any kind of option."""
import subprocess
import sys
import textwrap

import yaml

from conftest import ROOT

GENERATOR = ROOT / 'tests' / 'tools' / 'render_role_readme.py'


def generate(root, *flags):
    return subprocess.run([sys.executable, str(GENERATOR), '--root', str(root)] + list(flags),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)


def test_checked_in_readme_is_current():
    proc = generate(ROOT, '--check')
    assert proc.returncode == 0, 'run `make docs`: ' + proc.stderr


def test_readme_names_every_variable_with_its_default():
    specs = yaml.safe_load((ROOT / 'roles/bot_detector/meta/argument_specs.yml').read_text())['argument_specs']
    readme = (ROOT / 'roles/bot_detector/README.md').read_text()
    rows = dict((line.split('|')[1].strip(' `'), line) for line in readme.splitlines() if line.startswith('| `'))
    for name, spec in specs['main']['options'].items():
        assert name in rows, name
        if spec.get('default') not in (None, [], ''):
            default = spec['default']
            shown = default[0] if isinstance(default, list) else default
            assert str(shown).lower() in rows[name].lower(), (name, rows[name])


def make_role(root, spec_text, meta_text=None):
    role = root / 'roles' / 'demo'
    (role / 'meta').mkdir(parents=True)
    (role / 'meta' / 'argument_specs.yml').write_text(textwrap.dedent(spec_text))
    if meta_text is not None:
        (role / 'meta' / 'main.yml').write_text(textwrap.dedent(meta_text))
    return role


SPEC = '''\
    ---
    argument_specs:
      main:
        short_description: Demo role
        description:
          - First paragraph with C(code) and O(demo_mode=fast).
          - Second, naming O(jobboard.bot_detector.bot_detector#module:mode=report).
        options:
          demo_mode:
            description: How it runs | with a pipe.
            type: str
            choices: [fast, "slow: careful"]
            default: fast
          demo_paths:
            description:
              - Paths to read.
              - A second sentence.
            type: list
            elements: path
            default: [/var/log/a.log, "/var/log/b #1.log"]
          demo_required:
            description: Must be given.
            type: int
            required: true
          demo_limits:
            description: Limits.
            type: dict
            options:
              soft:
                description: Soft limit.
                type: int
                default: 5
          demo_rules:
            description: Rules.
            type: list
            elements: dict
            options:
              pattern:
                description: A regex.
                type: str
                required: true
          demo_flag:
            type: bool
            default: false
      remove:
        short_description: Remove the demo
        options: {}
    '''


def test_renders_every_kind_of_option(tmp_path):
    role = make_role(tmp_path, SPEC, '''\
        galaxy_info:
          license: MIT
          min_ansible_version: "2.16"
        ''')
    proc = generate(tmp_path)
    assert proc.returncode == 0, proc.stderr
    readme = (role / 'README.md').read_text()
    lines = readme.splitlines()
    assert lines[0].startswith('<!-- Generated from meta/argument_specs.yml')
    assert '# jobboard.bot_detector.demo' in lines
    assert 'First paragraph with `code` and `demo_mode=fast`.' in lines
    assert 'Second, naming `mode=report`.' in lines
    assert '- ansible-core 2.16 or newer on the controller.' in lines
    rows = [line for line in lines if line.startswith('| `')]
    assert rows == [
        '| `demo_mode` | str | `fast` | How it runs \\| with a pipe. Choices: `fast`, `"slow: careful"`. |',
        '| `demo_paths` | list of path | `["/var/log/a.log", "/var/log/b #1.log"]` | Paths to read. A second sentence. |',
        '| `demo_required` | int |  | **Required.** Must be given. |',
        '| `demo_limits` | dict |  | Limits. |',
        '| `demo_limits.soft` | int | `5` | Soft limit. |',
        '| `demo_rules` | list of dict |  | Rules. |',
        '| `demo_rules[].pattern` | str |  | **Required.** A regex. |',
        '| `demo_flag` | bool | `false` |  |',
    ]
    assert '## Entry point `remove`' in lines and 'Remove the demo.' in lines
    assert lines[-1] == 'MIT'
    # What it wrote is what --check expects.
    assert generate(tmp_path, '--check').returncode == 0


def test_check_names_a_stale_readme_and_changes_nothing(tmp_path):
    role = make_role(tmp_path, SPEC)
    assert generate(tmp_path).returncode == 0
    readme = role / 'README.md'
    # A variable added to the spec but not to the README.
    spec = yaml.safe_load((role / 'meta' / 'argument_specs.yml').read_text())
    spec['argument_specs']['main']['options']['demo_new'] = {'type': 'str', 'description': 'New.'}
    (role / 'meta' / 'argument_specs.yml').write_text(yaml.safe_dump(spec))
    before = readme.read_bytes()
    proc = generate(tmp_path, '--check')
    assert proc.returncode == 1
    assert proc.stderr == 'roles/demo/README.md is stale: it differs from meta/argument_specs.yml; run `make docs`\n'
    assert readme.read_bytes() == before
    assert generate(tmp_path).returncode == 0 and '`demo_new`' in readme.read_text()


def test_a_missing_readme_is_stale(tmp_path):
    make_role(tmp_path, SPEC)
    proc = generate(tmp_path, '--check')
    assert proc.returncode == 1 and 'roles/demo/README.md is stale' in proc.stderr
