"""nftables enforcement end to end, with real parts: network namespaces and veth pairs made by
the test (TEST-NET addresses), a real HTTP server in the server's namespace, a scraper and a
visitor in their own namespaces. The detector, run in the server's namespace on an access
log holding the scraper's requests, blocks it: its next connection fails, the visitor's
succeeds; --unblock and a ban expiry serve it again. The host's own ruleset never changes."""
import json
import os
import subprocess
import time

import pytest

import loggen
from conftest import ROOT, in_timezone
from enforcement import Lab, detector, host_ruleset, require_tools, served, sh, table_of, the_table, wait_for
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import C_DATE_FORMAT

PORT, OTHER_PORT = 8080, 8081       # enforced; not enforced
SERVER_V4, SERVER_V4_VISITOR, SERVER_V6, SERVER_V6_VISITOR = '192.0.2.1', '198.51.100.1', '2001:db8:1::1', '2001:db8:2::1'
SCRAPER, SCRAPER_OTHER, SCRAPER_V6 = '192.0.2.10', '192.0.2.100', '2001:db8:1::10'
VISITOR, VISITOR_V6 = '198.51.100.20', '2001:db8:2::20'


@pytest.fixture
def lab():
    require_tools('ip', 'nft', 'curl')
    before = host_ruleset()
    lab = Lab()
    try:
        lab.scraper = lab.client('c', [SERVER_V4 + '/24', SERVER_V6 + '/64'],
                                 [SCRAPER + '/24', SCRAPER_OTHER + '/24', SCRAPER_V6 + '/64'])
        lab.visitor = lab.client('v', [SERVER_V4_VISITOR + '/24', SERVER_V6_VISITOR + '/64'],
                                 [VISITOR + '/24', VISITOR_V6 + '/64'])
        for port in (PORT, OTHER_PORT):
            lab.start(lab.server, 'python3', '-m', 'http.server', '--bind', '::', str(port), '--directory', '/')
        wait_for(lambda: served(lab.visitor, url(SERVER_V4_VISITOR)) == 200)
        wait_for(lambda: served(lab.visitor, url(SERVER_V4_VISITOR, OTHER_PORT)) == 200)
        yield lab
    finally:
        lab.close()
        assert host_ruleset() == before         # nothing outside the namespaces changed


def url(host, port=PORT):
    return 'http://%s:%d/' % ('[%s]' % host if ':' in host else host, port)


def options(tmp_path, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER_V4, '--server-ip', SERVER_V4_VISITOR, '--enforcement', 'nftables',
            '--enforcement-port', str(PORT), '--metrics-file', tmp_path / 'metrics.prom'] + list(extra)


def requests(address, count, now):
    """``count`` job-page requests of ``address``, stamped now (the current hour), in UTC as the detector runs."""
    return in_timezone('UTC', lambda: b''.join(loggen.line(address, now, path='/jobs/%d' % i) for i in range(count)))


def scraper_served(lab, source=SCRAPER, server=SERVER_V4):
    return served(lab.scraper, url(server), source=source)


def set_elements(lab, name):
    """What ``name`` (blocked_v4, blocked_v6) blocks: its networks and the single addresses of
    its twin hash set (blocked_addr_v4, blocked_addr_v6)."""
    found = []
    for each in (name, name.replace('blocked_', 'blocked_addr_')):
        out = sh('ip', 'netns', 'exec', lab.server, 'nft', '-j', 'list', 'set', *the_table(lab.server), each).stdout
        found += [item['set'] for item in json.loads(out)['nftables'] if 'set' in item][0].get('elem', [])
    return sorted(e if isinstance(e, str) else '%s/%d' % (e['prefix']['addr'], e['prefix']['len']) for e in found)


def metric(tmp_path, name):
    for line in (tmp_path / 'metrics.prom').read_text().splitlines():
        if line.startswith('bot_detector_%s{backend="nftables"} ' % name):
            return float(line.split()[-1])
    return None


def test_a_run_blocks_the_scraper_unblock_and_expiry_serve_it_again(lab, tmp_path):
    now = time.time()
    log = tmp_path / 'access.log'
    log.write_bytes(requests(SCRAPER, 1100, now) + requests(VISITOR, 5, now))
    assert scraper_served(lab) == 200

    run = detector(lab.server, options(tmp_path, log))
    assert run.returncode == 0, run
    assert b'Blocking IP address: %s (1100 requests)' % SCRAPER.encode() in run.stdout
    assert (tmp_path / 'blocklist').read_bytes() == SCRAPER.encode() + b'\n'
    assert set_elements(lab, 'blocked_v4') == [SCRAPER]
    assert scraper_served(lab) is None                                       # its next connection fails
    assert served(lab.visitor, url(SERVER_V4_VISITOR)) == 200               # the visitor's succeeds
    assert scraper_served(lab, source=SCRAPER_OTHER) == 200                 # only the address listed
    assert served(lab.scraper, url(SERVER_V4, OTHER_PORT), source=SCRAPER) == 200   # only the ports listed
    assert metric(tmp_path, 'enforcement_in_sync') == 1 and metric(tmp_path, 'enforcement_entries') == 1

    unblock = detector(lab.server, options(tmp_path, '--unblock', SCRAPER))
    assert unblock.returncode == 0, unblock
    assert set_elements(lab, 'blocked_v4') == [] and scraper_served(lab) == 200

    # Ban expiry: an addition two hours old, with a ban of one hour, is removed by the next run.
    old = time.strftime(C_DATE_FORMAT, time.gmtime(now - 7200)).replace('GMT', 'UTC')
    (tmp_path / 'blocklist').write_text(SCRAPER + '\n')
    with open(str(tmp_path / 'activity.log'), 'a') as activity:
        activity.write('%s | IP addess %s added to the block list, RPH=1100\n' % (old, SCRAPER))
    assert detector(lab.server, options(tmp_path, '--enforce-now')).returncode == 0
    assert scraper_served(lab) is None
    visitor_log = tmp_path / 'visitor.log'
    visitor_log.write_bytes(requests(VISITOR, 1, now))
    expiry = detector(lab.server, options(tmp_path, '--ban-time', '1h', visitor_log))
    assert expiry.returncode == 0, expiry
    assert b'Unblocking IP address: %s (ban of 1h expired)' % SCRAPER.encode() in expiry.stdout
    assert set_elements(lab, 'blocked_v4') == [] and scraper_served(lab) == 200


def test_cidr_ipv6_and_mapped_entries_match_as_meant_junk_is_one_warning(lab, tmp_path):
    blocklist = tmp_path / 'blocklist'
    # A /28 holding the scraper's first address, not its second (.100); its IPv6 network;
    # junk and a comment. Then the same scraper only as an IPv4-mapped IPv6 entry.
    blocklist.write_bytes(b'192.0.2.0/28\r\n2001:db8:1::/64\nnot-an-address\n# a comment\n203.0.113.0/24\n203.0.113.7\n')
    run = detector(lab.server, options(tmp_path, '--enforce-now'))
    assert run.returncode == 0, run
    assert run.stderr.count(b'warning:') == 1 and b"'not-an-address'" in run.stderr
    assert set_elements(lab, 'blocked_v4') == ['192.0.2.0/28', '203.0.113.0/24']     # merged, not refused
    assert set_elements(lab, 'blocked_v6') == ['2001:db8:1::/64']
    assert scraper_served(lab) is None
    assert scraper_served(lab, source=SCRAPER_OTHER) == 200
    assert served(lab.scraper, url(SERVER_V6), source=SCRAPER_V6) is None
    assert served(lab.visitor, url(SERVER_V6_VISITOR), source=VISITOR_V6) == 200
    assert served(lab.visitor, url(SERVER_V4_VISITOR)) == 200

    blocklist.write_bytes(b'::ffff:192.0.2.10\n')
    assert detector(lab.server, options(tmp_path, '--enforce-now')).returncode == 0
    assert set_elements(lab, 'blocked_v4') == [SCRAPER] and set_elements(lab, 'blocked_v6') == []
    assert scraper_served(lab) is None
    assert scraper_served(lab, source=SCRAPER_OTHER) == 200
    assert served(lab.scraper, url(SERVER_V6), source=SCRAPER_V6) == 200

    # The table removed by hand: a run that changes nothing sees it and loads it again.
    sh('ip', 'netns', 'exec', lab.server, 'nft', 'delete', 'table', *the_table(lab.server))
    idle = detector(lab.server, options(tmp_path, '--unblock', '192.0.2.99'))
    assert idle.returncode == 0 and b'is not in the block list' in idle.stdout
    assert set_elements(lab, 'blocked_v4') == [SCRAPER] and scraper_served(lab) is None


def test_a_failed_load_keeps_the_appends_warns_and_exits_4(lab, tmp_path):
    """The table's set made of another type by hand: nft refuses the load. The run's append
    stays, a warning names the cause, exit status 4, the metrics say out of sync."""
    sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-',
       input=('add table {0}\nadd set {0} blocked_v4 {{ type ipv4_addr; }}\n'.format(table_of(tmp_path / 'blocklist'))).encode())
    now = time.time()
    log = tmp_path / 'access.log'
    log.write_bytes(requests(SCRAPER, 1100, now))
    run = detector(lab.server, options(tmp_path, log))
    assert run.returncode == 4, run
    assert (tmp_path / 'blocklist').read_bytes() == SCRAPER.encode() + b'\n'
    assert b'warning: enforcement (nftables) failed, the blocklist is updated but not in effect there: nft -f' in run.stderr
    assert metric(tmp_path, 'enforcement_in_sync') == 0
    # Once the conflict is gone, --enforce-now loads it.
    sh('ip', 'netns', 'exec', lab.server, 'nft', 'delete', 'table', *the_table(lab.server))
    now_run = detector(lab.server, options(tmp_path, '--enforce-now'))
    assert now_run.returncode == 0 and b'Enforcement nftables: 1 entry from' in now_run.stdout
    assert scraper_served(lab) is None and metric(tmp_path, 'enforcement_in_sync') == 1


def module(namespace, args):
    """One ad-hoc task of the module on localhost, run in ``namespace``: (rc, the host's result)."""
    env = dict(os.environ, TZ='UTC', ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run(['ip', 'netns', 'exec', namespace, 'ansible', 'localhost', '-m', 'jobboard.bot_detector.bot_detector',
                           '-a', json.dumps(args)], cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, check=False)
    return proc.returncode, json.loads(proc.stdout)['plays'][0]['tasks'][0]['hosts']['localhost']


def test_the_module_apply_unblock_and_enforce_modes_sync_the_table(tmp_path):
    """What the fleet playbook's apply and unblock playbook run: the module, with the
    enforcement setting from the host's config file."""
    require_tools('ip', 'nft')
    lab = Lab()
    try:
        config = tmp_path / 'bot-detector.conf'
        config.write_text('[bot_detector]\nblocklist = %s\nactivity_log = %s\nenforcement = nftables\n'
                          'enforcement_ports =\n    8080\n' % (tmp_path / 'blocklist', tmp_path / 'activity.log'))
        rc, res = module(lab.server, {'mode': 'apply', 'config': str(config),
                                      'addresses': [{'address': SCRAPER, 'count': 3000}, SCRAPER_V6]})
        assert rc == 0 and res['changed'] is True, res
        assert res['enforcement'] == {'backend': 'nftables', 'in_sync': True, 'entries': 2, 'skipped': [],
                                      'changed': True, 'error': None, 'too_wide': 0}
        assert set_elements(lab, 'blocked_v4') == [SCRAPER] and set_elements(lab, 'blocked_v6') == [SCRAPER_V6]
        rc, res = module(lab.server, {'mode': 'unblock', 'config': str(config), 'addresses': [SCRAPER]})
        assert rc == 0 and res['enforcement']['entries'] == 1 and set_elements(lab, 'blocked_v4') == []
        sh('ip', 'netns', 'exec', lab.server, 'nft', 'delete', 'table', *the_table(lab.server))     # as after a reboot
        rc, res = module(lab.server, {'mode': 'enforce', 'config': str(config)})
        assert rc == 0 and res['changed'] is True and set_elements(lab, 'blocked_v6') == [SCRAPER_V6]
        # A load nft refuses: the task fails naming the cause; the append stays.
        sh('ip', 'netns', 'exec', lab.server, 'nft', 'delete', 'table', *the_table(lab.server))
        sh('ip', 'netns', 'exec', lab.server, 'nft', '-f', '-',
           input=('add table {0}\nadd set {0} blocked_v6 {{ type ipv6_addr; }}\n'.format(table_of(tmp_path / 'blocklist'))).encode())
        rc, res = module(lab.server, {'mode': 'apply', 'config': str(config), 'addresses': [VISITOR]})
        assert rc != 0 and res['failed'] is True and res['changed'] is True
        assert res['msg'].startswith('enforcement (nftables) failed, the blocklist is updated but not in effect there: nft -f')
        assert VISITOR in (tmp_path / 'blocklist').read_text()
    finally:
        lab.close()
