"""The docs' shape: a README for users of at most 200 lines whose links all resolve and that
reaches every guide; every guide in docs/docsite/rst/ listed in docs/docsite/extra-docs.yml
(antsibull-docs renders and lints those); every :ref: of a guide resolving to a label of a
guide; every shell block of a guide either run by a test or marked as needing a real fleet.
(tests/integration/test_readme.py runs the README's commands.)"""
import re
import subprocess

import yaml

from conftest import ROOT

README = ROOT / 'README.md'
RST = ROOT / 'docs' / 'docsite' / 'rst'
EXTRA_DOCS = ROOT / 'docs' / 'docsite' / 'extra-docs.yml'
LABEL_PREFIX = 'ansible_collections.jobboard.bot_detector.docsite.'
# The comment before each shell block of a guide: why the tests do not run it, or which test does.
MARK = re.compile(r'^\.\. commands: (need a real [^;\n]+; not run by the tests.*|run by (tests/\S+))$')


def guides():
    found = sorted(RST.glob('*.rst'))
    assert found
    return found


def test_readme_is_at_most_200_lines_and_its_links_resolve():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text)
    assert links
    for link in links:
        assert not re.match(r'\w+://', link), link
        assert (ROOT / link).exists(), link


def test_every_guide_is_listed_in_extra_docs_and_linked_from_the_readme():
    listed = [name for section in yaml.safe_load(EXTRA_DOCS.read_text())['sections'] for name in section['toctree']]
    assert sorted(listed) == sorted(path.stem for path in guides())
    assert len(listed) == len(set(listed))
    readme = README.read_text()
    for path in guides():
        assert '(docs/docsite/rst/%s)' % path.name in readme, path.name
        assert path.stem.startswith('guide_')


def test_every_guide_has_its_label_and_every_ref_resolves():
    labels, refs = set(), []
    for path in guides():
        text = path.read_text()
        assert text.startswith('.. _%s%s:\n\n' % (LABEL_PREFIX, path.stem)), path.name
        labels |= set(re.findall(r'^\.\. _([\w.]+):$', text, re.M))
        refs += [(path.name, target) for target in re.findall(r':ref:`(?:[^`<]*<)?([^`>]+)>?`', text)]
    assert refs
    for name, target in refs:
        assert target in labels, (name, target)


def test_every_shell_block_of_a_guide_is_run_by_a_test_or_marked():
    blocks = 0
    for path in guides():
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() in ('.. code:: sh', '.. code-block:: sh', '.. code:: console', '.. code-block:: console',
                                '.. code:: shell', '.. code-block:: shell', '.. code:: bash', '.. code-block:: bash'):
                blocks += 1
                before = [l for l in lines[:number] if l.strip()][-1]
                mark = MARK.match(before)
                assert mark, '%s:%d: a shell block without a mark' % (path.name, number + 1)
                if mark.group(2):
                    assert (ROOT / mark.group(2)).exists(), mark.group(2)
    assert blocks


def test_the_readme_has_no_developer_material():
    text = README.read_text()
    for developer in ('make test', 'make bench', 'molecule', 'pytest', 'changelogs/fragments'):
        assert developer not in text, developer


def test_the_code_of_conduct_adopts_ansibles_and_is_linked_and_shipped():
    """Issue 39: the community checklist's Code of Conduct, by the docs URL of Ansible's (the
    installed tarball holds it: tests/integration/test_readme.py)."""
    conduct = (ROOT / 'CODE_OF_CONDUCT.md').read_text()
    assert 'https://docs.ansible.com/ansible/latest/community/code_of_conduct.html' in conduct
    assert '](CODE_OF_CONDUCT.md)' in README.read_text()
    row = [line for line in (ROOT / 'docs' / 'inclusion-checklist.md').read_text().splitlines()
           if line.startswith('| A Code of Conduct')]
    assert len(row) == 1 and '**open**' not in row[0], row


def test_no_tracked_file_holds_a_merge_conflict_marker():
    # A merge left `<<<<<<< HEAD` in a guide once; docutils renders it as text.
    files = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, check=True, capture_output=True).stdout.split(b'\0')
    marker = re.compile(rb'^(<{7} |>{7} |={7}$)', re.M)
    found = []
    for name in filter(None, files):
        path = ROOT / name.decode()
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if b'\0' not in data[:8000] and marker.search(data):
                found.append(name.decode())
    assert not found, 'merge conflict markers in %s' % found
