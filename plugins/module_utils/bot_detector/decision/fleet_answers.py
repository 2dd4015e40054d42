# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host takes of the fleet store's answers (issue 43): the reading side of the trust
boundary. The fleet's ACL lets any host write the sums, the crossings and the other hosts'
hashes directly, so nothing the store hands over is trusted for more than this:

- an entry of the crossings list is read only when it is one a host's push could have made:
  at most ENTRY_BYTES long, a client address in its one canonical spelling (dotted IPv4, RFC
  5952 IPv6: no upper case, no mapped form, no network), its sum a number at or over the
  threshold; anything else is junk, dropped on arrival (``crossing``);
- a host reads at most READ_PER_PUSH entries a window and push (the script cuts the list and
  blanks longer entries, so that the reply is bounded in bytes too), and holds at most
  HELD_PER_WINDOW crossings a window;
- an address taken is decided as this host's own rules would key it (``FleetAnswers.key``):
  with ``ipv4_prefix``/``ipv6_prefix`` its network of that length, never wider, and never
  one that holds a server address, loopback, an allow-listed address or a trusted proxy in any
  spelling (decision/never_blocked.py, the one predicate);
- the fleet's decisions are records of their own, decided after and beside the host's own
  ranked records (drivers/run.decide_and_append): they never take a place of the ``top`` cut.
"""

from __future__ import absolute_import, division, print_function

import os

from ..base.errors import BotDetectorError
from .never_blocked import never_blocked
from .ranges import BITS, client, grouped, spelling

__metaclass__ = type

READ_PER_PUSH = 200         # crossings list entries a host reads per window and push
ENTRY_BYTES = 64            # "address sum": an IPv6 address (45 characters at most) and a sum
SUM_DIGITS = 18             # a sum that is a number at all (a window's requests fit in far fewer)
HELD_PER_WINDOW = 10000     # crossings a follower keeps per window; past it, later ones are not kept


def crossing(item, threshold):
    """(address, sum) of one crossings list entry, or None when it is junk: longer than
    ENTRY_BYTES, not "address sum", the address not a client address in its canonical spelling,
    the sum not a number at or over ``threshold``."""
    if not isinstance(item, bytes) or len(item) > ENTRY_BYTES:
        return None
    address, blank, total = item.rpartition(b' ')
    if not blank or not total.isdigit() or len(total) > SUM_DIGITS or int(total) < threshold:
        return None
    parsed = client(address)
    if parsed is None or spelling(parsed[0], BITS[parsed[0]], parsed[1]) != address:
        return None
    return address, int(total)


class FleetAnswers:
    """This host's view of the fleet's crossings: ``key(address)`` is the key it decides an
    address as (None: never), ``records(crossed)`` the records of a decision. What is never
    blocked is read again when the allow-list changes (its size and time); an allow-list that
    cannot be read makes the fleet's answers count for nothing (the host's own counts decide)."""

    def __init__(self, settings):
        self.settings = settings
        self.lengths = {4: BITS[4], 6: BITS[6]}
        if settings.rules == 'precise':
            self.lengths = {4: settings.ipv4_prefix or BITS[4], 6: settings.ipv6_prefix or BITS[6]}
        self._never, self._seen = None, None

    def never(self):
        try:
            info = os.stat(self.settings.exclusions_file)
            seen = (info.st_size, info.st_mtime_ns, info.st_ino)
        except OSError:
            seen = None
        if self._never is None or seen != self._seen:
            self._never, self._seen = never_blocked(self.settings), seen
        return self._never

    def key(self, address, never=None):
        """The key this host decides the canonical ``address`` as (its network with a prefix
        setting), or None when that key holds an address never blocked."""
        version, value = client(address)
        length = self.lengths[version]
        first = grouped(version, value, length)
        last = first | ((1 << (BITS[version] - length)) - 1)
        if (never or self.never()).network(version, first, last):
            return None
        return spelling(version, length, first)

    def records(self, crossed, threshold):
        """{stamp: [(sum, key)]} of ``crossed`` ({stamp: {address: sum}}), largest first, each
        key once (its largest sum); {} when what is never blocked cannot be read."""
        if not any(crossed.values()):
            return {}       # nothing to take: no allow-list read, no hostname -i
        try:
            never = self.never()
        except BotDetectorError:
            return {}
        found = {}
        for stamp, sums in crossed.items():
            keys = {}
            for address, total in sums.items():
                if total < threshold or crossing(address + b' %d' % total, threshold) is None:
                    continue        # held before a check, or handed by a caller: checked again
                key = self.key(address, never)
                if key is not None and total > keys.get(key, 0):
                    keys[key] = total
            if keys:
                found[stamp] = sorted(((total, key) for key, total in keys.items()), key=lambda r: (-r[0], r[1]))
        return found
