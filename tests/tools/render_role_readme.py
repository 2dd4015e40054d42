"""Renders each role's README.md from its meta/argument_specs.yml, the one place its
variables are declared (types, defaults, choices, descriptions), so the README cannot
drift from what the role checks.

    python3 tests/tools/render_role_readme.py            rewrite roles/*/README.md
    python3 tests/tools/render_role_readme.py --check    exit 1 naming each README that is stale

`make docs` runs it. Needs PyYAML (the venv's).
"""
import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = 'jobboard.bot_detector'
GENERATOR = 'tests/tools/render_role_readme.py'
# Said after a role's example play: the collection's playbooks that apply it.
PLAYBOOK_NOTES = {
    'bot_detector': ['The collection ships this play as `jobboard.bot_detector.site` (playbooks/site.yml):',
                     '`ansible-playbook -i your_inventory jobboard.bot_detector.site --check --diff`, then without',
                     '`--check`, deploys to every host of group `web`.', ''],
}


# Ansible's documentation markup (C(), O(), V(), ...) as Markdown.
def _code(match):
    # O(ns.coll.plugin#type:option=value) names another plugin's option: keep option=value.
    text = match.group(1)
    if '#' in text:
        text = text.split('#', 1)[1].split(':', 1)[-1]
    return '`%s`' % text


_MARKUP = [
    (re.compile(r'L\(([^)]+?),\s*([^)]+)\)'), lambda m: '[%s](%s)' % (m.group(1), m.group(2))),
    (re.compile(r'U\(([^)]+)\)'), lambda m: m.group(1)),
    (re.compile(r'I\(([^)]+)\)'), lambda m: '*%s*' % m.group(1)),
    (re.compile(r'B\(([^)]+)\)'), lambda m: '**%s**' % m.group(1)),
    (re.compile(r'\b(?:C|V|O|RV|E|M)\(([^)]+)\)'), _code),
    (re.compile(r'HORIZONTALLINE'), lambda m: ''),
]


def markup(text):
    text = str(text)
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text


def paragraphs(description):
    """An option's or entry point's description (a string or a list) as paragraphs."""
    if description is None:
        return []
    items = description if isinstance(description, list) else [description]
    return [markup(' '.join(str(item).split())) for item in items]


def cell(text):
    """Text safe inside one Markdown table cell."""
    return text.replace('|', '\\|').replace('\n', ' ')


def literal(value):
    """A default or a choice as YAML would read it back, in code style."""
    if isinstance(value, str):
        shown = value if value and value.strip() == value and not re.search(r'[:#{}\[\],&*!|>\'"%@`]', value) \
            else json.dumps(value)
    else:
        shown = json.dumps(value)
    return '`%s`' % shown.replace('`', "'")


def type_of(spec):
    kind = spec.get('type', 'str')
    if kind == 'list' and spec.get('elements'):
        return 'list of %s' % spec['elements']
    return kind


def option_rows(options, prefix=''):
    """One table row per option, in the spec's order; suboptions after their parent, as
    parent.child (parent[].child for a list of dicts)."""
    rows = []
    for name in options:
        spec = options[name] or {}
        full = prefix + name
        notes = []
        if spec.get('required'):
            notes.append('**Required.**')
        notes.extend(paragraphs(spec.get('description')))
        if spec.get('choices') is not None:
            notes.append('Choices: %s.' % ', '.join(literal(c) for c in spec['choices']))
        if spec.get('aliases'):
            notes.append('Aliases: %s.' % ', '.join('`%s`' % a for a in spec['aliases']))
        if spec.get('version_added'):
            notes.append('Added in %s.' % spec['version_added'])
        default = literal(spec['default']) if 'default' in spec else ''
        rows.append('| `%s` | %s | %s | %s |' % (full, type_of(spec), cell(default), cell(' '.join(notes))))
        if spec.get('options'):
            sub = '%s[].' % full if spec.get('type') == 'list' else '%s.' % full
            rows.extend(option_rows(spec['options'], sub))
    return rows


def render(role_dir):
    role = role_dir.name
    specs = yaml.safe_load((role_dir / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    meta_path = role_dir / 'meta' / 'main.yml'
    galaxy = (yaml.safe_load(meta_path.read_text()) or {}).get('galaxy_info', {}) if meta_path.exists() else {}
    fqcn = '%s.%s' % (COLLECTION, role)
    out = ['<!-- Generated from meta/argument_specs.yml by %s: edit that file, then run `make docs`. -->' % GENERATOR,
           '', '# %s' % fqcn, '']
    main = specs.get('main', {})
    if main.get('short_description'):
        out += [markup(main['short_description']).rstrip('.') + '.', '']
    for para in paragraphs(main.get('description')):
        out += [para, '']
    requirements = []
    if galaxy.get('min_ansible_version'):
        requirements.append('ansible-core %s or newer on the controller.' % galaxy['min_ansible_version'])
    for platform in galaxy.get('platforms') or []:
        requirements.append('Hosts: %s %s.' % (platform.get('name'), ', '.join(str(v) for v in platform.get('versions') or [])))
    if requirements:
        out += ['## Requirements', ''] + ['- %s' % r for r in requirements] + ['']
    for entry in sorted(specs, key=lambda e: (e != 'main', e)):
        spec = specs[entry] or {}
        title = 'Role variables' if entry == 'main' else 'Entry point `%s`' % entry
        out += ['## %s' % title, '']
        if entry != 'main':
            if spec.get('short_description'):
                out += [markup(spec['short_description']).rstrip('.') + '.', '']
            for para in paragraphs(spec.get('description')):
                out += [para, '']
        out += ['Checked against `meta/argument_specs.yml` before any task runs.' if entry == 'main'
                else 'Variables of this entry point:', '']
        options = spec.get('options') or {}
        if options:
            out += ['| variable | type | default | meaning |', '|---|---|---|---|'] + option_rows(options) + ['']
        else:
            out += ['None.', '']
    out += ['## Example playbook', '', '```yaml', '- name: Apply %s' % fqcn, '  hosts: web', '  become: true',
            '  gather_facts: false', '  roles:', '    - role: %s' % fqcn, '```', '']
    out += PLAYBOOK_NOTES.get(role, [])
    if galaxy.get('license'):
        out += ['## License', '', galaxy['license'] if isinstance(galaxy['license'], str)
                else ', '.join(galaxy['license']), '']
    return '\n'.join(out).rstrip('\n') + '\n'


def role_dirs(root):
    return sorted(p.parent.parent for p in (root / 'roles').glob('*/meta/argument_specs.yml'))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--check', action='store_true', help='change nothing; exit 1 if a README is stale')
    parser.add_argument('--root', type=Path, default=ROOT, help='the collection checkout (default: this one)')
    args = parser.parse_args(argv)
    stale = []
    for role_dir in role_dirs(args.root):
        readme = role_dir / 'README.md'
        text = render(role_dir)
        current = readme.read_text() if readme.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(readme.relative_to(args.root))
        else:
            readme.write_text(text)
            print('wrote %s' % readme.relative_to(args.root))
    for path in stale:
        print('%s is stale: it differs from meta/argument_specs.yml; run `make docs`' % path, file=sys.stderr)
    return 1 if stale else 0


if __name__ == '__main__':
    sys.exit(main())
