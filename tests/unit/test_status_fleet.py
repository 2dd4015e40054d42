"""--status with a fleet store (issue 37): the store's URL without its password, the fleet's
and this host's names, and whether it answers; in text and JSON, against a real redis-server
(requirepass) started on a loopback port: reachable, a wrong password, and the server gone."""
import json
import time

import fleetstore
from conftest import run_core
from loadfactor import Slowdown

SECRET = 'St4tus-S3cret'


def status(files, url, *extra):
    load = Slowdown()
    started = time.time()
    got = run_core(files.options() + ['--status', '--fleet-store', url, '--fleet-host', 'web7'] + list(extra))
    got.seconds = time.time() - started
    got.load = load
    return got


def test_status_shows_the_store_without_its_password_and_whether_it_answers(tmp_path, files):
    server = fleetstore.StoreServer(tmp_path, extra=['--requirepass', SECRET]).start()
    url = 'redis://:%s@127.0.0.1:%d/0' % (SECRET, server.port)
    shown = 'redis://:***@127.0.0.1:%d/0' % server.port
    try:
        text = status(files, url)
        assert text.returncode == 0, text.stderr
        out = text.stdout.decode()
        assert 'Fleet store %s (fleet bot-detector, this host web7): reachable, maxmemory_policy noeviction\n' % shown in out, out
        doc = json.loads(status(files, url, '--json').stdout.decode())
        assert doc['fleet_store'] == {'store': shown, 'name': 'bot-detector', 'host': 'web7', 'reachable': True, 'error': None,
                                      'eviction_policy': 'noeviction'}

        wrong = status(files, url.replace(SECRET, 'not-it'))
        assert wrong.returncode == 0
        line = [text for text in wrong.stdout.decode().splitlines() if text.startswith('Fleet store ')][0]
        assert line.startswith('Fleet store %s (fleet bot-detector, this host web7): unreachable (' % shown), line
        assert 'not-it' not in wrong.stdout.decode() + wrong.stderr.decode()
    finally:
        server.kill()
    gone = status(files, url, '--json')
    assert gone.returncode == 0, gone.stderr
    doc = json.loads(gone.stdout.decode())['fleet_store']
    assert doc['reachable'] is False and doc['error'] and doc['store'] == shown
    assert gone.seconds < gone.load.bound(5), (gone.seconds, gone.load.factor)
    for got in (text, gone):
        assert SECRET not in (got.stdout + got.stderr).decode()


def test_status_without_a_store_says_nothing_of_one(tmp_path, files):
    got = run_core(files.options() + ['--status', '--json'])
    assert got.returncode == 0 and 'fleet_store' not in json.loads(got.stdout.decode())
    assert 'Fleet store' not in run_core(files.options() + ['--status']).stdout.decode()
