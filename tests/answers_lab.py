"""Helpers of the answers' tests (issue 46): a scratch nginx from Debian on loopback ports with
Debian's njs module and the configuration the command prints (--nginx-snippet), behind a
balancer as users run it: realip takes the client from X-Forwarded-For sent by 127.0.0.1,
so a test picks each client's address; a second server block is the balancer itself, for a
browser, which sets X-Forwarded-For to one address. Importable without pytest (the replay
benchmark, tests/bench/nginx_replay_bench.py, uses CONF and free_port with /usr/bin/python3)."""
import http.client
import os
import secrets
import shutil
import socket
import subprocess
import time

NJS_MODULE = '/usr/lib/nginx/modules/ngx_http_js_module.so'
BROWSER_ADDRESS = '203.0.113.50'
JOB_PAGES = ('job/1', 'job/2', 'jobs/list', 'healthz', 'static/app.css', 'robots.txt')

CONF = '''
load_module {module};
{user}
pid {d}/nginx.pid;
error_log {d}/error.log notice;
worker_processes 1;
events {{ worker_connections 512; }}
http {{
    access_log {d}/access.log combined;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    include {d}/answers-http.conf;
    server {{
        listen 127.0.0.1:{port};
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Forwarded-For;
        include {d}/answers-server.conf;
        location / {{
            root {d}/www;
            default_type text/html;
        }}
    }}
    server {{
        listen 127.0.0.1:{balancer};
        location / {{
            proxy_pass http://127.0.0.1:{port};
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For {browser};
        }}
    }}
}}
'''


def require_nginx_js():
    """nginx and its njs module, or (outside CI) a skip; under CI a failure."""
    missing = [what for what, there in (('nginx', shutil.which('nginx')), ('libnginx-mod-http-js', os.path.exists(NJS_MODULE)))
               if not there]
    if missing:
        import pytest
        if os.environ.get('CI') == 'true':
            pytest.fail('answers test needs %s (tests/tools/install-prereqs.sh)' % ', '.join(missing))
        pytest.skip('needs %s' % ', '.join(missing))


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class AnswersLab:
    """The lists, the answers' directory, the secret and a running scratch nginx under ``base``."""

    def __init__(self, base, files, *settings):
        from conftest import run_core
        require_nginx_js()
        self.d = base
        self.files = files
        (base / 'tmp').mkdir(parents=True)
        (base / 'www').mkdir()
        for page in JOB_PAGES:
            (base / 'www' / page).parent.mkdir(parents=True, exist_ok=True)
            (base / 'www' / page).write_text('<p>page %s</p>\n' % page)
        self.secret = base / 'challenge.secret'
        self.secret.write_text(secrets.token_hex(32) + '\n')
        files.base.mkdir(parents=True, exist_ok=True)
        self.options = files.options() + [
            '--server-ip', '10.9.9.9', '--throttle-list', base / 'throttle.txt', '--challenge-list', base / 'challenge.txt',
            '--answer-dir', base / 'answers', '--nginx-answers-dir', base, '--challenge-secret-file', self.secret,
            '--answer-exempt-path', '/healthz', '--answer-exempt-path', '/static/', '--answer-exempt-path', '/robots.txt',
        ] + list(settings)
        for part, name in (('http', 'answers-http.conf'), ('server', 'answers-server.conf'), ('js', 'answers.js'),
                           ('page', 'challenge.html')):
            got = run_core(self.options + ['--nginx-snippet', part])
            assert got.returncode == 0, got.stderr
            (base / name).write_bytes(got.stdout)
        self.port, self.balancer = free_port(), free_port()
        (base / 'nginx.conf').write_text(CONF.format(
            module=NJS_MODULE, d=base, port=self.port, balancer=self.balancer, browser=BROWSER_ADDRESS,
            user='user root;' if os.geteuid() == 0 else ''))
        self.command('--throttle', '192.0.2.1')         # the lists and the directory made (then emptied)
        self.command('--unblock', '192.0.2.1')
        proc = subprocess.run(['nginx', '-p', str(base), '-c', str(base / 'nginx.conf'), '-e', str(base / 'error.log')],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr.decode() + (base / 'error.log').read_text()
        self.master = int((base / 'nginx.pid').read_text())
        # The master writes its pid before it forks the worker; under load a test could read the
        # workers before there is one, and take the first for a reload.
        deadline = time.time() + 10
        while not self.workers() and time.time() < deadline:
            time.sleep(0.02)
        assert len(self.workers()) == 1, 'nginx started no worker: %s' % (base / 'error.log').read_text()

    def command(self, *args):
        from conftest import run_core
        got = run_core(self.options + list(args))
        assert got.returncode == 0, got.stderr
        return got

    def workers(self):
        return subprocess.run(['pgrep', '-P', str(self.master)], stdout=subprocess.PIPE, check=False).stdout.split()

    def crashes(self):
        """The error log's lines of workers that died (the master starts another: not a reload)."""
        return [line for line in (self.d / 'error.log').read_text().splitlines() if 'exited on signal' in line]

    def close(self):
        subprocess.run(['kill', '-QUIT', str(self.master)], check=False)
        deadline = time.time() + 10
        while time.time() < deadline and os.path.exists('/proc/%d' % self.master):
            time.sleep(0.05)

    def connection(self):
        return http.client.HTTPConnection('127.0.0.1', self.port, timeout=10)

    def get(self, path, client, headers=None, method='GET', connection=None, body=None):
        """(status, headers {lower-case name: value}, body) of one request from ``client``."""
        conn = connection or self.connection()
        sent = {'X-Forwarded-For': client, 'Accept': 'text/html,application/xhtml+xml,*/*;q=0.8'}
        sent.update(headers or {})
        conn.request(method, path, body=body, headers=dict((k, v) for k, v in sent.items() if v is not None))
        response = conn.getresponse()
        data = response.read()
        got = dict((name.lower(), value) for name, value in response.getheaders())
        got['set-cookie'] = response.msg.get_all('Set-Cookie') or []
        if connection is None:
            conn.close()
        return response.status, got, data
