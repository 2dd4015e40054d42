"""An exclusion list (allow-list) that cannot be read (issue 39 §2). The spec's rules count it
as empty, as the reference does (its stdout and blocklist stay the reference's), but say so:
a warning on standard error naming the file and the cause, and the metric
bot_detector_list_unreadable{list="exclusions"} 1. The precise rules refuse to run without it
(exit status 3, nothing written). Other users are real processes (setpriv to nobody)."""
import os
import shutil
import subprocess
import tempfile

import pytest

import loggen
from conftest import in_timezone, mask_duration, run_core, run_reference
from test_lock import NOBODY, SYSTEM_PYTHON, as_nobody, require_root_and_setpriv

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
SAMPLE = b'bot_detector_list_unreadable{list="exclusions"} %d\n'


def write_log(directory):
    log = os.path.join(str(directory), 'access.log')
    with open(log, 'wb') as handle:
        handle.write(in_timezone('UTC', lambda: loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1200})))
    os.chmod(log, 0o644)
    return log


def read(path):
    with open(path, 'rb') as handle:
        return handle.read()


def test_a_directory_as_allow_list_is_empty_as_in_the_reference_and_said(tmp_path, files):
    log = write_log(tmp_path)
    files.base.mkdir(parents=True, exist_ok=True)
    files.exclusions.mkdir()
    prom = tmp_path / 'bd.prom'
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom, log])
    ref_files = tmp_path / 'ref'
    ref_files.mkdir()
    (ref_files / 'ex').mkdir()
    ref = run_reference(log, ref_files / 'bl', ref_files / 'ex', ref_files / 'act', ['10.0.0.5'], NOW)
    assert got.returncode == ref.returncode == 0, got.stderr
    assert mask_duration(got.stdout) == mask_duration(ref.stdout)
    assert files.read('blocklist') == read(ref_files / 'bl') == b'203.0.113.7\n'
    assert got.stderr.decode() == ('bot-detector: warning: cannot read %s: not a regular file; the exclusion list counts '
                                   'as empty (as the reference does): no address is allow-listed\n' % files.exclusions)
    assert SAMPLE % 1 in prom.read_bytes()
    # Readable again: the gauge goes back to 0, no warning.
    shutil.rmtree(str(files.exclusions))
    files.exclusions.write_bytes(b'192.0.2.1\n')
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom, log])
    assert (got.returncode, got.stderr) == (0, b'')
    assert SAMPLE % 0 in prom.read_bytes()


def test_a_missing_allow_list_is_empty_without_a_word(tmp_path, files):
    log = write_log(tmp_path)
    prom = tmp_path / 'bd.prom'
    got = run_core(files.options() + ['--server-ip', '10.0.0.5', '--now', NOW, '--metrics-file', prom, log])
    assert (got.returncode, got.stderr) == (0, b'')
    assert SAMPLE % 0 in prom.read_bytes()


@pytest.mark.parametrize('check', [False, True])
def test_precise_rules_refuse_to_run_without_their_allow_list(tmp_path, files, check):
    log = write_log(tmp_path)
    files.base.mkdir(parents=True, exist_ok=True)
    files.exclusions.mkdir()
    files.blocklist.write_bytes(b'192.0.2.1\n')
    got = run_core(files.options() + ['--rules', 'precise', '--server-ip', '10.0.0.5', '--now', NOW, log]
                   + (['--check'] if check else []))
    assert got.returncode == 3, got.stderr
    assert got.stderr.decode() == ('bot-detector: error: cannot read %s: not a regular file; the precise rules do not '
                                   'run without their exclusion list\n' % files.exclusions)
    assert files.read('blocklist') == b'192.0.2.1\n' and files.read('activity_log') is None


@pytest.mark.parametrize('rules,status', [('spec', 0), ('precise', 3)])
def test_an_allow_list_another_user_may_not_read(readable_core, rules, status):
    """Mode 0600, root's; the run is nobody's."""
    require_root_and_setpriv()
    shared = tempfile.mkdtemp(prefix='bd-allow-')
    lock_dir = '/tmp/bot-detector-%d' % NOBODY
    try:
        os.chmod(shared, 0o755)
        log = write_log(shared)
        exclusions = os.path.join(shared, 'ipexcludedlist.txt')
        with open(exclusions, 'wb') as handle:
            handle.write(b'203.0.113.7\n')
        os.chmod(exclusions, 0o600)
        own = os.path.join(shared, 'nobody')
        os.mkdir(own)
        os.chown(own, NOBODY, NOBODY)
        prom = os.path.join(own, 'bd.prom')
        env = dict((k, v) for k, v in os.environ.items() if k != 'XDG_RUNTIME_DIR')
        env.update(TZ='UTC', LC_ALL='C.UTF-8')
        args = [SYSTEM_PYTHON, str(readable_core), '--blocklist', os.path.join(own, 'ipblocklist.txt'), '--exclusions',
                exclusions, '--activity-log', os.path.join(own, 'activity.log'), '--server-ip', '10.0.0.5',
                '--now', NOW, '--metrics-file', prom, '--rules', rules, log]
        got = subprocess.run(as_nobody(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=False)
        assert got.returncode == status, got.stderr
        assert ('cannot read %s: Permission denied; ' % exclusions).encode() in got.stderr
        assert got.stderr.count(b'\n') == 1
        assert SAMPLE % 1 in read(prom)
        if rules == 'spec':     # as the reference: the allow-listed address is blocked
            assert read(os.path.join(own, 'ipblocklist.txt')) == b'203.0.113.7\n'
        else:
            assert not os.path.exists(os.path.join(own, 'ipblocklist.txt'))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        shutil.rmtree(lock_dir, ignore_errors=True)
