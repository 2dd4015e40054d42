"""nftables applies the blocklist's changes alone (issue 38, item 7): ``add element`` and
``delete element`` of single addresses in plain hash sets, in one transaction, while a full
load comes at the start, when the table is missing, and for anything else (a network, a line
that is no address, an address touching a network, a removal once an address is written in
two ways). After any sequence, the table holds what
a full load of the same blocklist holds (every set compared, with real nft in two network
namespaces), the guards included."""
import json
import shutil

import pytest

from enforcement import Lab, detector, host_ruleset, require_tools, sh

SETS = ['blocked_addr_v4', 'blocked_v4', 'allowed_v4', 'blocked_addr_v6', 'blocked_v6', 'allowed_v6']


@pytest.fixture
def lab():
    require_tools('ip', 'nft')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.reference = lab.namespace('r')
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before


def options(directory, *extra):
    return ['--blocklist', directory / 'blocklist', '--exclusions', directory / 'excluded', '--activity-log',
            directory / 'activity.log', '--server-ip', '192.0.2.1', '--enforcement', 'nftables',
            '--enforcement-min-prefix-v4', '16'] + list(extra)


def table(namespace):
    """Every set's elements, and the drop rules' comments (which name the last full load)."""
    found = {}
    if sh('ip', 'netns', 'exec', namespace, 'nft', 'list', 'set', 'inet', 'bot_detector', 'allowed_v6', check=False).returncode:
        return found, []        # no table
    for name in SETS:
        out = sh('ip', 'netns', 'exec', namespace, 'nft', '-j', 'list', 'set', 'inet', 'bot_detector', name).stdout
        elements = [item['set'] for item in json.loads(out)['nftables'] if 'set' in item][0].get('elem', [])
        found[name] = sorted(json.dumps(e, sort_keys=True) for e in elements)
    chain = sh('ip', 'netns', 'exec', namespace, 'nft', 'list', 'chain', 'inet', 'bot_detector', 'prerouting').stdout.decode()
    return found, sorted(set(line.split('comment')[-1].strip() for line in chain.splitlines() if 'drop comment' in line))


def step(lab, tmp_path, append=None, content=None, incremental=True):
    """Change the blocklist, sync as a cron run does (a run that changes nothing else), and
    compare the table with a full load of the same blocklist elsewhere."""
    blocklist = tmp_path / 'a' / 'blocklist'
    if content is not None:
        blocklist.write_bytes(content)
    if append is not None:
        with open(str(blocklist), 'ab') as handle:
            handle.write(append)
    before = table(lab.server)[1]
    run = detector(lab.server, options(tmp_path / 'a', '--unblock', '203.0.113.254'))
    assert run.returncode == 0, run
    shutil.copy(str(blocklist), str(tmp_path / 'b' / 'blocklist'))
    full = detector(lab.reference, options(tmp_path / 'b', '--enforce-now'))
    assert full.returncode == 0, full
    mine, comments = table(lab.server)
    assert mine == table(lab.reference)[0]
    assert (comments == before) == incremental, (comments, before)     # an addition leaves the full load's comment
    return mine


def test_additions_removals_and_a_flush_leave_what_a_full_load_makes(lab, tmp_path):
    for side in ('a', 'b'):
        (tmp_path / side).mkdir()
        (tmp_path / side / 'excluded').write_bytes(b'192.0.2.20\n')
    step(lab, tmp_path, content=b'192.0.2.10\n198.51.100.0/24\n2001:db8::/48\n', incremental=False)
    mine = step(lab, tmp_path, append=b'192.0.2.11\n2001:db8:1::7\n::ffff:192.0.2.12\n')
    assert '"192.0.2.12"' in mine['blocked_addr_v4'] and '"2001:db8:1::7"' in mine['blocked_addr_v6']
    step(lab, tmp_path, append=b'192.0.2.11\n 192.0.2.13 \r\n# a comment\n\n')          # duplicates, blanks
    step(lab, tmp_path, append=b'192.0.2.20\n192.0.2.1\n')     # allow-listed, the server: loaded, spared by the accept rules
    step(lab, tmp_path, append=b'198.51.101.0\n', incremental=False)        # touches 198.51.100.0/24: the guard decides
    step(lab, tmp_path, append=b'203.0.113.0/24\n', incremental=False)      # a network
    step(lab, tmp_path, append=b'not-an-address\n', incremental=False)      # named in a warning by the full load
    step(lab, tmp_path, content=b'192.0.2.11\n203.0.113.0/24\n', incremental=False)   # networks removed
    sh('ip', 'netns', 'exec', lab.server, 'nft', 'flush', 'ruleset')
    step(lab, tmp_path, append=b'192.0.2.14\n', incremental=False)          # the table lost: a full load
    step(lab, tmp_path, append=b'192.0.2.15\n2001:db8:2::1\n')
    step(lab, tmp_path, append=b'192.0.2.16')                                # no newline yet: a line on its way
    mine = step(lab, tmp_path, append=b'0\n')             # the line grew: 192.0.2.16 deleted, 192.0.2.160 added
    assert '"192.0.2.16"' not in mine['blocked_addr_v4'] and '"192.0.2.160"' in mine['blocked_addr_v4']
    now = (tmp_path / 'a' / 'blocklist').read_bytes()
    mine = step(lab, tmp_path, content=now.replace(b'192.0.2.15\n', b''))     # a removal (unblock, expiry): delete element
    assert '"192.0.2.15"' not in mine['blocked_addr_v4']
    now = (tmp_path / 'a' / 'blocklist').read_bytes()
    step(lab, tmp_path, content=now.replace(b'2001:db8:2::1\n', b'') + b'192.0.2.17\n')     # both at once
    step(lab, tmp_path, append=b'203.0.113.9\n', incremental=False)         # inside a network: the full load leaves it out
    now = (tmp_path / 'a' / 'blocklist').read_bytes()
    step(lab, tmp_path, content=now.replace(b'203.0.113.9\n', b''), incremental=False)     # so is its removal
    step(lab, tmp_path, append=b' 192.0.2.18/32\n')                         # written otherwise: added alone
    now = (tmp_path / 'a' / 'blocklist').read_bytes()
    # A removal once an address is written two ways (192.0.2.17/32 would keep 192.0.2.17): a full load.
    mine = step(lab, tmp_path, content=now.replace(b'192.0.2.17\n', b'192.0.2.17/32\n').replace(b'192.0.2.14\n', b''),
                incremental=False)
    assert '"192.0.2.17"' in mine['blocked_addr_v4'] and '"192.0.2.14"' not in mine['blocked_addr_v4']
    now = (tmp_path / 'a' / 'blocklist').read_bytes()
    step(lab, tmp_path, content=now.replace(b'192.0.2.17/32\n', b''), incremental=False)


def test_the_prefix_guard_stays_exact_for_additions(lab, tmp_path):
    """With a /16 limit, 65,536 adjacent single addresses are a /16 (kept), one more next to
    them makes the block too wide: the addition goes through the full load, which refuses lines
    as it always does."""
    for side in ('a', 'b'):
        (tmp_path / side).mkdir()
        (tmp_path / side / 'excluded').write_bytes(b'')
    block = b''.join(b'10.1.%d.%d\n' % (i >> 8, i & 255) for i in range(65535))
    step(lab, tmp_path, content=block, incremental=False)
    step(lab, tmp_path, append=b'10.1.255.255\n')          # 65,536: exactly a /16, still allowed
    mine = step(lab, tmp_path, append=b'10.2.0.0\n', incremental=False)
    assert len(mine['blocked_addr_v4']) < 65537
