"""``log_format: auto`` decides from the lines that parse (issue 38, item 4; issue 39, section 3):
a format is chosen when it fits most of the log's first lines and no other fits as many, so one
client's request among them (a Basic-auth user with a space, which nginx writes unescaped), a
line with a stray quote, a proxy's own message or a syslog prefix can neither refuse the log
nor choose its format; the odd lines are then counted as unparsed, as in any log."""
import pytest
from hypothesis import given, settings as hsettings, strategies as st

import loggen
import logformats
from conftest import in_timezone
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.base.errors import BotDetectorError
from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.formats import choice

NOW_EPOCH = 1763698423
FORMATS = ('combined',) + logformats.FORMATS
# Lines a client or another program puts in a log, whatever its format.
ODD_LINES = [
    b'198.51.100.9 - john doe [21/Nov/2025:04:10:00 +0000] "GET /job/1 HTTP/1.1" 200 5 "-" "curl"',   # $remote_user, a space
    b'{"remote_addr":"198.51.100.9","time_local":"21/Nov/2025:04:10:00 +0000","request":"GET /job/"1 HTTP/1.1"}',  # a stray quote
    b'Nov 21 04:10:00 lb haproxy[123]: 198.51.100.9:4321 [21/Nov/2025:04:10:00.123] https/1: SSL handshake failure',
    b'<134>Nov 21 04:10:00 web nginx: 198.51.100.9 - - [21/Nov/2025:04:10:00 +0000] "GET / HTTP/1.1" 200 5 "-" "x"',
    b'2025/11/21 04:10:00 [error] 123#0: *1 open() "/srv/x" failed (2: No such file or directory)',
    b'\x00\x00\x00garbage',
]


def log_in(fmt, count, seed):
    combined = in_timezone('UTC', lambda: b''.join(loggen.line('198.51.100.%d' % (i % 9 + 1), NOW_EPOCH - 600 + i)
                                                   for i in range(count)))
    return combined if fmt == 'combined' else logformats.render_log(fmt, combined, style=seed, vary=False)[0]


@hsettings(max_examples=60, deadline=None)
@given(st.sampled_from(FORMATS), st.integers(10, 60), st.lists(st.sampled_from(ODD_LINES), min_size=1, max_size=6),
       st.randoms(use_true_random=False), st.integers(0, 3))
def test_odd_lines_among_the_first_ones_neither_refuse_nor_choose_the_format(fmt, count, odd, rng, seed):
    lines = log_in(fmt, count, seed).split(b'\n')
    header = [line for line in lines if line.startswith(b'#')]
    body = [line for line in lines if line and not line.startswith(b'#')]
    odd = odd[:max(1, len(body[:50]) // 10)]        # at most a tenth of the lines looked at
    for line in odd:
        body.insert(rng.randrange(0, min(len(body), 40)), line)
    head = b'\n'.join(header + body) + b'\n'
    assert choice.detect(head, 'x') == fmt


@pytest.mark.parametrize('fmt', FORMATS)
def test_a_log_of_mostly_odd_lines_is_still_refused(fmt):
    """Where the format fits only a few of the first lines, auto does not guess."""
    body = [line for line in log_in(fmt, 4, 0).split(b'\n') if line and not line.startswith(b'#')][:2]
    head = b'\n'.join(body + ODD_LINES * 2) + b'\n'
    with pytest.raises(BotDetectorError) as refused:
        choice.detect(head, 'x')
    assert 'cannot tell the format' in refused.value.message
