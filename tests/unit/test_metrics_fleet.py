"""The fleet store's metrics (issue 37): bot_detector_fleet_store_up (labelled with the store's
URL without its password), bot_detector_fleet_push_behind_seconds per log, and the counter
bot_detector_fleet_decisions_received_total added up across writes; kept by the runs of other
logs and by a detection run after them. Read by prometheus_client's parser."""
from prometheus_client.parser import text_string_to_metric_families

import loggen
from conftest import in_timezone
from test_metrics import NOW_EPOCH, detect
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.reporting import metrics
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

LOG = '/var/log/nginx/access.log'
STORE = 'redis://bot-detector@10.0.0.9:6379/0'
FLEET_TYPES = {'bot_detector_fleet_store_up': 'gauge', 'bot_detector_fleet_push_behind_seconds': 'gauge',
               'bot_detector_fleet_decisions_received': 'counter'}


class Fleet:
    """What the object that drives the fleet shows the metrics: its three figures and describe()."""

    def __init__(self, up, behind, received):
        self.store_up, self.push_behind_seconds, self.decisions_received = up, behind, received

    def describe(self):
        return STORE


def parsed(path):
    """{sample name: {frozenset(labels): value}}, and each family's type."""
    samples, types = {}, {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.documentation, family
        types[family.name] = family.type
        for sample in family.samples:
            samples.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return samples, types


def follower_settings(tmp_path, files):
    return settings.Settings(blocklist=str(files.blocklist), exclusions_file=str(files.exclusions),
                             activity_log=str(files.activity_log), metrics_file=str(tmp_path / 'bd.prom'))


def test_a_followers_fleet_series_and_the_counter_added_up(tmp_path, files):
    config = follower_settings(tmp_path, files)
    files.blocklist.write_text('')
    metrics.write_follow(config, LOG, 0, 0, {'fleet': 2}, 0, fleet=metrics.fleet_samples(LOG, Fleet(True, 0.4, 2), 2))
    metrics.write_follow(config, '/var/log/b.log', 0, 0, {}, 0,
                         fleet=metrics.fleet_samples('/var/log/b.log', Fleet(False, 12.5, 0), 0))
    metrics.write_follow(config, LOG, 0, 0, {'fleet': 3}, 0, fleet=metrics.fleet_samples(LOG, Fleet(True, 0, 5), 3))
    text = (tmp_path / 'bd.prom').read_text()
    samples, types = parsed(tmp_path / 'bd.prom')
    assert dict((name, types[name]) for name in FLEET_TYPES) == FLEET_TYPES
    assert samples['bot_detector_fleet_store_up'] == {frozenset({'log': LOG, 'store': STORE}.items()): 1.0,
                                                      frozenset({'log': '/var/log/b.log', 'store': STORE}.items()): 0.0}
    assert samples['bot_detector_fleet_push_behind_seconds'] == {frozenset({'log': LOG}.items()): 0.0,
                                                                 frozenset({'log': '/var/log/b.log'}.items()): 12.5}
    assert samples['bot_detector_fleet_decisions_received_total'] == {frozenset(): 5.0}
    assert samples['bot_detector_additions_total'][frozenset({'reason': 'fleet'}.items())] == 5.0
    assert text.count('# TYPE bot_detector_fleet_decisions_received_total counter') == 1


def test_a_run_without_the_store_keeps_the_fleet_series_and_counts_on(tmp_path, files):
    config = follower_settings(tmp_path, files)
    files.blocklist.write_text('')
    metrics.write_follow(config, LOG, 0, 0, {}, 0, fleet=metrics.fleet_samples(LOG, Fleet(True, 0.2, 4), 4))
    log = tmp_path / 'other.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, current={'192.0.2.33': 1100})))
    got = detect(files, log, tmp_path / 'bd.prom')
    assert got.returncode == 0, got.stderr
    samples, dummy = parsed(tmp_path / 'bd.prom')
    assert samples['bot_detector_fleet_store_up'] == {frozenset({'log': LOG, 'store': STORE}.items()): 1.0}
    assert samples['bot_detector_fleet_decisions_received_total'] == {frozenset(): 4.0}
    assert samples['bot_detector_additions_total'][frozenset({'reason': 'own'}.items())] == 1.0


def test_no_store_up_gauge_before_the_stores_first_answer(tmp_path, files):
    config = follower_settings(tmp_path, files)
    files.blocklist.write_text('')
    metrics.write_follow(config, LOG, 0, 0, {}, 0, fleet=metrics.fleet_samples(LOG, Fleet(None, 1.5, 0), 0))
    samples, dummy = parsed(tmp_path / 'bd.prom')
    assert 'bot_detector_fleet_store_up' not in samples
    assert samples['bot_detector_fleet_push_behind_seconds'] == {frozenset({'log': LOG}.items()): 1.5}


def test_real_followers_write_the_fleet_series_up_then_down(tmp_path):
    """Three real followers on a real redis-server, each with its metrics file: the store up, a
    spread scraper's crossing counted once per host; the server killed: 0 within seconds."""
    import fleetstore
    from test_fleet_store import Host, spread, start_all
    from test_follow import wait_for
    server = fleetstore.StoreServer(tmp_path).start()
    hosts = [Host(tmp_path, 'web%d' % i, server.url) for i in range(3)]
    for host in hosts:
        host.follower.extra += ['--metrics-file', str(tmp_path / host.name / 'bd.prom')]
    try:
        start_all(hosts)
        for host, count in zip(hosts, spread(1200)):
            host.write('203.0.113.45', count)

        def series(host):
            path = tmp_path / host.name / 'bd.prom'
            return parsed(path)[0] if path.exists() else {}

        def up(host, value):
            found = series(host).get('bot_detector_fleet_store_up', {})
            return list(found.values()) == [value] and all(dict(labels)['store'] == server.url for labels in found)

        wait_for(lambda: all(up(host, 1.0) and series(host).get('bot_detector_fleet_decisions_received_total')
                             == {frozenset(): 1.0} for host in hosts), 15, 'the metrics: store up, one decision')
        for host in hosts:
            assert '203.0.113.45' in host.blocked()
        server.kill()
        wait_for(lambda: all(up(host, 0.0) for host in hosts), 20, 'the metrics: store down')
        assert all(list(series(host)['bot_detector_fleet_push_behind_seconds'].values()) == [0.0] for host in hosts)
    finally:
        for host in hosts:
            host.stop()
        server.kill()


def test_runs_with_a_store_write_the_fleet_series(tmp_path, files):
    """Real runs (--fleet-store, a real redis-server) of two hosts' logs: the second's crossing
    counted; then the server killed: store up 0 and no push_behind series for that log."""
    import fleetstore
    from conftest import Files
    server = fleetstore.StoreServer(tmp_path).start()
    prom = tmp_path / 'bd.prom'
    logs = []
    for name in ('a', 'b'):
        log = tmp_path / ('%s.log' % name)
        log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, current={'203.0.113.45': 600})))
        logs.append(log)
    try:
        first = detect(files, logs[0], prom, '--fleet-store', server.url, '--fleet-host', 'web1')
        assert first.returncode == 0, first.stderr
        second = detect(Files(tmp_path / 'other-files'), logs[1], tmp_path / 'other.prom', '--fleet-store', server.url, '--fleet-host', 'web2')
        assert second.returncode == 0 and b'203.0.113.45' in second.stdout, second.stdout + second.stderr
        samples, types = parsed(tmp_path / 'other.prom')
        assert samples['bot_detector_fleet_store_up'] == {frozenset({'log': str(logs[1]), 'store': server.url}.items()): 1.0}
        assert samples['bot_detector_fleet_decisions_received_total'] == {frozenset(): 1.0}
        assert samples['bot_detector_fleet_push_behind_seconds'] == {frozenset({'log': str(logs[1])}.items()): 0.0}
        assert types['bot_detector_fleet_decisions_received'] == 'counter'
    finally:
        server.kill()
    down = detect(files, logs[0], prom, '--fleet-store', server.url, '--fleet-host', 'web1')
    assert down.returncode == 0, down.stderr
    samples, dummy = parsed(prom)
    assert samples['bot_detector_fleet_store_up'] == {frozenset({'log': str(logs[0]), 'store': server.url}.items()): 0.0}
    assert 'bot_detector_fleet_push_behind_seconds' not in samples
