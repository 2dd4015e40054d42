"""Every cross-reference from the plugins' and the role's documentation to the README or a
guide resolves (issue 39, section 6: the module's doc named a README section by an old title).
A reference is R(text, label) to a label of a guide, a named guide file, or the README with a
section's title after it ("the collection README, <title>", "README's <title>"): the label, the
file or a README heading of that title must exist."""
import re

import yaml

from conftest import ROOT

RST = ROOT / 'docs' / 'docsite' / 'rst'
README_SECTION = re.compile(r'README(?:,|\'s)\s+"?([A-Z][^.;()"]*?)"?\s*[).;]')


def documentation():
    """{where: text} of every doc the collection's plugins and roles carry."""
    texts = {}
    for path in sorted(ROOT.glob('plugins/modules/*.py')) + sorted(ROOT.glob('plugins/doc_fragments/*.py')):
        texts[str(path.relative_to(ROOT))] = path.read_text()
    for path in sorted(ROOT.glob('plugins/filter/*.yml')) + sorted(ROOT.glob('roles/*/meta/*.yml')):
        texts[str(path.relative_to(ROOT))] = path.read_text()
    return texts


def labels():
    return set(re.findall(r'(?m)^\.\. _([\w.-]+):$', '\n'.join(path.read_text() for path in RST.glob('*.rst'))))


def readme_headings():
    return set(re.findall(r'(?m)^#+ (.+)$', (ROOT / 'README.md').read_text()))


def references(text):
    """(kind, target) of each reference in ``text``, its lines joined (YAML and docstrings wrap)."""
    flat = ' '.join(line.strip().lstrip('- ').strip() for line in text.splitlines())
    found = [('label', label) for label in re.findall(r'R\([^,()]*,\s*([\w.-]+)\)', flat)]
    found += [('guide', name) for name in re.findall(r'\b(guide_\w+\.rst)\b', flat)]
    found += [('readme', title.strip()) for title in README_SECTION.findall(flat)]
    return found


def test_every_reference_of_the_docs_to_the_readme_or_a_guide_resolves():
    known = {'label': labels(), 'guide': set(path.name for path in RST.glob('*.rst')), 'readme': readme_headings()}
    found = [(where, kind, target) for where, text in documentation().items() for kind, target in references(text)]
    assert found, 'no reference found: the patterns are wrong'
    broken = [(where, kind, target) for where, kind, target in found if target not in known[kind]]
    assert broken == []


def test_the_patterns_find_each_kind():
    text = ('see the collection README, Safety additions). the README\'s Support table; R(the contract, '
            'ansible_collections.jobboard.bot_detector.docsite.guide_contract) and guide_follow.rst')
    assert sorted(references(text)) == sorted([
        ('readme', 'Safety additions'), ('readme', 'Support table'),
        ('label', 'ansible_collections.jobboard.bot_detector.docsite.guide_contract'), ('guide', 'guide_follow.rst')])


def test_ansible_doc_lists_each_role_entry_point_documented_and_the_summary_names_every_scheduler():
    """Issue 39: the summary said "scheduled with cron" (systemd and follow exist too), and the
    internal role was listed with no entry point. Internal ones say so (prometheus-community's way)."""
    import json
    import os
    import subprocess
    import sys
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-doc'), '-t', 'role', '-l', '-j',
                          'jobboard.bot_detector'], stdout=subprocess.PIPE, universal_newlines=True, check=True,
                         env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg')), cwd=str(ROOT))
    listed = json.loads(got.stdout)
    assert sorted(listed) == sorted('jobboard.bot_detector.%s' % path.name for path in (ROOT / 'roles').iterdir())
    for role, summary in listed.items():
        assert summary['entry_points'] and all(summary['entry_points'].values()), (role, summary)
    internal = listed['jobboard.bot_detector.bot_detector_preflight']['entry_points']
    assert all(text.startswith('Internal only') for text in internal.values()), internal
    specs = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    main = listed['jobboard.bot_detector.bot_detector']['entry_points']['main']
    for choice in specs['main']['options']['bot_detector_scheduler']['choices']:
        assert {'cron': 'cron', 'systemd': 'systemd timer', 'follow': 'follower'}[choice] in main, (choice, main)
    for text in (yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'main.yml').read_text())['galaxy_info']['description'],
                 yaml.safe_load((ROOT / 'galaxy.yml').read_text())['description']):
        assert 'systemd timer' in text and 'follower' in text, text
