"""A mistyped setting gets the same suggestion from the config file as from the role
(issue 39 §2): `unknown setting 'treshold'; did you mean threshold?` and
`bot_detector_treshold: not a variable of the role; did you mean bot_detector_threshold?`."""
import re

import pytest
import yaml

from conftest import ROOT, run_core
from ansible_collections.jobboard.bot_detector.plugins.filter.host_config import role_problems
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.config import read_config
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import SETTINGS

SPECS = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())


def typos(name):
    """A letter dropped and two neighbours swapped, in the middle of the name."""
    middle = len(name) // 2
    return [name[:middle] + name[middle + 1:], name[:middle - 1] + name[middle] + name[middle - 1] + name[middle + 1:]]


def config_suggestion(tmp_path, key):
    config = tmp_path / 'typo.conf'
    config.write_text('[bot_detector]\n%s = 1\n' % key)
    with pytest.raises(errors.BotDetectorError) as caught:
        read_config(str(config))
    assert caught.value.exit_status == errors.EXIT_BAD_OPTION
    match = re.search(r": unknown setting '([^']+)'; did you mean (\w+)\?$", caught.value.message)
    assert match and match.group(1) == key, caught.value.message
    return match.group(2)


def role_suggestion(key):
    problems = role_problems({'bot_detector_' + key: 1}, SPECS)
    match = re.match(r"bot_detector_(\w+): not a variable of the role; did you mean bot_detector_(\w+)\?$", problems[0])
    assert match and match.group(1) == key, problems
    return match.group(2)


@pytest.mark.parametrize('setting', [s.name for s in SETTINGS if len(s.name) > 6])
def test_the_config_file_and_the_role_suggest_the_same_setting(tmp_path, setting):
    for key in typos(setting):
        assert config_suggestion(tmp_path, key) == role_suggestion(key) == setting, key


def test_the_command_says_it(tmp_path, files):
    config = tmp_path / 'typo.conf'
    config.write_text('[bot_detector]\ntreshold = 5\n')
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    got = run_core(files.options() + ['--config', config, log])
    assert got.returncode == errors.EXIT_BAD_OPTION and got.stdout == b''
    assert got.stderr.decode() == "bot-detector: error: %s: unknown setting 'treshold'; did you mean threshold?\n" % config
