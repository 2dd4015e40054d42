"""The role's absent tasks (roles/bot_detector/tasks/nftables_absent.yml) delete the detector's
nftables tables by a pattern over `nft list tables inet`: every name the detector gives a table
(enforce/nftables.py, enforce/answers_nftables.py) must match it, and an operator's table must
not. A rename in the code without the pattern would leave a table dropping clients after absent."""
import re
import types

import pytest
import yaml

from conftest import ROOT
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import answers_nftables, nftables

TASKS = ROOT / 'roles' / 'bot_detector' / 'tasks' / 'nftables_absent.yml'


def role_pattern():
    """The regex the deleting task selects `nft list tables inet` lines with."""
    loop = [task for task in yaml.safe_load(TASKS.read_text()) if 'loop' in task][0]['loop']
    return re.compile(re.search(r"select\('match', '([^']+)'\)", loop).group(1))


def listed(name):
    """A table name as `nft list tables inet` prints it (the detector's names carry the family
    or not: inet either way)."""
    return 'table inet %s' % name.split(' ', 1)[-1]


@pytest.mark.parametrize('blocklist', ['/etc/ipblocklist.txt', '/srv/lists/other-blocklist.txt', '/tmp/x y/b.txt'])
def test_every_table_the_detector_loads_is_one_absent_deletes(blocklist):
    name = nftables.table_name(types.SimpleNamespace(blocklist=blocklist))
    assert role_pattern().match(listed(name)), name
    assert role_pattern().match(listed(answers_nftables.TABLE))


@pytest.mark.parametrize('operators', ['filter', 'bot_detectors', 'my_bot_detector', 'bot_detector-x', 'nat'])
def test_an_operators_table_is_never_one_absent_deletes(operators):
    assert not role_pattern().match(listed(operators))
