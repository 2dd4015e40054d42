# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reference script's rules (the default): the line filter (5.3.2-5.3.7), the
ranking (5.3.7-5.3.9) and the list checks (5.6-5.7), quirks included."""

from __future__ import absolute_import, division, print_function

import heapq
import re
from collections import Counter
from itertools import compress, repeat
from operator import contains, ge, itemgetter, not_

from ..base.text import to_bytes
from ..reading.spill import parts, spilled
from ..reading.tally import largest
from .addresses import is_client_address, mapped_ipv4, parse_address

__metaclass__ = type

# Verdicts on a counted record (rules 5.5-5.8).
BELOW_THRESHOLD = 'below_threshold'
ALREADY_BLOCKED = 'already_blocked'
ALLOW_LISTED = 'allow_listed'
INVALID = 'invalid'
BLOCK = 'block'

_FIRST_FIELD = re.compile(br'[^ \t]+')   # awk's default field splitting: runs of blanks


def prefix_pattern(job_prefixes):
    return re.compile(b'|'.join(re.escape(to_bytes(p)) for p in job_prefixes))


class LineFilter:
    """Rules 5.3.2 to 5.3.6 on whole lines (the stamp, 5.3.1, is matched by the tally)."""

    spillable = True        # its keys are bytes: past a budget, counts may go to files (spill.py)

    def __init__(self, job_prefixes, search_engine):
        self._prefixes = prefix_pattern(job_prefixes)
        self._search_engine = to_bytes(search_engine)
        # All that ``keep`` looks for besides the first field: (texts matched as they are,
        # texts matched in the lower-cased line). A line too long to hold whole is judged
        # by which of them it holds (chunks.LongLine).
        self.needles = ([to_bytes(p) for p in job_prefixes] + [self._search_engine, b'/files/'], [b'bot'])

    def keep(self, line):
        """The rules on one line, as the reference's greps apply them: the definition that
        ``keep_all`` and ``count_into`` must agree with."""
        return (self._prefixes.search(line) is not None
                and b'bot' not in line.lower()
                and self._search_engine not in line
                and b'/files/' not in line)

    def keep_all(self, lines):
        """The lines that ``keep`` keeps, in order, as a list."""
        return self._kept(lines)[0]

    def _kept(self, lines):
        """(the lines ``keep`` keeps, those lines joined by newlines or None).

        The hot path: each rule is one C-level map() over the list (the interpreter never
        loops per line), and a rule whose text is in none of the lines left, which one
        search of them joined shows, costs no pass at all: a search engine's name or
        '/files/' is usually only on lines an earlier rule dropped. 'bot' is on some line of
        nearly every stretch of a real log: when the first lines hold it, its pass runs
        without that search."""
        lines = list(compress(lines, map(self._prefixes.search, lines)))
        if not lines:
            return lines, b''
        # bytes.lower folds ASCII only, as grep -i under LC_ALL=C; twice as fast as an IGNORECASE regex.
        joined = None
        if b'bot' in b'\n'.join(lines[:64]).lower() or b'bot' in b'\n'.join(lines).lower():
            lines = list(compress(lines, map(not_, map(contains, map(bytes.lower, lines), repeat(b'bot')))))
        else:
            joined = b'\n'.join(lines)
        for marker in (self._search_engine, b'/files/'):
            if joined is None:
                joined = b'\n'.join(lines)
            if in_text(marker, joined):     # a marker with a newline may match falsely: only a pass more
                lines = list(compress(lines, map(not_, map(contains, lines, repeat(marker)))))
                joined = None
        return lines, joined

    def kept(self, lines):
        """(the lines ``keep`` keeps, those lines joined by newlines, how to cut their first
        fields): for a caller that counts subsets of them (count_kept)."""
        lines, joined = self._kept(lines)
        if joined is None:
            joined = b'\n'.join(lines)
        return lines, joined, _split_rule(joined)

    @staticmethod
    def count_kept(lines, counter, first_fields):
        """Count the first field of each of ``lines``, some of the lines ``kept`` kept, cut
        by the ``first_fields`` it gave. Returns the keys counted (tally.Tally notes them)."""
        if lines:
            keys = first_fields(lines)
            counter.update(keys)
            return keys
        return None

    def count_into(self, lines, counter):
        """Count the first field of each line the rules keep."""
        lines, joined = self._kept(lines)
        return count_first_fields(lines, counter, joined)


def in_text(needle, text):
    """``needle in text``, twice as fast for a needle of six bytes or more in a large
    text: CPython looks for such a needle with the two-way algorithm, for a shorter one
    with a loop that is faster on average; its first five bytes absent, it is absent."""
    return needle[:5] in text and (len(needle) <= 5 or needle in text)


def first_field(line):
    """awk '{print $1}': the first run of characters other than space and tab."""
    match = _FIRST_FIELD.search(line)
    return match.group(0) if match else b''


def count_first_fields(lines, counter, joined=None):
    """Add 1 to ``counter`` for the first field of each line (``joined``: the lines joined
    by newlines, when the caller has them). Counter.update of a list counts in C; of a
    mapping, in Python; of a chain of maps, a third slower than of their list. Returns the
    keys counted (a list), or None."""
    if lines:
        keys = _split_rule(b'\n'.join(lines) if joined is None else joined)(lines)
        counter.update(keys)
        return keys
    return None


def _split_rule(joined):
    """How to cut the first fields of the lines joined in ``joined``: by ``first_field``
    when one holds a tab (one memchr tells), else at the first space (_first_fields_at_space)."""
    return _first_fields_exact if b'\t' in joined else _first_fields_at_space


def _first_fields_exact(lines):
    return list(map(first_field, lines))


def _first_fields_at_space(lines):
    """The line up to its first space, which is awk's $1 for a line without a tab unless it
    starts with a space (or is empty): then its field is empty, and all are cut by ``first_field``.
    bytes.partition makes a tuple, a third cheaper than split's list."""
    fields = list(map(itemgetter(0), map(bytes.partition, lines, repeat(b' '))))
    return _first_fields_exact(lines) if b'' in fields else fields


def server_test(server_ips):
    """is_server(count, address) for rule 5.3.8, or None without server addresses.

    One server address: the spec's rule 5.3.8, records holding it as a substring of
    '<count> <address>' are dropped. Several (``hostname -i`` printing '::1 127.0.1.1'):
    the spec would look for that whole text, which no record holds; instead each is matched
    as a whole address (in any spelling), never as a substring of another."""
    if not server_ips:
        return None
    if len(server_ips) == 1:
        server = server_ips[0]

        def is_server(count, address):
            return server in b'%d %s' % (count, address)
    else:
        servers = set(address_key(ip) for ip in server_ips)

        def is_server(count, address):
            # An IPv4-mapped address is its IPv4 address (a safety fix: the server itself, logged
            # by a dual-stack listener).
            return address_key(address) in servers or address_key(mapped_ipv4(address) or address) in servers
    return is_server


def top_records(counter, server_ips, top, at_least=None):
    """Order as ``sort | uniq -c | sort -nr`` under LC_ALL=C (equal counts: address in
    descending byte order), drop the server's own records (server_test), keep the first
    ``top``; with ``at_least``, only those of them with that count or more (the records
    under it rank after all of those, so the ones kept are the same). Counts spilled to
    files (spill.py) are ranked a part at a time: the parts hold disjoint keys, so the
    first ``top`` of all are among the parts' first ``top``."""
    is_server = server_test(server_ips)
    if not spilled(counter):
        return _top_of(entries_at_least(counter, at_least), is_server, top)
    found = _top_of_summary(counter, is_server, top, at_least=at_least)
    if found is not None:
        return found
    found = []
    for part in parts(counter):
        found.extend(_top_of(entries_at_least(part, at_least), is_server, top))
    found.sort(reverse=True)
    return found[:top]


def entries_at_least(counter, floor):
    """The entries of ``counter`` with ``floor`` or more (C-level passes), or all of it."""
    if floor is None or floor <= 1:
        return counter
    keys = list(compress(counter.keys(), map(ge, counter.values(), repeat(floor))))
    return Counter(dict(zip(keys, map(counter.get, keys))))


def _top_of_summary(counter, is_server, top, lookups=256, at_least=None):
    """top_records of a spilled counter from its files' summary (spill.summary) and its
    entries in memory, when that is exact: the keys counted more than ``light`` times in
    the files have exact totals; a key in memory that could rank among them (its entry plus
    ``light`` reaches the ``top``-th exact record) is looked up in its partition's files
    (at most ``lookups`` of them); any other key has less than that record, and the exact
    ones are the answer. None when it is not exact (the parts are read then), or without a
    session that keeps summaries (a follower's: a run ranks each window once)."""
    if counter.session is None or not counter.session.summaries:
        return None
    heavy, light = counter.summary()
    exact = Counter(heavy)
    if heavy:       # C-level passes (dict.get: a Counter subclass's own lookup is slower)
        known = [key for key in heavy if key in counter]
        exact.update(dict(zip(known, map(counter.get, known))))
    found = _top_of(exact, is_server, top)
    floor = max(found[-1][0] if len(found) >= top else 1, at_least or 1)
    rising = list(compress(counter.keys(), map(ge, counter.values(), repeat(floor - light))))
    rising = [key for key in rising if key not in heavy] if len(rising) <= lookups + len(heavy) else None
    if rising is None or len(rising) > lookups:
        return None
    if rising:
        exact.update(counter.file_counts(rising))
        exact.update(dict(zip(rising, map(counter.get, rising))))
        found = _top_of(exact, is_server, top)
    if at_least is not None and light < at_least:
        # Every key left out counts under floor: of those at or over at_least, the first
        # ``top`` are all in ``exact`` with their exact counts.
        return [record for record in found if record[0] >= at_least]
    if len(found) < top or light >= found[-1][0]:
        return None
    return found


def _top_of(counter, is_server, top):
    """top_records of one Counter. Usually no server record is among the first ``top``:
    those are the answer. Otherwise one pass over all the records takes the first ``top``
    that are not the server's, testing only those that would enter them (many addresses
    holding the server's as a substring cost one pass, not a ranking per retry)."""
    first = [(count, address) for address, count in largest(counter, top)]
    if is_server is None or not any(is_server(count, address) for count, address in first):
        return first
    heap = []
    push, replace = heapq.heappush, heapq.heapreplace
    for address, count in counter.items():
        if len(heap) < top:
            if not is_server(count, address):
                push(heap, (count, address))
        elif (count, address) > heap[0] and not is_server(count, address):
            replace(heap, (count, address))
    heap.sort(reverse=True)
    return heap


def counts_at_least(counter, server_ips, floor):
    """{key: count} of every key with ``floor`` or more requests, less the server's
    records, one part at a time: at most lines / floor of them."""
    is_server = server_test(server_ips)
    found = {}
    for part in parts(counter):
        keys = list(compress(part.keys(), map(ge, part.values(), repeat(floor))))
        for key in keys:
            count = part[key]
            if is_server is None or not is_server(count, key):
                found[key] = count
    return found


def counts_of(counter, server_ips, keys):
    """{key: count} of each of ``keys`` (bytes), 0 for a key not counted or the server's."""
    is_server = server_test(server_ips)
    wanted = set(keys)
    found = dict((key, 0) for key in wanted)
    for part in parts(counter):
        for key in [key for key in wanted if key in part]:
            count = part[key]
            if is_server is None or not is_server(count, key):
                found[key] = count
    return found


def address_key(field):
    """An address in one spelling ('2001:DB8:0::5' is '2001:db8::5'); other text as it is."""
    address = parse_address(field)
    return field if address is None else address.packed


def decide(count, key, threshold, lists):
    """What to do with one counted record (rules 5.5-5.7): the threshold, then the rules'
    view of the lists (``SubstringLists`` for the spec's rules)."""
    if count < threshold:
        return BELOW_THRESHOLD
    return lists.verdict(key)


class SubstringLists:
    """The spec's lists: substring searches in the files' content (rules 5.6, 5.7)."""

    def __init__(self, blocklist, exclusions):
        self.blocklist, self.exclusions = blocklist, exclusions
        self.words = None       # the blocklist's lines, stripped, for decided()

    def verdict(self, key):
        """The verdict on a record at or over the threshold."""
        if key in self.blocklist:
            return ALREADY_BLOCKED
        return self._unlisted(key)

    def decided(self, key):
        """The verdict on a key the campaign profile decided, not a ranked record: listed when a
        line of the blocklist is it (blanks around it aside), or its network of one address
        (192.0.2.3/32), as the enforcement reads an entry, not when it is inside a line. The
        reference's substring search spared a trap hit of 192.0.2.3 while 192.0.2.34 was listed,
        and a campaign's thousands of them searched a blocklist of 100,000 lines for 1.5 s."""
        if self.words is None:
            self.words = set(map(bytes.strip, bytes(self.blocklist).split(b'\n')))
        listed = key in self.words or key + b'/32' in self.words or key + b'/128' in self.words
        return ALREADY_BLOCKED if listed else self._unlisted(key)

    def _unlisted(self, key):
        if key in self.exclusions:
            return ALLOW_LISTED
        mapped = mapped_ipv4(key)
        if mapped is not None and mapped in self.exclusions:
            # Safety addition: an IPv4-mapped address is its IPv4 address for the allow-list (the
            # enforcement drops it as that address); the reference would block it.
            return ALLOW_LISTED
        if not is_client_address(key):
            # Safety addition: the reference would append it; we never append a non-address.
            return INVALID
        return BLOCK

    def add(self, key):
        if not isinstance(self.blocklist, bytearray):
            # Appended in place: a run adding thousands (a campaign's traps) copied the
            # whole content at each one.
            self.blocklist = bytearray(self.blocklist)
        self.blocklist += b'\n' + key + b'\n'
        if self.words is not None:
            self.words.add(key)


class AppendedContent(bytearray):
    """A blocklist's content as SubstringLists searches it (``key in content``) in a run that
    appends thousands of keys (a campaign's trap hits), the same answers: a key of GRAM bytes or
    more, without a newline, can only be inside the content read or inside one key appended
    (each between newlines), so the appended part is searched only when the key's last GRAM
    bytes (an address's most varied) are a piece of it (``pieces``; past MOST, always). The
    pieces of what was appended are cut when a search comes, not at each append: a campaign's
    decisions are looked for as words (SubstringLists.decided), a ranked record after them."""

    GRAM, MOST = 7, 1 << 17     # at most about 10 MiB of pieces

    def __init__(self, content):
        super(AppendedContent, self).__init__(content)
        self.read, self.pieces = len(content), set()
        self.indexed = self.read        # the pieces hold what was appended up to there

    def __contains__(self, key):
        if self.pieces is not None and self.indexed < len(self):
            self._index()
        if self.pieces is None or len(key) < self.GRAM or b'\n' in key:
            return bytearray.__contains__(self, key)
        return self.find(key, 0, self.read) != -1 or (key[-self.GRAM:] in self.pieces and self.find(key, self.read) != -1)

    def _index(self):
        """Every GRAM bytes appended since the last search, newlines and all, in one C-level pass:
        a key holds no newline, so a piece holding one matches nothing."""
        more = bytes(self[self.indexed:])
        ends = range(self.GRAM, len(more) + 1)
        self.pieces.update(map(more.__getitem__, map(slice, range(len(ends)), ends)))
        self.indexed = len(self)
        if len(self.pieces) > self.MOST:
            self.pieces = None


class SpecRules:
    """The reference script's rules."""

    name = 'spec'

    def __init__(self, settings, resolver=None):
        self.line_filter = LineFilter(settings.job_prefixes, settings.search_engine)
        self.verifications = []

    def examined(self, counter, server_ips, top, at_least=None):
        """The records of one window that get a verdict: [(count, key)]; with ``at_least``,
        only those with that count or more (top_records). A Prefix (the first entries of a
        window's counts) answers when it yields ``top`` records."""
        records = top_records(counter, server_ips, top, at_least)
        if len(records) < top and getattr(counter, 'complete', True) is False:
            records = top_records(counter.full(), server_ips, top, at_least)
        # The reference's command substitution drops NUL bytes from its ranked records (bash:
        # "ignored null byte"): '\0\0ADDR' is decided, printed and appended as ADDR.
        return [(count, key.replace(b'\0', b'')) if b'\0' in key else (count, key) for count, key in records]

    @staticmethod
    def decision_key(address):
        """The key a decision taken elsewhere (fleet) is applied as."""
        return address

    @staticmethod
    def lists(blocklist_content, exclusions_content):
        return SubstringLists(blocklist_content, exclusions_content)
