"""nginx enforcement end to end: Debian's nginx started by the test with a scratch config (its
own prefix, pid file and access log, the role's snippet included) in a network namespace of
the test's, real requests with curl from TEST-NET addresses on the namespace's loopback (the
host's loopback is never blocked: exempt.py). The detector runs on nginx's own access
log: the scraper then gets 403, the visitor 200; --unblock serves it again; a geo file that
fails nginx's test never reaches a reload, and the previous file is back."""
import os
import signal
import subprocess
import time

import pytest

from conftest import ROOT
from enforcement import CONNECT_TIMEOUT, MAX_TIME, Lab, detector, nginx_conf, require_tools, sh, wait_for

SERVER, SCRAPER, VISITOR = '192.0.2.1', '192.0.2.9', '192.0.2.7'
SNIPPET = ROOT / 'roles' / 'bot_detector' / 'files' / 'bot-detector-block.conf'


class Nginx:
    def __init__(self, base, lab):
        self.dir = base / 'nginx'
        (self.dir / 'tmp').mkdir(parents=True)
        self.lab = lab
        for address in (SERVER, SCRAPER, VISITOR):
            sh('ip', '-n', lab.server, 'addr', 'add', address, 'dev', 'lo')
        self.port = 8080
        self.conf = self.dir / 'nginx.conf'
        self.conf.write_text(nginx_conf(self.dir, '        listen %s:%d;\n        include %s;\n        location / { return 200; }'
                                        % (SERVER, self.port, SNIPPET), access_log='%s/access.log combined' % self.dir))
        self.geo = self.dir / 'blocked.conf'
        self.geo.write_text('')
        self.base = 'nginx -p %s -c %s' % (self.dir, self.conf)
        self.env = dict(os.environ, TZ='UTC')
        subprocess.run(['ip', 'netns', 'exec', lab.server] + self.base.split() + ['-g', 'daemon on;'], env=self.env, check=True,
                       timeout=30)

    def stop(self):
        try:
            pid = int((self.dir / 'nginx.pid').read_text())
        except (OSError, ValueError):
            return
        os.kill(pid, signal.SIGTERM)
        for dummy in range(100):
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)

    def url(self, path='/jobs/1'):
        return 'http://%s:%d%s' % (SERVER, self.port, path)

    def reloads(self):
        return (self.dir / 'error.log').read_text().count('(SIGHUP) received')


@pytest.fixture
def nginx(tmp_path):
    require_tools('ip', 'nginx', 'curl')
    lab = Lab()
    server = None
    try:
        server = Nginx(tmp_path, lab)
        wait_for(lambda: status(server, VISITOR) == 200)
        yield server
    finally:
        if server is not None:
            server.stop()
        lab.close()


def status(server, source, path='/jobs/1'):
    proc = subprocess.run(['ip', 'netns', 'exec', server.lab.server, 'curl', '--interface', source, '-s', '-o', '/dev/null', '-w', '%{http_code}',
                           '--connect-timeout', str(CONNECT_TIMEOUT), '-m', str(MAX_TIME), server.url(path)],
                          stdout=subprocess.PIPE, timeout=MAX_TIME + 5, check=False)
    assert proc.returncode == 0, proc
    return int(proc.stdout)


def options(tmp_path, server, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', SERVER, '--enforcement', 'nginx',
            '--nginx-geo-file', server.geo, '--nginx-test-command', server.base + ' -t -q',
            '--nginx-reload-command', server.base + ' -s reload'] + list(extra)


def test_the_scraper_gets_403_the_visitor_200_unblock_serves_it_a_failed_test_never_reloads(nginx, tmp_path):
    # The scraper's 1100 job-page requests: one curl, its URLs globbed; the visitor's few.
    codes = subprocess.run(['ip', 'netns', 'exec', nginx.lab.server, 'curl', '--interface', SCRAPER, '-s', '-w', '%{http_code}\n', '--connect-timeout', '2',
                            '-m', '120', nginx.url('/jobs/[1-1100]')], stdout=subprocess.PIPE, timeout=150, check=True)
    assert codes.stdout.split() == [b'200'] * 1100
    assert [status(nginx, VISITOR, '/jobs/%d' % n) for n in range(3)] == [200] * 3
    log = nginx.dir / 'access.log'

    run = detector(nginx.lab.server, options(tmp_path, nginx, log))
    assert run.returncode == 0, run
    assert b'Blocking IP address: %s (1100 requests)' % SCRAPER.encode() in run.stdout
    assert nginx.geo.read_text().splitlines()[2:] == ['%s 1;' % SCRAPER]        # after the header and the digest
    wait_for(lambda: status(nginx, SCRAPER) == 403)
    assert status(nginx, VISITOR) == 200
    assert nginx.reloads() == 1

    again = detector(nginx.lab.server, options(tmp_path, nginx, log))       # nothing new: the file is kept, no reload
    assert again.returncode == 0 and b'already blocked' in again.stdout
    time.sleep(0.5)
    assert nginx.reloads() == 1

    unblock = detector(nginx.lab.server, options(tmp_path, nginx, '--unblock', SCRAPER))
    assert unblock.returncode == 0, unblock
    wait_for(lambda: status(nginx, SCRAPER) == 200)
    assert nginx.reloads() == 2
    served_geo = nginx.geo.read_bytes()

    # nginx's configuration broken: the test fails, the previous geo file is put back, no reload.
    good = nginx.conf.read_text()
    nginx.conf.write_text(good + 'this is not nginx;\n')
    broken = detector(nginx.lab.server, options(tmp_path, nginx, log))
    assert broken.returncode == 4, broken
    assert b'enforcement (nginx) failed' in broken.stderr and b"nginx_test_command" in broken.stderr
    assert b'the previous %s is back' % str(nginx.geo).encode() in broken.stderr
    assert (tmp_path / 'blocklist').read_text() == SCRAPER + '\n'     # the append stays
    assert nginx.geo.read_bytes() == served_geo
    time.sleep(0.5)
    assert nginx.reloads() == 2 and status(nginx, SCRAPER) == 200

    # Repaired: --enforce-now loads it.
    nginx.conf.write_text(good)
    now = detector(nginx.lab.server, options(tmp_path, nginx, '--enforce-now'))
    assert now.returncode == 0, now
    wait_for(lambda: status(nginx, SCRAPER) == 403)
