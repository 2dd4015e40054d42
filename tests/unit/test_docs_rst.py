"""The guides render as documents (issue 39, section 6): each has a title, and every heading
written in its source (a line of text over an underline of one punctuation character, at
least as long) is a section of the rendered document, not text swallowed into the paragraph
above it. Each guide is parsed by docutils (which antsibull-docs and Sphinx use), with the
Sphinx roles and directives the guides use stood in for; any docutils warning fails too."""
import io
import re

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles

from conftest import ROOT

RST = ROOT / 'docs' / 'docsite' / 'rst'
# A heading in the source: text, then an underline of one of docutils' adornment characters.
HEADING = re.compile(r'^(?P<text>\S.*)\n(?P<line>([=\-~^"\'`#*+:.<>_])\3*)$', re.M)


def _role(name, rawtext, text, lineno, inliner, options=None, content=None):
    return [nodes.literal(rawtext, text)], []


class _CodeBlock(Directive):
    """Sphinx's code-block, as docutils' literal block."""
    has_content = True
    optional_arguments = 1
    option_spec = {'caption': directives.unchanged, 'linenos': directives.flag}

    def run(self):
        return [nodes.literal_block('\n'.join(self.content), '\n'.join(self.content))]


roles.register_local_role('ref', _role)
roles.register_local_role('ansplugin', _role)
directives.register_directive('code-block', _CodeBlock)


def guides():
    return sorted(RST.glob('*.rst'))


def rendered(path):
    warnings = io.StringIO()
    tree = publish_doctree(path.read_text(), source_path=str(path),
                           settings_overrides={'warning_stream': warnings, 'report_level': 2, 'halt_level': 5,
                                               'syntax_highlight': 'none'})
    return tree, warnings.getvalue()


def intended_headings(text):
    """Each heading the source writes (underline at least as long as its text, outside literal blocks)."""
    found = []
    for match in HEADING.finditer(text):
        if len(match.group('line')) >= len(match.group('text')) and not match.group('text').startswith(('..', ' ')):
            found.append(match.group('text').strip().replace('``', ''))     # as rendered: no inline markup
    return found


@pytest.mark.parametrize('path', guides(), ids=lambda path: path.name)
def test_each_guide_has_a_title_and_every_heading_is_a_section(path):
    tree, warnings = rendered(path)
    assert warnings == '', warnings
    title = tree.get('title') or ''
    assert title, '%s has no title (its page would be titled by its first section)' % path.name
    sections = [node.astext() for node in tree.findall(nodes.title)]
    headings = intended_headings(path.read_text())
    assert headings and headings[0] == title, (path.name, headings[:1], title)
    missing = [heading for heading in headings if heading not in sections]
    assert missing == [], '%s: headings swallowed into the text above them: %s' % (path.name, missing)


def test_the_check_catches_a_missing_title_and_a_swallowed_heading(tmp_path):
    good = tmp_path / 'good.rst'
    good.write_text('Title\n=====\n\nText.\n\nPart\n----\n\nMore.\n')
    no_title = tmp_path / 'no_title.rst'
    no_title.write_text('.. _label:\n\nNot a title\n\n\nText.\n\nPart\n----\n\nMore.\n\nOther\n-----\n\nEnd.\n')
    swallowed = tmp_path / 'swallowed.rst'
    swallowed.write_text('Title\n=====\n\nText runs on.\nPart\n----\n\nMore.\n')
    tree, warnings = rendered(good)
    assert tree.get('title') == 'Title' and warnings == ''
    tree, warnings = rendered(no_title)
    assert not tree.get('title')
    tree, warnings = rendered(swallowed)
    assert 'Part' in intended_headings(swallowed.read_text())
    assert 'Part' not in [node.astext() for node in tree.findall(nodes.title)]
