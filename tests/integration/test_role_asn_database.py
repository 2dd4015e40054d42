"""The role's copy of the campaign profile's AS database (bot_detector_asn_database_src,
issue 45): real Ansible runs the role's tasks/asn_database.yml with the role's defaults and
vars into a scratch directory (bot_detector_asn_database set there), in check mode (nothing
written) and for real (root's, 0644, the control node's bytes; a newer file copied again);
the host config file the role renders from its variables names the copy, and the command
reads that config and the database. The default destination is checked by rendering the
role's variables alone (nothing written under /var/lib). molecule covers a whole host."""
import json
import os
import stat
import subprocess
import sys

import yaml

from conftest import ROOT, require_root, run_core

ROLE = ROOT / 'roles' / 'bot_detector'
NOW = '2026-11-21 10:50:00'
TSV = '10.0.0.0\t10.31.255.255\t64500\tDE\tRESIDENTIAL-ISP\n10.128.0.0\t10.143.255.255\t65536\tDE\tELSEWHERE\n'


def scraper(address, pages):
    return ''.join('%s - - [21/Nov/2026:10:%02d:00 +0000] "GET /job/%d HTTP/1.1" 200 512 "-" "curl/8"\n'
                   % (address, 10 + i, i) for i in range(pages))


def playbook(tmp_path, variables, tasks, check=False):
    play = [{'name': 'AS database', 'hosts': 'localhost', 'gather_facts': False,
             'vars_files': [str(ROLE / 'defaults' / 'main.yml'), str(ROLE / 'vars' / 'main.yml')], 'tasks': tasks}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))      # extra vars: over the role's
    got = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s' % (tmp_path / 'vars.yml')]
                         + (['--check'] if check else []) + [str(tmp_path / 'play.yml')],
                         cwd=str(ROOT), env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / 'ansible.cfg'), ANSIBLE_NOCOLOR='1'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-3000:]
    return got.stdout


COPY = [{'name': 'Copy', 'ansible.builtin.import_tasks': str(ROLE / 'tasks' / 'asn_database.yml')}]


def recap_changed(stdout):
    return int(stdout.rsplit('changed=', 1)[1].split()[0])


def test_the_role_copies_the_as_database_and_the_host_config_names_the_copy(tmp_path, files):
    require_root('the copy is root-owned')
    source = tmp_path / 'ip2asn.tsv'
    source.write_text(TSV)
    copy = tmp_path / 'host' / 'asn' / 'ip2asn.tsv'
    variables = {'bot_detector_asn_database_src': str(source), 'bot_detector_asn_database': str(copy)}
    assert recap_changed(playbook(tmp_path, variables, COPY, check=True)) == 2
    assert not (tmp_path / 'host').exists()         # check mode: nothing written
    assert recap_changed(playbook(tmp_path, variables, COPY)) == 2
    info = os.stat(str(copy))
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o644, 0, 0)
    assert copy.read_bytes() == source.read_bytes()
    assert recap_changed(playbook(tmp_path, variables, COPY)) == 0
    source.write_text(source.read_text() + '10.200.0.0\t10.200.255.255\t64999\tDE\tNEWER\n')
    assert recap_changed(playbook(tmp_path, variables, COPY)) == 1
    assert copy.read_bytes() == source.read_bytes()
    # The host config file as configure.yml renders it (its combine of the role's values).
    config = tmp_path / 'bot-detector.conf'
    render = [{'name': 'Render the host config', 'ansible.builtin.copy': {
        'dest': str(config), 'mode': '0644',
        'content': "{{ {'bot_detector_campaigns': true} | combine(bot_detector_asn_database_config)"
                   " | jobboard.bot_detector.host_config }}"}}]
    playbook(tmp_path, variables, render)
    assert ['asn_database = %s' % copy] == [line for line in config.read_text().splitlines() if line.startswith('asn_')]
    log = tmp_path / 'access.log'
    log.write_text(scraper('10.200.1.9', 3))
    got = run_core(files.options() + ['--config', config, '--server-ip', '198.51.100.1', '--now', NOW, '--json', log])
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)['changed'] is False


def test_without_a_destination_the_copy_goes_under_var_lib_and_without_a_source_nowhere(tmp_path):
    show = [{'name': 'Show', 'ansible.builtin.debug': {'msg': 'PATH={{ bot_detector_asn_database_path }} '
                                                              'CONFIG={{ bot_detector_asn_database_config | to_json }}'}}]
    out = playbook(tmp_path, {'bot_detector_asn_database_src': 'files/GeoLite2-ASN.mmdb'}, show)
    assert 'PATH=/var/lib/bot-detector/asn/GeoLite2-ASN.mmdb CONFIG={\\"bot_detector_asn_database\\": ' in out
    out = playbook(tmp_path, {}, show)
    assert 'CONFIG={}' in out
