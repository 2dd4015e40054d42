"""nginx JSON without ``escape=json``: nginx's default escaping writes '"', '\\', control bytes
and bytes over 0x7e as ``\\xHH`` inside the JSON strings, which json.loads refuses (issue 38
item 13). Such a line is read as nginx wrote it: its twin is the combined line nginx writes
for the same request (the combined format uses the same escaping)."""
import json

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from conftest import in_timezone, run_core
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.values.settings import Settings

NOW = '2025-11-21 04:13:43'
TIME = '21/Nov/2025:04:12:43 +0000'


def nginx_default_escape(text):
    """A value as nginx's default escaping writes it (ngx_http_log_escape): '"', '\\\\',
    bytes under 0x20 and over 0x7e as \\xHH (upper-case hex), byte by byte."""
    out = []
    for byte in text.encode('utf-8'):
        out.append('\\x%02X' % byte if byte in (0x22, 0x5C) or byte < 0x20 or byte > 0x7E else chr(byte))
    return ''.join(out)


def _line(address, agent, path='/job/1'):
    return ('{"time_local":"%s","remote_addr":"%s","request":"GET %s HTTP/1.1","status":"200","body_bytes_sent":"10",'
            '"http_referer":"-","http_user_agent":"%s"}' % (TIME, address, nginx_default_escape(path), nginx_default_escape(agent))).encode()


@hsettings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet=st.characters(blacklist_categories=('Cs',)), min_size=1, max_size=30), st.text(alphabet='ab"\\/', max_size=5))
def test_a_default_escaped_line_counts_as_the_combined_line_nginx_writes(tmp_path_factory, agent, tail):
    line = _line('203.0.113.7', agent, '/job/' + tail)
    path, escaped_agent = nginx_default_escape('/job/' + tail), nginx_default_escape(agent)
    expected = '203.0.113.7 - - [%s] "GET %s HTTP/1.1" 200 10 "-" "%s"' % (TIME, path, escaped_agent)
    log = tmp_path_factory.mktemp('esc') / 'access.log'
    log.write_bytes(line + b'\n')

    def read():
        reader = choice.reader_for(Settings(log_format='nginx_json'), str(log))[1]
        made = reader.parse(line)
        return made if made is None or isinstance(made, str) else made.decode('utf-8', 'surrogateescape')
    assert in_timezone('UTC', read) == expected


def test_a_scraper_whose_user_agent_holds_a_quote_is_counted(tmp_path, files):
    log = tmp_path / 'access.log'
    log.write_bytes(b'\n'.join([_line('203.0.113.7', 'Scraper "quoted" caf\u00e9')] * 1200) + b'\n')
    got = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'nginx_json', '--json', log])
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [b['address'] for b in out['blocked']] == ['203.0.113.7'] and out['scans'][0]['unparsed_lines'] == 0
    auto = run_core(files.options() + ['--now', NOW, '--server-ip', '10.0.0.5', '--log-format', 'auto', '--json', '--check', log])
    assert auto.returncode == 0 and json.loads(auto.stdout)['formats'] == {str(log): 'nginx_json'}, auto.stderr
