"""The fleet store (issue 37) with cron runs (state_dir), the product's own push code under a
proxy that loses replies, the ACL user the guide documents, a 3-master cluster, the command as
the role runs it (``/usr/bin/python3 -S``: Debian's python3-redis), and the store away; all
against real servers started in scratch directories on loopback ports."""
import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

import fleetstore
import loggen
from conftest import CORE, ROOT, Files, in_timezone, run_core
from loadfactor import Slowdown
from test_fleet_store import SECRET, spread
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.clock import hour_windows
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import fleet_store
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.drivers.fleet import Fleet
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

NOW = 1795258200            # 2026-11-21 10:50:00 UTC: the windows 09 and 10
THRESHOLD = 1000


def planted(base, previous=None, current=None):
    log = base / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW, previous=previous, current=current)))
    return log


def cron_run(base, url, host, previous=None, current=None, extra=(), python=None, allow=()):
    """One run of host ``host`` with its own log, lists and state (the log written afresh: a
    run reads on from its state)."""
    files = Files(base / host)
    if allow:
        files.exclusions.write_text(''.join(a + '\n' for a in allow))
    log = planted(base / host, previous, current)
    args = files.options() + ['--server-ip', '10.0.0.5', '--now', '@%d' % NOW, '--state-dir', base / host / 'state',
                              '--fleet-store', url, '--fleet-host', host] + list(extra) + [log]
    if python is None:
        got = run_core(args)
    else:
        env = dict(os.environ, TZ='UTC', LC_ALL='C.UTF-8')
        got = subprocess.run(python + [str(CORE)] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, check=False, timeout=120)      # a hang fails the test
    return got, files


def blocked(files):
    return sorted((files.read('blocklist') or b'').decode().split())


def test_cron_runs_share_counts_through_a_3_master_cluster(tmp_path, fleet_cluster):
    """On the session's cluster (conftest.py), under the default fleet name: this test's own."""
    cluster = fleet_cluster
    shares = spread(1000)
    first, files0 = cron_run(tmp_path, cluster.url, 'web0', previous={'203.0.113.7': shares[0], '203.0.113.50': 333})
    asked = 'redis://127.0.0.1:%d/0' % cluster.nodes[1].port        # no cluster=: INFO tells
    second, files1 = cron_run(tmp_path, asked, 'web1', previous={'203.0.113.7': shares[1], '203.0.113.50': 333})
    assert first.returncode == 0 and second.returncode == 0, (first, second)
    assert blocked(files0) == [] and blocked(files1) == []
    third, files2 = cron_run(tmp_path, cluster.url, 'web2', previous={'203.0.113.7': shares[2], '203.0.113.50': 333},
                             python=['/usr/bin/python3', '-S'], extra=['--json'])    # Debian's redis-py (4.3 on Debian 12) too
    assert third.returncode == 0, third
    assert json.loads(third.stdout)['blocked'] == [{'address': '203.0.113.7', 'count': 1000, 'window': 'previous'}]
    assert json.loads(third.stdout)['fleet']['decisions_received'] == 1
    assert blocked(files2) == ['203.0.113.7']
    again, files0 = cron_run(tmp_path, cluster.url, 'web0', previous={'203.0.113.7': shares[0], '203.0.113.50': 333})
    assert b'Blocking IP address: 203.0.113.7 (1000 requests, fleet)' in again.stdout, again
    assert (files0.read('activity_log') or b'').endswith(b'RPH=1000 (fleet)\n')
    assert blocked(files0) == ['203.0.113.7']
    # The windows' keys: one hash slot a window (by its start, layout 2), each on the master that owns it.
    starts = [w.start for w in in_timezone('UTC', lambda: hour_windows(NOW))]
    for start in starts:
        slot = cluster.nodes[0].cli('cluster', 'keyslot', '{bot-detector:v2:%d}' % start).strip()
        owner = [n for n in cluster.nodes if n.cli('cluster', 'countkeysinslot', slot).strip() != '0']
        assert len(owner) == 1
    sums = fleetstore.window_sums(lambda *a: cluster.nodes[0].cli('-c', *a), starts[0])
    assert sums == {'203.0.113.7': 1000, '203.0.113.50': 999}


def test_a_lost_reply_is_sent_again_and_applied_once(tmp_path):
    """The product's push code (Fleet, its thread) through a proxy that forwards every third
    request and closes the connection before its reply: such a batch is resent, none counted twice."""
    server = fleetstore.StoreServer(tmp_path).start()
    proxy = fleetstore.DroppingProxy(server.port, every=3)
    fleets = []
    try:
        windows = in_timezone('UTC', lambda: hour_windows(NOW))
        expected = Counter()
        for host in range(3):
            settings = Settings(fleet_store=proxy.url, fleet_host='web%d' % host, threshold=THRESHOLD)
            fleets.append(Fleet(settings, lambda line: None))
        counters = [dict((w.stamp, Counter()) for w in windows) for dummy in fleets]
        for step in range(12):
            for fleet, counter in zip(fleets, counters):
                counter[windows[1].stamp][b'203.0.113.7'] += 28
                counter[windows[1].stamp][b'192.0.2.%d' % step] += 5
                counter[windows[0].stamp][b'203.0.113.50'] += 7
                fleet.offer(counter, windows)
                for dummy in range(3):
                    if fleet.push_once():
                        break
        for counter in counters:
            for stamp, window_counts in counter.items():
                expected.update(dict(((stamp, key), count) for key, count in window_counts.items()))
        for fleet in fleets:
            deadline = time.time() + 10
            while not (fleet.push_once() and not fleet.pending):
                assert time.time() < deadline
        assert proxy.dropped >= 10
        assert [f.store.lost for f in fleets] == [0, 0, 0]       # a lost reply is no lost count
        found = Counter()
        for window in windows:
            sums = fleetstore.window_sums(server.cli, window.start)
            found.update(dict(((window.stamp, k.encode()), v) for k, v in sums.items()))
        assert found == expected
        assert expected[(windows[1].stamp, b'203.0.113.7')] == 1008
        crossed = [f.take_crossed()[0] for f in fleets]
        assert all(c[windows[1].stamp] == {b'203.0.113.7': c[windows[1].stamp][b'203.0.113.7']} for c in crossed)
        assert all(f.decisions_received == 1 for f in fleets)
    finally:
        proxy.close()
        server.kill()


def test_the_acl_user_of_the_guide_is_enough_and_the_password_never_shows(tmp_path):
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        server.cli('acl', 'setuser', 'bd', 'on', '>' + SECRET, *(list(fleet_store.ACL_RULES) + ['~{bot-detector:*']))
        server.cli('config', 'set', 'requirepass', 'other-' + SECRET)       # the default user: not this one
        url = 'redis://bd:%s@127.0.0.1:%d/0' % (SECRET, server.port)
        metrics = tmp_path / 'metrics.prom'
        first, dummy = cron_run(tmp_path, url, 'web0', previous={'203.0.113.7': 600}, extra=['--json', '--metrics-file', metrics])
        assert first.returncode == 0, first
        password_file = tmp_path / 'fleet.pw'
        password_file.write_text(SECRET + '\n')
        url_without = 'redis://bd@127.0.0.1:%d/0' % server.port
        second, files = cron_run(tmp_path, url_without, 'web1', previous={'203.0.113.7': 400},
                                 extra=['--fleet-store-password-file', password_file, '--metrics-file', metrics])
        assert second.returncode == 0, second
        assert blocked(files) == ['203.0.113.7']
        for out in (first.stdout, first.stderr, second.stdout, second.stderr, metrics.read_bytes(),
                    (tmp_path / 'web1' / 'bot-detector.log').read_bytes()):
            assert SECRET.encode() not in out
        assert json.loads(first.stdout)['blocked'] == []
        assert json.loads(first.stdout)['fleet'] == {'store': 'redis://bd:***@127.0.0.1:%d/0' % server.port, 'host': 'web0',
                                                     'up': True, 'decisions_received': 0, 'eviction_policy': 'noeviction'}
        # Exactly that: no other command, no other key.
        for denied in (['flushall'], ['keys', '*'], ['set', 'elsewhere', '1'], ['hset', '{other:x}:sum', 'a', '1'],
                       ['config', 'get', '*'], ['del', '{bot-detector:x}:sum']):
            got = subprocess.run([fleetstore.cli_binary(server.binary), '-p', str(server.port), '--user', 'bd', '--pass', SECRET,
                                  '--no-auth-warning'] + denied, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
            assert b'NOPERM' in got.stdout + got.stderr, denied
        wrong = cron_run(tmp_path, 'redis://bd:nope@127.0.0.1:%d/0' % server.port, 'web2', previous={'203.0.113.9': 1200})[0]
        assert wrong.returncode == 0 and b'Blocking IP address: 203.0.113.9' in wrong.stdout       # its own counts
        assert b'fleet store redis://bd:***@127.0.0.1:%d/0 unreachable' % server.port in wrong.stderr
        assert b'nope' not in wrong.stderr + wrong.stdout
    finally:
        server.kill()


def test_the_command_as_the_role_runs_it_finds_debians_redis_py(tmp_path):
    """``/usr/bin/python3 -S`` does not see /usr/lib/python3/dist-packages: the fleet store's
    client is found there all the same; a broken or missing one is one line, exit 2."""
    if not os.path.exists('/usr/lib/python3/dist-packages/redis/__init__.py'):
        pytest.fail("Debian's python3-redis is missing: tests/tools/install-prereqs.sh installs it")
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.7': 1000}, python=['/usr/bin/python3', '-S'])
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert fleetstore.window_sums(server.cli, in_timezone('UTC', lambda: hour_windows(NOW))[0].start) == {'203.0.113.7': 1000}
        shadow = tmp_path / 'shadow'
        (shadow / 'redis').mkdir(parents=True)
        (shadow / 'redis' / '__init__.py').write_text('raise ImportError("no redis here")\n')
        env_python = ['/usr/bin/python3', '-S']
        os.environ['PYTHONPATH'], saved = str(shadow), os.environ.get('PYTHONPATH')
        try:
            broken, files = cron_run(tmp_path, server.url, 'web1', previous={'203.0.113.7': 1000}, python=env_python)
        finally:
            os.environ.pop('PYTHONPATH') if saved is None else os.environ.__setitem__('PYTHONPATH', saved)
        assert broken.returncode == errors.EXIT_BAD_OPTION, broken
        assert broken.stderr.decode().strip().count('\n') == 0 and 'redis-py cannot be imported' in broken.stderr.decode()
        assert broken.stdout == b'' and files.read('blocklist') is None
    finally:
        server.kill()


@pytest.mark.parametrize('query,running', [('cluster=no', False), ('cluster=yes', False), ('cluster=auto', False),
                                           ('cluster=yes', True)])
def test_a_run_with_the_store_away_decides_on_its_own_counts(tmp_path, query, running):
    """Away: nothing listens, or (``running``) a server answers that is not the cluster the URL
    says. Either way one warning, the host's own counts decide, and no traceback (redis-py's
    cluster client raises its own exception class and logs its own failures)."""
    server = fleetstore.StoreServer(tmp_path).start() if running else None
    port = server.port if running else fleetstore.free_port()
    try:
        load = Slowdown()
        started = time.time()
        got, files = cron_run(tmp_path, 'redis://127.0.0.1:%d/0?%s' % (port, query), 'web0',
                              previous={'203.0.113.7': 1000, '203.0.113.50': 999})
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert time.time() - started < load.bound(5), load.factor
        assert b'fleet store redis://127.0.0.1:%d/0?%s unreachable' % (port, query.encode()) in got.stderr
        assert b'Traceback' not in got.stderr and len(got.stderr.splitlines()) == 1, got.stderr
        status = run_core(['--fleet-store', 'redis://127.0.0.1:%d/0?%s' % (port, query), '--fleet-host', 'web0', '--status',
                           '--blocklist', files.blocklist, '--activity-log', files.activity_log])
        assert status.returncode == 0 and b'Traceback' not in status.stderr, status
        assert b': unreachable (' in status.stdout, status.stdout
    finally:
        if server is not None:
            server.kill()


def test_rediss_connects_with_tls_and_checks_the_certificate(tmp_path):
    """rediss:// on a TLS-only port: the server's certificate is checked against the CA store
    (here a scratch CA, through SSL_CERT_FILE); a certificate it does not trust is refused, and
    the run decides on its own counts."""
    tls = fleetstore.tls_files(tmp_path / 'tls')
    port = fleetstore.free_port()
    server = fleetstore.StoreServer(tmp_path, extra=['--tls-port', str(port), '--tls-cert-file', tls['cert'],
                                                     '--tls-key-file', tls['key'], '--tls-ca-cert-file', tls['ca'],
                                                     '--tls-auth-clients', 'no']).start()
    try:
        url = 'rediss://127.0.0.1:%d/0?cluster=no' % port
        os.environ['SSL_CERT_FILE'] = tls['ca']
        try:
            first, files0 = cron_run(tmp_path, url, 'web0', previous={'203.0.113.7': 500})
            second, files1 = cron_run(tmp_path, url, 'web1', previous={'203.0.113.7': 500})
        finally:
            del os.environ['SSL_CERT_FILE']
        assert first.returncode == 0 and second.returncode == 0 and b'unreachable' not in first.stderr + second.stderr, second
        assert blocked(files1) == ['203.0.113.7']
        untrusted, files2 = cron_run(tmp_path, url, 'web2', previous={'203.0.113.50': 400})
        assert untrusted.returncode == 0 and b'unreachable' in untrusted.stderr and b'certificate' in untrusted.stderr, untrusted
    finally:
        server.kill()


def test_what_a_broken_store_answers_blocks_no_one_the_host_would_not(tmp_path):
    """Crossings the store should not hold (under the threshold, not an address, allow-listed
    here, this host's own server address) add no block; only an address the answer says
    reached the threshold is blocked (the trust boundary the guide states)."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        fleetstore.plant_crossings(server.cli, in_timezone('UTC', lambda: hour_windows(NOW))[0].start,
                                   ('203.0.113.99 999', 'not-an-address 5000', '198.51.100.9 5000', '10.0.0.5 5000',
                                    '198.51.100.77 1500', 'garbage'))
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.99': 10, '10.0.0.5': 10},
                              allow=['198.51.100.9'])
        assert got.returncode == 0, got
        assert blocked(files) == ['198.51.100.77'] and b'Blocking IP address: 198.51.100.77 (1500 requests, fleet)' in got.stdout
        # Allow-listed here, in any spelling: never a record of the fleet's (issue 43), so not even said.
        assert b'198.51.100.9' not in got.stdout
    finally:
        server.kill()


def test_an_unreadable_password_file_is_a_store_away(tmp_path):
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        missing = tmp_path / 'no-such.pw'
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.7': 1000, '203.0.113.50': 10},
                              extra=['--fleet-store-password-file', missing])
        assert got.returncode == 0 and blocked(files) == ['203.0.113.7'], got
        assert ('fleet_store_password_file %s cannot be read' % missing).encode() in got.stderr
        status = run_core(['--fleet-store', server.url, '--fleet-store-password-file', missing, '--status',
                           '--blocklist', files.blocklist, '--activity-log', files.activity_log])
        assert status.returncode == 0 and b'Traceback' not in status.stderr, status
        assert ('unreachable (fleet_store_password_file %s cannot be read' % missing).encode() in status.stdout, status.stdout
    finally:
        server.kill()


def test_the_module_shares_counts_and_never_shows_the_password(tmp_path):
    """The module (real ansible, ad hoc) with fleet_store: the fleet's sum decides, the result
    says what the store did, and the password shows nowhere (fleet_store is no_log)."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        server.cli('config', 'set', 'requirepass', SECRET)
        url = 'redis://:%s@127.0.0.1:%d/0' % (SECRET, server.port)
        first, dummy = cron_run(tmp_path, url, 'web0', previous={'203.0.113.7': 600})
        assert first.returncode == 0, first
        files = Files(tmp_path / 'web1')
        log = planted(tmp_path / 'web1', previous={'203.0.113.7': 400})
        (tmp_path / 'none.conf').write_text('')
        args = {'log': [str(log)], 'blocklist': str(files.blocklist), 'exclusions': str(files.exclusions),
                'activity_log': str(files.activity_log), 'server_ip': ['10.0.0.5'], 'now': '@%d' % NOW,
                'config': str(tmp_path / 'none.conf'), 'fleet_store': url, 'fleet_host': 'web1'}
        got = subprocess.run(['ansible', 'localhost', '-c', 'local', '-e', 'ansible_python_interpreter=' + sys.executable,
                              '-m', 'jobboard.bot_detector.bot_detector', '-a', json.dumps(args), '-o', '-v'],
                             cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                             env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), TZ='UTC'))
        assert got.returncode == 0 and b'CHANGED' in got.stdout, got.stdout.decode()[-2000:]
        assert files.read('blocklist') == b'203.0.113.7\n'
        assert SECRET.encode() not in got.stdout
        assert b'"decisions_received": 1' in got.stdout and b'"up": true' in got.stdout
    finally:
        server.kill()


def test_a_followers_pushes_follow_the_hours_turn_without_a_new_line(tmp_path):
    """At the top of the hour the windows move even when no line came: the pushes (and the
    crossings they read) are then of the new windows, the new hour's counts sent whole."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        fleet = Fleet(Settings(fleet_store=server.url, fleet_host='web0', threshold=THRESHOLD), lambda line: None)
        before, after = (in_timezone('UTC', lambda: hour_windows(t)) for t in (NOW, NOW + 600))
        counters = {before[0].stamp: Counter({b'203.0.113.7': 5}), before[1].stamp: Counter({b'203.0.113.7': 7}),
                    after[1].stamp: Counter({b'203.0.113.7': 2})}
        fleet.tick(counters, before, read=1)
        assert fleet.push_once() and [stamp for stamp, dummy in fleet.windows] == [w.stamp for w in before]
        fleet.tick(counters, after, read=0)
        assert [stamp for stamp, dummy in fleet.windows] == [w.stamp for w in after]
        assert fleet.push_once()
        assert fleetstore.window_sums(server.cli, after[1].start) == {'203.0.113.7': 2}
    finally:
        server.kill()


def test_precise_rules_crawler_claims_are_decided_by_each_host_and_never_summed(tmp_path):
    """Under the precise rules an address claiming a crawler is counted under (address, crawler)
    until the host verifies it; only that host can verify it, so the fleet sums addresses only:
    a run with such lines pushes (it crashed sorting the mixed keys), a spread scraper is still
    blocked on both hosts, and 600 + 600 claimed Googlebot requests are blocked on neither."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        claims = b''.join(loggen.line('198.51.100.7', NOW, path='/job/%d' % i, agent='Mozilla/5.0 (compatible; Googlebot/2.1)')
                          for i in range(600))
        results = []
        for host in ('web-a', 'web-b', 'web-a'):        # web-a again: the sums web-b pushed
            files = Files(tmp_path / host)
            log = tmp_path / host / 'access.log'
            log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW, current={'192.0.2.77': 600}, extra=claims)))
            got = run_core(files.options() + ['--rules', 'precise', '--server-ip', '10.0.0.5', '--now', '@%d' % NOW,
                                              '--state-dir', tmp_path / host / 'state', '--fleet-store', server.url,
                                              '--fleet-host', host, '--json', log])
            assert got.returncode == 0, got.stderr
            results.append((json.loads(got.stdout), files))
        for result, files in results[1:]:
            assert result['fleet']['up'] is True and result['warnings'] == []
            assert blocked(files) == ['192.0.2.77']     # 600 + 600 through the store
        sums = fleetstore.window_sums(server.cli, NOW - NOW % 3600)     # the current window's
        assert '198.51.100.7' not in sums and sums.get('192.0.2.77') == 1200
    finally:
        server.kill()


# 2026-10-25 in Europe/Berlin: 03:00 CEST goes back to 02:00 CET at 01:00 UTC. The log's stamp
# 25/Oct/2026:02 names two hours (00:00 and 01:00 UTC), which the host counts as one (the
# reference's hour stamp); the store keeps the two hours apart, by their UTC starts.
DST_FIRST, DST_SECOND = 1792886400, 1792890000      # 00:00 and 01:00 UTC


@pytest.mark.parametrize('now', [DST_SECOND + 3000, DST_SECOND + 4200], ids=['in-the-second-02', 'the-hour-after'])
def test_the_two_hours_of_a_dst_night_are_never_both_given_the_counts_of_the_two(tmp_path, now):
    """A host whose one hour stamp holds both 02:00 hours never pushes those counts as either
    hour's: 300 requests in each hour are at most 300 in each of the store's windows, never 600
    (which a host in UTC with 450 in one of them would have summed to a block, 750 being true)."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        files = Files(tmp_path / 'berlin')
        log = tmp_path / 'berlin' / 'access.log'
        log.write_bytes(in_timezone('Europe/Berlin', lambda: b''.join(
            loggen.line('203.0.113.7', first + i % 50) for first in (DST_FIRST + 1800, DST_SECOND + 300) for i in range(300))))
        got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', '@%d' % now, '--fleet-store', server.url,
                                          '--fleet-host', 'berlin', log], tz='Europe/Berlin')
        assert got.returncode == 0, got
        for start in (DST_FIRST, DST_SECOND):
            assert fleetstore.window_sums(server.cli, start).get('203.0.113.7', 0) <= 300, (start, got)
    finally:
        server.kill()


def test_a_followers_dst_night_pushes_each_hour_only_while_its_stamp_holds_it_alone(tmp_path):
    """The follower's side of the same night: the first 02:00 hour's counts go while it is the
    only 02:00 (its own, exact); once the second has begun, the stamp's counts (both hours) go
    to neither window; the hour after is pushed as ever."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        fleet = Fleet(Settings(fleet_store=server.url + '?cluster=no', fleet_host='berlin', threshold=1000), lambda line: None)
        scraper = b'203.0.113.7'
        for now, counts in ((DST_FIRST + 1800, {b'25/Oct/2026:01': 10, b'25/Oct/2026:02': 300}),
                            (DST_SECOND + 1800, {b'25/Oct/2026:02': 600}),
                            (DST_SECOND + 4200, {b'25/Oct/2026:02': 600, b'25/Oct/2026:03': 50})):
            windows = in_timezone('Europe/Berlin', lambda: hour_windows(now))
            counters = dict((stamp, Counter({scraper: count})) for stamp, count in counts.items())
            in_timezone('Europe/Berlin', lambda: fleet.offer(counters, windows))
            assert fleet.push_once() and fleet.push_once(), fleet.last_error
        assert fleetstore.window_sums(server.cli, DST_FIRST) == {'203.0.113.7': 300}
        assert fleetstore.window_sums(server.cli, DST_SECOND).get('203.0.113.7', 0) == 0
        assert fleetstore.window_sums(server.cli, DST_SECOND + 3600) == {'203.0.113.7': 50}
    finally:
        server.kill()


def test_a_cron_runs_hash_evicted_is_found_by_the_store_and_never_summed_twice(tmp_path):
    """A cron run is a new session each time: it knows nothing it pushed before. With its
    writer's hash evicted (maxmemory) and the sums kept, its next run's absolute counts must not
    be added on top of what the sums still hold of it (300 + 300 + 300 is 900, never 1200)."""
    server = fleetstore.StoreServer(tmp_path).start()
    try:
        for host in ('web0', 'web1', 'web2'):
            got, files = cron_run(tmp_path, server.url, host, previous={'203.0.113.7': 300})
            assert got.returncode == 0, got
        previous = in_timezone('UTC', lambda: hour_windows(NOW))[0]
        assert fleetstore.window_sums(server.cli, previous.start) == {'203.0.113.7': 900}
        evicted = server.cli('--scan', '--pattern', '{bot-detector:v2:%d}:*:w:web0:*' % previous.start).split()
        assert len(evicted) == 1
        server.cli('del', evicted[0])
        got, files = cron_run(tmp_path, server.url, 'web0', previous={'203.0.113.7': 300})
        assert got.returncode == 0 and blocked(files) == [], got
        got, files = cron_run(tmp_path, server.url, 'web1', previous={'203.0.113.7': 300})
        assert blocked(files) == [], got
        assert fleetstore.window_sums(server.cli, previous.start).get('203.0.113.7', 0) <= 900
    finally:
        server.kill()
