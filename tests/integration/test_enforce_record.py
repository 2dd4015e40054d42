"""The nftables record of the last load (the ``.nft`` file beside the blocklist's lock) holding
a field of the wrong type (damaged, edited, a bug): a bad record, said by one warning, the table
then loaded whole; never every sync failing on it. With real nft in a network namespace made
here; the host's own ruleset never changes."""
import json
import time

import pytest

import loggen
from enforcement import Lab, detector, host_ruleset, require_tools, sh, table_of
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nftables
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

SERVER = '198.51.100.254'      # no substring of the addresses blocked (the spec's server filter)
BAD = 'the record of the last load'


@pytest.fixture
def lab():
    require_tools('ip', 'nft')
    before = host_ruleset()
    lab = Lab()
    try:
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before


def options(tmp_path, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'allow', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER, '--enforcement', 'nftables', '--enforcement-port', '8080',
            '--threshold', '10'] + list(extra)


def elements(lab, blocklist):
    family, name = table_of(blocklist).split()
    out = sh('ip', 'netns', 'exec', lab.server, 'nft', '-j', 'list', 'set', family, name, 'blocked_addr_v4').stdout
    found = [item['set'].get('elem', []) for item in json.loads(out)['nftables'] if 'set' in item]
    return sorted(found[0]) if found else []


def damage(record, field, value):
    with open(record) as handle:
        doc = json.load(handle)
    doc[field] = value
    with open(record, 'w') as handle:
        json.dump(doc, handle)


WRONG = [('table', 5), ('table', ['inet', 'x']), ('handle', 'x'), ('handle', -1), ('entries', '3'), ('entries', None),
         ('blocks', [[1], [2]]), ('blocks', [[['a', 'b']], []]), ('blocks', 'x'), ('addresses', ['a', 'b']),
         ('respelled', [1, 2]), ('length', -5), ('length', 1.5), ('sha256', 5), ('noncanonical', 'x'),
         ('digest', 7), ('spared', {}), ('settings', [])]


@pytest.mark.parametrize('field, value', WRONG)
def test_a_record_with_a_field_of_the_wrong_type_is_a_bad_record_and_the_table_is_loaded_whole(lab, tmp_path, field, value):
    blocklist = tmp_path / 'blocklist'
    blocklist.write_text('192.0.2.10\n')
    first = detector(lab.server, options(tmp_path, '--enforce-now'))
    assert first.returncode == 0 and first.stderr == b'', first
    record = nftables.record_path(Settings(blocklist=str(blocklist)))
    try:
        damage(record, field, value)
        log = tmp_path / 'access.log'       # a run that blocks one more address: an incremental sync, once
        now = time.time()
        log.write_bytes(b''.join(loggen.line('192.0.2.11', now - 30, path='/job/%d' % i) for i in range(12)))
        run = detector(lab.server, options(tmp_path, log))
        assert run.returncode == 0, run
        warnings = [line for line in run.stderr.decode().splitlines() if BAD in line]
        assert len(warnings) == 1 and record in warnings[0], run.stderr
        assert 'failed' not in run.stderr.decode(), run.stderr
        assert elements(lab, blocklist) == ['192.0.2.10', '192.0.2.11'], (run.stdout, blocklist.read_text())
        status = detector(lab.server, options(tmp_path, '--status', '--json'))
        assert json.loads(status.stdout)['enforcement']['in_sync'] is True, status
        damage(record, field, value)        # and a forced load (--enforce-now) over it
        now_run = detector(lab.server, options(tmp_path, '--enforce-now'))
        assert now_run.returncode == 0 and BAD in now_run.stderr.decode() and b'failed' not in now_run.stderr, now_run
        assert elements(lab, blocklist) == ['192.0.2.10', '192.0.2.11']
        again = detector(lab.server, options(tmp_path, '--enforce-now'))       # a good record again: no word
        assert again.returncode == 0 and again.stderr == b'', again
    finally:
        sh('rm', '-f', record, record + '.loaded')
