"""A real browser passes the challenge by itself (issue 46): Debian's chromium, headless, behind
the scratch nginx's balancer (which gives it the address 203.0.113.50)."""
import json
import os
import subprocess

import pytest

from answers_lab import BROWSER_ADDRESS, AnswersLab

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBIAN_PYTHON = '/usr/bin/python3'


def require_browser():
    problems = [what for what, path in (('chromium', '/usr/bin/chromium'), ('chromium-driver', '/usr/bin/chromedriver'))
                if not os.path.exists(path)]
    if subprocess.run([DEBIAN_PYTHON, '-c', 'import selenium'], stderr=subprocess.DEVNULL, check=False).returncode:
        problems.append('python3-selenium')
    if problems:
        if os.environ.get('CI') == 'true':
            pytest.fail('browser test needs %s (tests/tools/install-prereqs.sh)' % ', '.join(problems))
        pytest.skip('needs %s' % ', '.join(problems))


@pytest.fixture
def lab(tmp_path, files):
    require_browser()
    made = AnswersLab(tmp_path / 'nginx', files)
    made.command('--challenge', BROWSER_ADDRESS)
    yield made
    made.close()


def browse(lab, tmp_path, mode):
    profile = tmp_path / ('profile-' + mode)
    profile.mkdir()
    got = subprocess.run([DEBIAN_PYTHON, os.path.join(HERE, 'answers_browser.py'),
                          'http://127.0.0.1:%d/job/1' % lab.balancer, str(profile), mode],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=False, env=dict(os.environ, HOME=str(tmp_path)))
    assert got.returncode == 0, got.stderr.decode()[-3000:]
    return json.loads(got.stdout)


def access_lines(lab):
    return [line for line in (lab.d / 'access.log').read_text().splitlines() if line.startswith(BROWSER_ADDRESS + ' ')]


def test_a_real_browser_passes_the_challenge_by_itself_then_gets_the_page(lab, tmp_path):
    doc = browse(lab, tmp_path, 'javascript')
    assert doc['text'].strip() == 'page job/1', doc
    assert doc['url'].endswith('/job/1')
    assert doc['next_text'].strip() == 'page job/2'       # the pass holds for the next page
    statuses = [(line.split('"')[1].split()[1], line.split('"')[2].split()[0]) for line in access_lines(lab)]
    assert statuses[:3] == [('/job/1', '428'), ('/.bot-detector/pass?to=%2Fjob%2F1', '303'), ('/job/1', '200')], statuses
    assert ('/job/2', '200') in statuses
    assert '428' not in [status for dummy, status in statuses[1:]]


@pytest.mark.parametrize('mode,says', [
    ('nojavascript', 'JavaScript is turned off in your browser'),
    ('nocookies', "did not keep this site's cookie"),
])
def test_a_browser_without_javascript_or_cookies_is_told_what_to_do_without_a_reload_loop(lab, tmp_path, mode, says):
    doc = browse(lab, tmp_path, mode)
    assert says in doc['text'], doc
    assert 'page job' not in doc['text']
    lines = [line for line in access_lines(lab) if '"GET /favicon.ico ' not in line]
    assert len(lines) == 1 and '" 428 ' in lines[0], lines        # one load, no loop
