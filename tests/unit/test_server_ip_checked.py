"""A server address is an address (issue 39 §2): anything else would leave the server's own
busy address to be blocked. The command, the config file, the module's settings and the role
all refuse it with exit status 2 (bad option) before anything is read or written."""
import pytest
import yaml

import loggen
from conftest import ROOT, in_timezone, run_core
from ansible_collections.jobboard.bot_detector.plugins.filter.host_config import role_problems
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base import errors
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values import settings

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SPECS = yaml.safe_load((ROOT / 'roles' / 'bot_detector' / 'meta' / 'argument_specs.yml').read_text())
BAD = ['not-an-ip', '10.0.0,5', '10.0.0.256', '10.0.0.5 10.0.0.6', '10.0.0.0/24', 'server.example']


def busy_server_log(tmp_path):
    """A log in which the server's own address 10.0.0.5 is the busiest."""
    log = tmp_path / 'access.log'
    log.write_bytes(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'10.0.0.5': 1500},
                                                                  current={'10.0.0.5': 1500})))
    return log


@pytest.mark.parametrize('bad', BAD)
def test_the_command_refuses_a_server_address_that_is_not_one(tmp_path, files, bad):
    log = busy_server_log(tmp_path)
    files.base.mkdir(parents=True, exist_ok=True)
    files.blocklist.write_bytes(b'192.0.2.1\n')
    got = run_core(files.options() + ['--server-ip', bad, '--now', NOW, log])
    assert got.returncode == errors.EXIT_BAD_OPTION, got
    assert got.stderr.decode().strip().endswith("server_ips: %r is not an IP address" % bad)
    assert got.stdout == b''
    assert files.read('blocklist') == b'192.0.2.1\n' and files.read('activity_log') is None


def test_the_command_accepts_addresses_and_drops_the_server(tmp_path, files):
    log = busy_server_log(tmp_path)
    for good in ('10.0.0.5', ' 10.0.0.5', '::1'):
        got = run_core(files.options() + ['--server-ip', good, '--server-ip', '10.0.0.5', '--now', NOW, log])
        assert got.returncode == 0, got
    assert files.read('blocklist') in (None, b'')


def test_the_config_file_refuses_it(tmp_path, files):
    log = busy_server_log(tmp_path)
    config = tmp_path / 'bot-detector.conf'
    config.write_text('[bot_detector]\nserver_ips =\n    10.0.0,5\n')
    got = run_core(files.options() + ['--config', config, '--now', NOW, log])
    assert got.returncode == errors.EXIT_BAD_OPTION, got
    assert "server_ips: '10.0.0,5' is not an IP address" in got.stderr.decode()
    assert files.read('blocklist') is None and files.read('activity_log') is None


@pytest.mark.parametrize('rules', ['spec', 'precise'])
def test_the_module_settings_refuse_it(rules):
    with pytest.raises(errors.BotDetectorError) as caught:
        settings.Settings(surface='module', server_ips=['10.0.0.5', 'not-an-ip'], rules=rules)
    assert caught.value.exit_status == errors.EXIT_BAD_OPTION
    assert caught.value.message == "server_ips: 'not-an-ip' is not an IP address"


def test_the_role_names_its_variable():
    assert role_problems({'bot_detector_server_ips': ['not-an-ip']}, SPECS) == [
        "bot_detector_server_ips: 'not-an-ip' is not an IP address"]
