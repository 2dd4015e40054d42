"""A table lost to ``nft flush ruleset`` (what ``systemctl reload nftables`` does with Debian's
configuration) or ``nft delete table`` is seen and loaded again (issue 38, item 6): by the next
cron run at any size (above 100,000 entries the record of the last load was trusted), and by a
follower within seconds; ``bot_detector_enforcement_in_sync`` says 0 while it is not loaded.
Real nft, HTTP server and curl in network namespaces the test makes."""
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORE
from loadfactor import Slowdown
from enforcement import Lab, detector, host_ruleset, require_tools, served, sh, table_of, the_table, wait_for

PORT = 8080
SERVER, SCRAPER, VISITOR = '192.0.2.1', '192.0.2.10', '192.0.2.20'


@pytest.fixture
def lab():
    require_tools('ip', 'nft', 'curl')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.clients = lab.client('c', [SERVER + '/24'], [SCRAPER + '/24', VISITOR + '/24'])
        lab.start(lab.server, 'python3', '-m', 'http.server', '--bind', '::', str(PORT), '--directory', '/')
        wait_for(lambda: served(lab.clients, URL, source=VISITOR) == 200)
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before


URL = 'http://%s:%d/' % (SERVER, PORT)


def options(tmp_path, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER, '--enforcement', 'nftables', '--enforcement-port', str(PORT),
            '--metrics-file', tmp_path / 'metrics.prom'] + list(extra)


def blocklist(count):
    """The scraper and ``count - 1`` other addresses, none next to another (nothing merges)."""
    others = ('10.%d.%d.%d\n' % (i >> 15 & 255, i >> 7 & 255, (i & 127) * 2) for i in range(count - 1))
    return (SCRAPER + '\n' + ''.join(others)).encode()


def in_sync(tmp_path):
    if not (tmp_path / 'metrics.prom').exists():
        return None
    for line in (tmp_path / 'metrics.prom').read_text().splitlines():
        if line.startswith('bot_detector_enforcement_in_sync{'):
            return float(line.split()[-1])
    return None


def scraper_served(lab):
    return served(lab.clients, URL, source=SCRAPER)


@pytest.mark.parametrize('count', [2, 100001])
@pytest.mark.parametrize('how', [['flush', 'ruleset'], ['delete', 'table']])
def test_a_cron_run_restores_a_lost_table_at_any_size(lab, tmp_path, count, how):
    (tmp_path / 'blocklist').write_bytes(blocklist(count))
    (tmp_path / 'access.log').write_bytes(b'')
    first = detector(lab.server, options(tmp_path, '--enforce-now'))
    assert first.returncode == 0 and ('Enforcement nftables: %d entries' % count).encode() in first.stdout, first
    assert scraper_served(lab) is None
    sh('ip', 'netns', 'exec', lab.server, 'nft', *(how + (the_table(lab.server) if how[0] == 'delete' else [])))
    assert scraper_served(lab) == 200
    status = detector(lab.server, options(tmp_path, '--status', '--json'))
    assert b'"in_sync": false' in status.stdout, status
    run = detector(lab.server, options(tmp_path, tmp_path / 'access.log'))        # what cron runs, nothing new in the log
    assert run.returncode == 0, run
    assert scraper_served(lab) is None and served(lab.clients, URL, source=VISITOR) == 200
    assert in_sync(tmp_path) == 1
    status = detector(lab.server, options(tmp_path, '--status', '--json'))
    assert b'"in_sync": true' in status.stdout, status


def test_a_follower_restores_a_lost_table_within_seconds(lab, tmp_path):
    """The table flushed, then a conflicting one made by hand: the follower's loads fail and the
    metrics say 0; the conflict removed, it loads the table again within seconds."""
    (tmp_path / 'blocklist').write_bytes(blocklist(2))
    log = tmp_path / 'access.log'
    log.write_bytes(b'')
    proc = subprocess.Popen(['ip', 'netns', 'exec', lab.server, sys.executable, str(CORE), '--follow', '--state-dir',
                             str(tmp_path / 'state')] + [str(a) for a in options(tmp_path, log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: in_sync(tmp_path) == 1, 15)
        assert scraper_served(lab) is None
        sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-', input=(
            'flush ruleset\nadd table {0}\nadd set {0} blocked_v4 {{ type ipv6_addr; }}\n'.format(table_of(tmp_path / 'blocklist'))).encode())
        wait_for(lambda: in_sync(tmp_path) == 0, 15)
        assert scraper_served(lab) == 200
        sh('ip', 'netns', 'exec', lab.server, 'nft', 'delete', 'table', *table_of(tmp_path / 'blocklist').split())
        load = Slowdown()
        started = time.time()
        wait_for(lambda: in_sync(tmp_path) == 1, load.bound(15))
        assert scraper_served(lab) is None and time.time() - started < load.bound(12), load.factor
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert err.count(b'enforcement (nftables) failed') == 1, err
