"""The role's units follow an nftables reload (issue 38, item 6): ``systemctl reload nftables``
runs /etc/nftables.conf, whose ``flush ruleset`` removes the detector's table; PartOf= carries
a restart and a stop, not a reload. The enforce unit is reloaded with nftables.service
(ReloadPropagatedFrom=) and its reload loads the table (ExecReload=); the cron and follow
units may talk netlink and administer the network with nftables enforcement (nft, and the
table's check), not without. The statements are checked as rendered (molecule's enforcement
scenario runs the role in a container; a reload of nftables there is not part of it), and by
systemd-analyze when it is there."""
import os
import shlex
import shutil
import subprocess

import jinja2
import pytest

from conftest import ROOT

TEMPLATES = ROOT / 'roles' / 'bot_detector' / 'templates'
COMMAND = '/usr/local/sbin/bot-detector.sh'


def render(name, enforcement):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), keep_trailing_newline=True)
    env.filters['comment'] = lambda text: '# %s' % text
    env.filters['quote'] = shlex.quote
    return env.get_template(name).render(
        ansible_managed='managed', bot_detector_command=COMMAND, bot_detector_blocklist='/etc/ipblocklist.txt',
        bot_detector_enforcement=enforcement, bot_detector_service_writable=['/etc'], bot_detector_follow_state_dir='/var/lib/bd',
        bot_detector_config_file='/etc/bot-detector/bot-detector.conf', bot_detector_logs=['/var/log/nginx/access.log'])


def statements(text):
    return [line for line in text.splitlines() if line and not line.startswith('#')]


def test_the_enforce_unit_is_reloaded_with_nftables_and_loads_the_table_then():
    lines = statements(render('bot-detector-enforce.service.j2', 'nftables'))
    assert 'ReloadPropagatedFrom=nftables.service' in lines
    assert 'ExecReload=%s --enforce-now' % COMMAND in lines
    assert 'PartOf=nftables.service' in lines and 'After=nftables.service local-fs.target' in lines


@pytest.mark.parametrize('name', ['bot-detector.service.j2', 'bot-detector-follow@.service.j2'])
def test_the_cron_and_follow_units_may_use_netlink_only_with_nftables(name):
    on = statements(render(name, 'nftables'))
    assert 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' in on
    assert [line for line in on if line.startswith('CapabilityBoundingSet=')][0].split('=')[1].split() == [
        'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_CHOWN', 'CAP_FOWNER', 'CAP_NET_ADMIN']
    for other in ('none', 'nginx'):
        off = statements(render(name, other))
        assert 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6' in off and not any('NET_ADMIN' in line for line in off)


def test_systemd_reads_the_units(tmp_path):
    if shutil.which('systemd-analyze') is None:
        if os.environ.get('CI') == 'true':
            pytest.fail('needs systemd-analyze (systemd)')
        pytest.skip('no systemd-analyze')
    for name, unit in (('bot-detector-enforce.service.j2', 'bot-detector-enforce.service'),
                       ('bot-detector-follow@.service.j2', 'bot-detector-follow@x.service')):
        (tmp_path / unit).write_text(render(name, 'nftables').replace(COMMAND, '/bin/true'))
        proc = subprocess.run(['systemd-analyze', 'verify', '--man=no', str(tmp_path / unit)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, check=False, timeout=60)
        assert b'Unknown key' not in proc.stderr and b'Unknown lvalue' not in proc.stderr, proc.stderr
