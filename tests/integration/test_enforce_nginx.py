"""nginx enforcement end to end: Debian's nginx started by the test with a scratch config (its
own prefix, port, pid file and access log, on loopback, the role's snippet included), real
requests with curl from loopback source addresses. The detector runs on nginx's own access
log: the scraper then gets 403, the visitor 200; --unblock serves it again; a geo file that
fails nginx's test never reaches a reload, and the previous file is back."""
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import ROOT
from enforcement import CONNECT_TIMEOUT, MAX_TIME, detector, require_tools, wait_for

SCRAPER, VISITOR = '127.0.0.9', '127.0.0.7'
SNIPPET = ROOT / 'roles' / 'bot_detector' / 'files' / 'bot-detector-block.conf'
CONF = '''
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{ worker_connections 64; }}
http {{
    log_format combined_here '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
                             '"$http_referer" "$http_user_agent"';
    access_log {d}/access.log combined;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    geo $bot_detector_blocked {{
        default 0;
        include {d}/blocked.conf;
    }}
    server {{
        listen 127.0.0.1:{port};
        include {snippet};
        location / {{ return 200; }}
    }}
}}
'''


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class Nginx:
    def __init__(self, base):
        self.dir = base / 'nginx'
        (self.dir / 'tmp').mkdir(parents=True)
        self.port = free_port()
        self.conf = self.dir / 'nginx.conf'
        self.conf.write_text(CONF.format(d=self.dir, port=self.port, snippet=SNIPPET))
        self.geo = self.dir / 'blocked.conf'
        self.geo.write_text('')
        self.base = 'nginx -p %s -c %s' % (self.dir, self.conf)
        self.env = dict(os.environ, TZ='UTC')
        subprocess.run(self.base.split() + ['-g', 'daemon on;'], env=self.env, check=True, timeout=30)

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
        return 'http://127.0.0.1:%d%s' % (self.port, path)

    def reloads(self):
        return (self.dir / 'error.log').read_text().count('(SIGHUP) received')


@pytest.fixture
def nginx(tmp_path):
    require_tools('nginx', 'curl')
    server = Nginx(tmp_path)
    try:
        wait_for(lambda: status(server, VISITOR) == 200)
        yield server
    finally:
        server.stop()


def status(server, source, path='/jobs/1'):
    proc = subprocess.run(['curl', '--interface', source, '-s', '-o', '/dev/null', '-w', '%{http_code}',
                           '--connect-timeout', str(CONNECT_TIMEOUT), '-m', str(MAX_TIME), server.url(path)],
                          stdout=subprocess.PIPE, timeout=MAX_TIME + 5, check=False)
    assert proc.returncode == 0, proc
    return int(proc.stdout)


def options(tmp_path, server, *extra):
    return ['--blocklist', tmp_path / 'blocklist', '--exclusions', tmp_path / 'excluded', '--activity-log',
            tmp_path / 'activity.log', '--server-ip', '127.0.0.1', '--server-ip', '::1', '--enforcement', 'nginx',
            '--nginx-geo-file', server.geo, '--nginx-test-command', server.base + ' -t -q',
            '--nginx-reload-command', server.base + ' -s reload'] + list(extra)


def test_the_scraper_gets_403_the_visitor_200_unblock_serves_it_a_failed_test_never_reloads(nginx, tmp_path):
    # The scraper's 1100 job-page requests: one curl, its URLs globbed; the visitor's few.
    codes = subprocess.run(['curl', '--interface', SCRAPER, '-s', '-w', '%{http_code}\n', '--connect-timeout', '2',
                            '-m', '120', nginx.url('/jobs/[1-1100]')], stdout=subprocess.PIPE, timeout=150, check=True)
    assert codes.stdout.split() == [b'200'] * 1100
    assert [status(nginx, VISITOR, '/jobs/%d' % n) for n in range(3)] == [200] * 3
    log = nginx.dir / 'access.log'

    run = detector(None, options(tmp_path, nginx, log))
    assert run.returncode == 0, run
    assert b'Blocking IP address: %s (1100 requests)' % SCRAPER.encode() in run.stdout
    assert nginx.geo.read_text().splitlines()[2:] == ['%s 1;' % SCRAPER]        # after the header and the digest
    wait_for(lambda: status(nginx, SCRAPER) == 403)
    assert status(nginx, VISITOR) == 200
    assert nginx.reloads() == 1

    again = detector(None, options(tmp_path, nginx, log))       # nothing new: the file is kept, no reload
    assert again.returncode == 0 and b'already blocked' in again.stdout
    time.sleep(0.5)
    assert nginx.reloads() == 1

    unblock = detector(None, options(tmp_path, nginx, '--unblock', SCRAPER))
    assert unblock.returncode == 0, unblock
    wait_for(lambda: status(nginx, SCRAPER) == 200)
    assert nginx.reloads() == 2
    served_geo = nginx.geo.read_bytes()

    # nginx's configuration broken: the test fails, the previous geo file is put back, no reload.
    good = nginx.conf.read_text()
    nginx.conf.write_text(good + 'this is not nginx;\n')
    broken = detector(None, options(tmp_path, nginx, log))
    assert broken.returncode == 4, broken
    assert b'enforcement (nginx) failed' in broken.stderr and b"nginx_test_command" in broken.stderr
    assert b'the previous %s is back' % str(nginx.geo).encode() in broken.stderr
    assert (tmp_path / 'blocklist').read_text() == SCRAPER + '\n'     # the append stays
    assert nginx.geo.read_bytes() == served_geo
    time.sleep(0.5)
    assert nginx.reloads() == 2 and status(nginx, SCRAPER) == 200

    # Repaired: --enforce-now loads it.
    nginx.conf.write_text(good)
    now = detector(None, options(tmp_path, nginx, '--enforce-now'))
    assert now.returncode == 0, now
    wait_for(lambda: status(nginx, SCRAPER) == 403)
