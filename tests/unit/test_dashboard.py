"""The Grafana dashboard shipped beside the Prometheus rules queries only metrics the detector
writes: the names come from a metrics file written by real runs of the command (a detection
run that blocks, an unblock, a run with a fleet store), and every metric a panel's query names is one of them."""
import json
import re

import fleetstore
from conftest import ROOT, run_core
import loggen

DASHBOARD = ROOT / 'roles' / 'bot_detector' / 'files' / 'prometheus' / 'bot_detector.dashboard.json'
NOW_EPOCH = 1795234423          # 2026-11-21 04:13:43 UTC
# PromQL words that are not metric names: operators, modifiers, aggregations and functions
# (a function is also recognised by the parenthesis after it).
KEYWORDS = {'and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset',
            'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk',
            'quantile'}


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)            # strings (label values, regexes)
    text = re.sub(r'\{[^}]*\}', '', text)                       # label matchers
    text = re.sub(r'\[[^\]]*\]', '', text)                      # ranges
    text = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', r'\1', text)   # label lists
    names = set()
    for match in re.finditer(r'[a-zA-Z_:][a-zA-Z0-9_:]*', text):
        word, rest = match.group(0), text[match.end():]
        if word in KEYWORDS or rest.lstrip().startswith('('):
            continue
        names.add(word)
    return names


def queries(dashboard):
    """Every PromQL text of the dashboard: the panels' targets and the query variables."""
    found = [target['expr'] for panel in dashboard['panels'] for target in panel.get('targets', [])]
    for variable in dashboard['templating']['list']:
        if variable['type'] == 'query':
            found.append(re.sub(r'^label_values\((.*),\s*\w+\)$', r'\1', variable['definition']))
    return found


def written_metrics(tmp_path, files):
    """The metric names in the file written by a detection run that blocks, an unblock, then a
    run with a fleet store (a real redis-server)."""
    log = tmp_path / 'access.log'
    log.write_bytes(loggen.planted_log(NOW_EPOCH, previous={'203.0.113.7': 1450}, current={'198.51.100.9': 30}))
    prom = tmp_path / 'bot_detector.prom'
    common = files.options() + ['--metrics-file', prom]
    got = run_core(common + ['--server-ip', '10.0.0.5', '--now', '2026-11-21 04:13:43', log])
    assert got.returncode == 0 and b'Blocking IP address: 203.0.113.7' in got.stdout, got
    got = run_core(common + ['--unblock', '203.0.113.7'])
    assert got.returncode == 0, got
    server = fleetstore.StoreServer(tmp_path).start()       # a run with a fleet store (issue 37)
    try:
        got = run_core(common + ['--server-ip', '10.0.0.5', '--now', '2026-11-21 04:13:43', '--fleet-store', server.url,
                                 '--fleet-host', 'web1', log])
        assert got.returncode == 0, got
    finally:
        server.kill()
    names = set(re.findall(r'^# TYPE (\w+) ', prom.read_text(), re.M))
    assert 'bot_detector_additions_total' in names and 'bot_detector_blocklist_entries' in names
    return names


def test_metric_names_of_a_query():
    assert metric_names('sum by (instance, reason) (increase(bot_detector_additions_total{instance=~"$instance"}[1h]))') \
        == {'bot_detector_additions_total'}
    assert metric_names('time() - max by (instance) (a{x="b c"} and on (instance, log) (b == 1))') == {'a', 'b'}
    assert metric_names('x / on (instance) group_left () y') == {'x', 'y'}


def test_every_query_names_only_metrics_the_detector_writes(tmp_path, files):
    written = written_metrics(tmp_path, files)
    dashboard = json.loads(DASHBOARD.read_text())
    named = set()
    for expr in queries(dashboard):
        names = metric_names(expr)
        assert names, expr
        assert names - written == set(), expr
        named |= names
    # Runs, duration, lines read, blocks, unblocks and the blocklist's size are all shown.
    assert named >= {'bot_detector_last_run_timestamp_seconds', 'bot_detector_last_run_success',
                     'bot_detector_last_run_duration_seconds', 'bot_detector_last_run_read_lines',
                     'bot_detector_additions_total', 'bot_detector_removals_total', 'bot_detector_blocklist_entries'}


def test_every_panel_is_per_host():
    """Each query keeps the host (label instance) and follows the dashboard's host selector."""
    dashboard = json.loads(DASHBOARD.read_text())
    assert [v['name'] for v in dashboard['templating']['list']] == ['datasource', 'instance']
    for panel in dashboard['panels']:
        assert panel['targets'], panel['title']
        for target in panel['targets']:
            assert 'instance=~"$instance"' in target['expr'], target['expr']
            assert '{{instance}}' in target['legendFormat'], target
            assert target['datasource']['uid'] == '${datasource}'
