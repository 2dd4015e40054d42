"""Two blocklists on one host, one nftables table each (issue 44, item 4): a sync of a second
blocklist (another config, an ad-hoc ``--enforce-now --blocklist X``) once replaced the first
one's sets, and the first one's next run said "in sync" while its entries were served. Each
table has its own exemptions: an accept in one does not stop a drop in another. In network
namespaces made here, with real nft and HTTP; the host's own ruleset never changes."""
import json

import pytest

from enforcement import Lab, detector, host_ruleset, require_tools, served, sh, wait_for

PORT = 8080
SERVER = '192.0.2.1'
FIRST, SECOND, VISITOR = '192.0.2.10', '192.0.2.11', '192.0.2.12'


@pytest.fixture
def lab():
    require_tools('ip', 'nft', 'curl')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.clients = lab.client('c', [SERVER + '/24'], [FIRST + '/24', SECOND + '/24', VISITOR + '/24'])
        lab.start(lab.server, 'python3', '-m', 'http.server', '--bind', '0.0.0.0', str(PORT), '--directory', '/')
        wait_for(lambda: served(lab.clients, URL, source=VISITOR) == 200)
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before         # nothing outside the namespaces changed


URL = 'http://%s:%d/' % (SERVER, PORT)


def options(directory, *extra):
    return ['--blocklist', directory / 'blocklist', '--exclusions', directory / 'allow', '--activity-log',
            directory / 'activity.log', '--server-ip', SERVER, '--enforcement', 'nftables', '--enforcement-port', str(PORT),
            '--metrics-file', directory / 'metrics.prom'] + list(extra)


def status(lab, directory):
    run = detector(lab.server, options(directory, '--status', '--json'))
    assert run.returncode == 0, run
    return json.loads(run.stdout)['enforcement']


def test_each_blocklist_has_its_own_table_and_exemptions(lab, tmp_path):
    first, second = tmp_path / 'first', tmp_path / 'second'
    for directory, listed in ((first, FIRST), (second, SECOND)):
        directory.mkdir()
        (directory / 'blocklist').write_text(listed + '\n')
    (first / 'allow').write_text(SECOND + '\n')         # the first config spares the second's scraper
    assert detector(lab.server, options(first, '--enforce-now')).returncode == 0
    assert served(lab.clients, URL, source=FIRST) is None
    assert detector(lab.server, options(second, '--enforce-now')).returncode == 0
    assert served(lab.clients, URL, source=FIRST) is None          # the second sync left the first's entries
    assert served(lab.clients, URL, source=SECOND) is None         # the first's accept does not spare it from the second's drop
    assert served(lab.clients, URL, source=VISITOR) == 200
    assert status(lab, first)['in_sync'] is True and status(lab, second)['in_sync'] is True
    # Each goes on syncing its own: an unblock in the first leaves the second's entries.
    assert detector(lab.server, options(first, '--unblock', FIRST)).returncode == 0
    assert served(lab.clients, URL, source=FIRST) == 200 and served(lab.clients, URL, source=SECOND) is None
    assert status(lab, first)['entries'] == 0 and status(lab, second)['entries'] == 1


def test_an_earlier_release_s_table_of_this_blocklist_goes_with_the_first_load(lab, tmp_path):
    """Earlier releases loaded every blocklist into ``inet bot_detector``: the first load of a
    blocklist of another path into its own table deletes that table when its record says it
    was this blocklist's, so no stale drop stays behind."""
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.enforce import nftables
    from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings
    (tmp_path / 'blocklist').write_text(FIRST + '\n')
    settings = Settings(blocklist=str(tmp_path / 'blocklist'))
    assert nftables.table_name(settings) != 'inet bot_detector'
    assert nftables.table_name(Settings()) == 'inet bot_detector'          # the default blocklist keeps the name
    sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=(
        'add table inet bot_detector\nadd set inet bot_detector old { type ipv4_addr; elements = { %s } }\n'
        'add chain inet bot_detector input { type filter hook input priority filter - 10; policy accept; }\n'
        'add rule inet bot_detector input tcp dport %d ip saddr @old drop\n' % (VISITOR, PORT)).encode())
    assert served(lab.clients, URL, source=VISITOR) is None
    handle = json.loads(sh('ip', 'netns', 'exec', lab.server, 'nft', '-j', 'list', 'tables').stdout)['nftables'][1]['table']['handle']
    with open(nftables.record_path(settings), 'w') as record:      # the record an earlier release wrote
        json.dump({'digest': 'x', 'entries': 1, 'handle': handle, 'spared': 'x', 'settings': 'x'}, record)
    assert detector(lab.server, options(tmp_path, '--enforce-now')).returncode == 0
    assert served(lab.clients, URL, source=VISITOR) == 200 and served(lab.clients, URL, source=FIRST) is None
    tables = sh('ip', 'netns', 'exec', lab.server, 'nft', 'list', 'tables').stdout.decode().split('\n')
    assert tables == ['table %s' % nftables.table_name(settings), '']
