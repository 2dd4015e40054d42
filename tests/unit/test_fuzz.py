"""Fuzzing the detector with generated logs and lists (hypothesis). Invariants: it never
appends anything that is not an address; it never appends an address already present
(in the spec's sense: found by the substring search); and it agrees with the reference
pipeline, but for the non-addresses the reference would append and the IPv4-mapped addresses
whose IPv4 address the allow-list holds (both documented in guide_contract)."""
import os

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import loggen
from conftest import Files, mask_duration, run_core, run_reference
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision.addresses import is_client_address, mapped_ipv4

NOW = '2026-11-21 04:13:43'
NOW_EPOCH = 1795234423
THRESHOLD = 5
FIELDS = ['1.2.3.4', '11.2.3.45', '1.2.3.40', '203.0.113.7', '2001:db8::7', '2001:db8::70', '::ffff:1.2.3.4',
          '10.0.0.5', '10.0.0.51', '-', 'crawler.example', '1.2.3.4,5.6.7.8', '0.0.0.0/0', '0.0.0.0', '256.1.1.1',
          '\u00e9t\u00e9', '1.2.3.04']
KINDS = ['counted', 'counted', 'counted', 'bot', 'google', 'files', 'post', 'other-hour']

requests = st.lists(st.tuples(st.sampled_from(FIELDS), st.sampled_from(['previous', 'current']),
                              st.sampled_from(KINDS), st.integers(1, 12)), max_size=40)
list_lines = st.lists(st.one_of(st.sampled_from(FIELDS), st.text(alphabet='0123456789.:abcdef/', max_size=12)), max_size=8)


def render(spec, garbage):
    out = []
    for field, window, kind, count in spec:
        epoch = NOW_EPOCH - 3600 if window == 'previous' else NOW_EPOCH
        for i in range(count):
            agent, path, method = loggen.BROWSERS[0], '/job/%d' % i, 'GET'
            if kind == 'bot':
                agent = 'SomeBoT/1.0'
            elif kind == 'google':
                agent = 'Google Web Preview'
            elif kind == 'files':
                path = '/job/files/%d.pdf' % i
            elif kind == 'post':
                method = 'POST'
            elif kind == 'other-hour':
                epoch = NOW_EPOCH - 7200
            out.append(loggen.line(field, epoch, method=method, path=path, agent=agent))
    out.extend(g.replace(b'\n', b' ') + b'\n' for g in garbage)
    return b''.join(out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(spec=requests, garbage=st.lists(st.binary(max_size=60), max_size=5), blocked=list_lines, excluded=list_lines,
       unterminated=st.booleans(), budget=st.sampled_from([None, None, 1, 3]))
def test_invariants(tmp_path_factory, spec, garbage, blocked, excluded, unterminated, budget):
    """``budget``: a count_budget of 1 or 3 addresses drives the bounded path (counts
    spilled to files in a private TMPDIR, issue 19) against the reference too."""
    os.environ['TZ'] = 'UTC'
    tmp_path = tmp_path_factory.mktemp('fuzz')
    log = tmp_path / 'access.log'
    log.write_bytes(render(spec, garbage))
    before = ''.join(b + '\n' for b in blocked).encode('utf-8')
    if unterminated and before:
        before = before[:-1]
    ours, theirs = Files(tmp_path / 'ours'), Files(tmp_path / 'reference')
    for f in (ours, theirs):
        f.blocklist.write_bytes(before)
        f.exclusions.write_bytes(''.join(e + '\n' for e in excluded).encode('utf-8'))
    bounded = [] if budget is None else ['--count-budget', str(budget)]
    got = run_core(ours.options() + bounded + ['--server-ip', '10.0.0.5', '--threshold', str(THRESHOLD), '--now', NOW, log],
                   extra_env={'TMPDIR': str(tmp_path)})       # a private directory to spill to (issue 44: never /tmp)
    assert got.returncode == 0, got.stderr
    after = ours.read('blocklist')
    assert after.startswith(before)
    added = after[len(before):]
    if before and not before.endswith(b'\n') and added:
        assert added.startswith(b'\n')             # never glued to the last entry
        added = added[1:]
    present = before
    for entry in added.split(b'\n')[:-1] if added else []:
        assert is_client_address(entry), entry     # only addresses
        assert entry not in present, entry         # never one already listed
        present += b'\n' + entry + b'\n'

    if unterminated and before:
        return                                     # the reference would glue lines: nothing to compare
    ref = run_reference(log, theirs.blocklist, theirs.exclusions, theirs.activity_log, ['10.0.0.5'], NOW,
                        extra_env={'BD_THRESHOLD': str(THRESHOLD)})
    ref_added = (theirs.read('blocklist') or b'')[len(before):].split(b'\n')[:-1]
    exclusions = ours.exclusions.read_bytes()
    spared = [e for e in ref_added if mapped_ipv4(e) is not None and mapped_ipv4(e) in exclusions]
    if spared:      # the safety addition (guide_contract): a mapped address is its IPv4 one for the allow-list
        assert (added.split(b'\n')[:-1] if added else []) == [e for e in ref_added if e not in spared]
        for entry in spared:
            assert b'IP address %s is allow-listed' % entry in got.stdout
        return
    if all(is_client_address(e) for e in ref_added):      # a valid log: the same output, line for line
        assert mask_duration(got.stdout) == mask_duration(ref.stdout)
        assert (added.split(b'\n')[:-1] if added else []) == ref_added
