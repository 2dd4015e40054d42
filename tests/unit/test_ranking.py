"""rules.top_records when many records hold the server's address (rule 5.3.8): the same
records as the plain definition, in one pass over the counter whatever their number (issue
20, item 6: each retry used to rank the whole counter again, four times further down)."""
import random
from collections import Counter

import pytest

from ansible_collections.jobboard.bot_detector.plugins.module_utils.bot_detector.decision import rules


class PassCounter(Counter):
    """A Counter that counts the passes over its items and values."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passes = 0

    def items(self):
        self.passes += 1
        return super().items()

    def values(self):
        self.passes += 1
        return super().values()


def plain_top(counter, server, top):
    """The definition: sort -nr (count, then address, descending), drop the records holding
    the server's address as a substring of '<count> <address>', keep the first ``top``."""
    ranked = sorted(((count, address) for address, count in counter.items()), reverse=True)
    return [(c, a) for c, a in ranked if server not in b'%d %s' % (c, a)][:top]


@pytest.mark.parametrize('holders', [0, 25, 3000, 60000])
def test_server_holders_cost_one_pass_and_rank_as_the_definition(holders):
    rng = random.Random(holders)
    server = b'10.1.1.1'
    counts = {}
    # Addresses holding the server's as a substring, busier than everyone else.
    for i in range(holders):
        counts[b'%s%d' % (server, i)] = rng.randint(2000, 5000)
    for i in range(5000):
        counts[b'198.51.%d.%d' % (i // 250, i % 250)] = rng.randint(1, 1500)
    counter = PassCounter(counts)
    counter.passes = 0
    found = rules.top_records(counter, [server], 20)
    assert found == plain_top(Counter(counts), server, 20)
    # largest() reads the values and the items once each; the server drop one more pass.
    assert counter.passes <= 4, counter.passes
