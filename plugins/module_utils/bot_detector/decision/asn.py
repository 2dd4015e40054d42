# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Autonomous systems from an offline database (setting ``asn_database``; issue 45): which AS
and which of its ranges an address is in.

Two formats, told by their first bytes: the ip2asn TSV files iptoasn.com publishes (one range
a line, ``range_start range_end AS_number country AS_description``, IPv4 and IPv6, sorted),
held as sorted arrays (array module: starts, ends, AS numbers; IPv6 by the first 64 bits of
its ranges' bounds), and a MaxMind-format database (GeoLite2-ASN, DB-IP's ASN Lite) read in
place through Debian's python3-maxminddb, imported only here, only when such a file is set
(under ``python3 -S`` its dist-packages is added to the path then, as for redis-py).

A file that is a link, not a regular file, larger than MAX_BYTES, truncated, unsorted or not
a database is refused with one line naming it (exit status 2), before any log is read.

Also what an AS's verdict lists of its ranges (as_sums, range_pieces), the host's and the
fleet's alike: only a run with a database comes to it."""

from __future__ import absolute_import, division, print_function

import operator
import os
import socket
import stat
import sys
from array import array
from bisect import bisect_right
from functools import partial
from itertools import compress, repeat
from operator import contains, ge, gt, itemgetter, not_

from ..base.errors import bad_option
from .ranges import BITS, address_text, network_text, range_networks

__metaclass__ = type

DEBIAN_PACKAGES = '/usr/lib/python3/dist-packages'
MAX_BYTES = 256 * 1024 * 1024       # ip2asn-combined is about 30 MB, GeoLite2-ASN about 10 MB
MMDB_MARKER = b'\xab\xcd\xefMaxMind.com'


def _refuse(path, why):
    return bad_option('asn_database: %s: %s' % (path, why))


def open_database(path):
    """The database in ``path``, checked: an Ip2asn or an Mmdb."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        raise _refuse(path, 'a symbolic link (give the file itself)' if os.path.islink(path) else exc.strerror or str(exc))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refuse(path, 'not a regular file')
    with os.fdopen(fd, 'rb') as handle:
        if info.st_size > MAX_BYTES:
            raise _refuse(path, 'larger than %d MiB (%d bytes): not an AS database' % (MAX_BYTES >> 20, info.st_size))
        if info.st_size == 0:
            raise _refuse(path, 'empty')
        head = handle.read(4096)
        handle.seek(max(0, info.st_size - 128 * 1024))
        tail = handle.read()
        if MMDB_MARKER in tail:
            return Mmdb(path)
        if b'\0' in head:
            raise _refuse(path, 'not an ip2asn TSV file or a MaxMind database')
        handle.seek(0)
        return Ip2asn(path, handle.read(), os.dup(fd))


BLOCK = 1 << 20            # bytes of whole rows converted at a time: bounded memory


class Ip2asn:
    """An ip2asn TSV file as sorted arrays. ``lookup_number(version, number)``: (AS number,
    its range) or None (not routed, AS 0). ``names.get(number, default)``: an AS's
    description, read from the file (``fd``) when a decision names it."""

    def __init__(self, path, data, fd=None):
        if not data.endswith(b'\n'):
            raise _refuse(path, 'truncated (its last line has no end)')
        self.v4 = (array('I'), array('I'), array('I'))
        self.v6 = (array('Q'), array('Q'), array('I'))
        self.names = Names(fd, len(data))
        try:
            if self._blocks(data):
                if not self.v4[0] and not self.v6[0]:
                    raise _refuse(path, 'no range of an AS')
                return
        except (OSError, ValueError, OverflowError, UnicodeEncodeError):
            pass
        self._rows(path, data)      # the line at fault, found and named line by line

    def _blocks(self, data):
        """The file read BLOCK bytes of whole rows at a time, each a column at a time, by C-level
        passes; False when a row is not five fields or out of order (the slow path names it).
        The rows are decoded as Latin-1 (a byte a character, never an error: a description
        may be UTF-8), so that an address that is not ASCII fails in inet_pton (which, unlike
        inet_aton, takes no octal, hexadecimal or short form, nor text after the address)."""
        at = 0
        while at < len(data):
            end = data.find(b'\n', min(at + BLOCK, len(data) - 1)) + 1
            text = data[at:end - 1].decode('latin-1')
            fields = text.replace('\t', '\n').split('\n')
            rows = text.count('\n') + 1
            at = end
            if len(fields) != 5 * rows:
                return False
            starts, ends, numbers = fields[0::5], fields[1::5], array('I', map(int, fields[2::5]))
            del fields      # the descriptions: read when named (Names)
            six = list(map(contains, starts, repeat(':')))
            for table, version in ((self.v4, 4), (self.v6, 6)):
                chosen = list(map(operator.and_, map(bool, numbers), six if version == 6 else map(not_, six)))
                if not any(chosen):
                    continue
                for column, texts in ((table[0], starts), (table[1], ends)):
                    texts = texts if all(chosen) else list(compress(texts, chosen))
                    if version == 4:
                        joined = ''.join(texts)
                        if len(joined) - len(joined.replace('.', '')) != 3 * len(texts):
                            return False
                        packed = b''.join(map(partial(socket.inet_pton, socket.AF_INET), texts))
                    else:
                        packed = b''.join(map(itemgetter(slice(0, 8)), map(partial(socket.inet_pton, socket.AF_INET6), texts)))
                    grown = array(column.typecode)
                    grown.frombytes(packed)
                    if sys.byteorder == 'little':
                        grown.byteswap()
                    column.extend(grown)
                table[2].extend(compress(numbers, chosen))
        for first, last, dummy in (self.v4, self.v6):
            if not all(map(ge, last, first)) or not all(map(gt, first[1:], last[:-1])):
                return False
        return True

    def _rows(self, path, data):
        self.v4 = (array('I'), array('I'), array('I'))
        self.v6 = (array('Q'), array('Q'), array('I'))
        inet_pton, af6 = socket.inet_pton, socket.AF_INET6
        from_bytes = int.from_bytes
        for number, line in enumerate(data.split(b'\n')[:-1], 1):
            fields = line.split(b'\t')
            try:
                if len(fields) != 5:
                    raise ValueError('%d fields, not 5' % len(fields))
                start, end, asn = fields[0], fields[1], int(fields[2])
                if not 0 <= asn < 2 ** 32:
                    raise ValueError('AS number out of range')
                if b':' in start:
                    table = self.v6
                    low, high = from_bytes(inet_pton(af6, start.decode('ascii'))[:8], 'big'), \
                        from_bytes(inet_pton(af6, end.decode('ascii'))[:8], 'big')
                else:
                    table = self.v4
                    low, high = from_bytes(inet_pton(socket.AF_INET, start.decode('ascii')), 'big'), \
                        from_bytes(inet_pton(socket.AF_INET, end.decode('ascii')), 'big')
                    if start.count(b'.') != 3 or end.count(b'.') != 3:
                        raise ValueError('not an IPv4 address')
            except (ValueError, OSError, UnicodeDecodeError) as exc:
                raise _refuse(path, 'line %d is not range_start range_end AS_number country AS_description (%s)'
                              % (number, exc))
            if high < low or (table[1] and low <= table[1][-1]):
                raise _refuse(path, 'line %d: ranges must be sorted and apart' % number)
            if asn:
                table[0].append(low)
                table[1].append(high)
                table[2].append(asn)
        if not self.v4[0] and not self.v6[0]:
            raise _refuse(path, 'no range of an AS')

    def lookup_number(self, version, number):
        """(AS number, its range as (version, first, last) integers) of the address
        ``number`` (an integer of IP ``version``), or None (not routed, AS 0)."""
        starts, ends, dummy = self.v4 if version == 4 else self.v6
        key = number if version == 4 else number >> 64
        at = bisect_right(starts, key) - 1
        return None if at < 0 or key > ends[at] else self._answer(version, at)

    def lookup_numbers(self, pairs):
        """{(version, number): lookup_number(version, number)} of ``pairs``: each row found by a
        C-level pass over them, its answer made once (a judgement looks up thousands of addresses)."""
        found = {}
        for version in (4, 6):
            mine = [number for ip_version, number in pairs if ip_version == version]
            starts, ends, dummy = self.v4 if version == 4 else self.v6
            keys = mine if version == 4 else [number >> 64 for number in mine]
            made = {}
            for number, key, at in zip(mine, keys, map(bisect_right, repeat(starts), keys)):
                at -= 1
                if at < 0 or key > ends[at]:
                    found[(version, number)] = None
                else:
                    found[(version, number)] = made[at] if at in made else made.setdefault(at, self._answer(version, at))
        return found

    def _answer(self, version, at):
        """lookup_number's answer for the row ``at`` of ``version``'s table."""
        starts, ends, numbers = self.v4 if version == 4 else self.v6
        if version == 4:
            return numbers[at], (4, starts[at], ends[at])
        return numbers[at], (6, starts[at] << 64, (ends[at] << 64) | (2 ** 64 - 1))


def as_label(database, asn, hosting=False):
    """'AS<number> <its name>' as a decision's reason names it, ' (hosting)' after one of
    ``hosting_asns``; the number alone when the database names it not."""
    name = database.names.get(asn, '')
    name = name.decode('utf-8', 'replace') if isinstance(name, bytes) else name
    return ('AS%d %s' % (asn, name.strip())).rstrip() + (' (hosting)' if hosting else '')


class Names:
    """An ip2asn file's AS descriptions, read when a decision names an AS (a few a run) rather
    than held for each of its rows: ``get(number, default)``, the first row's of that AS,
    from the file the arrays were read from (``fd``, kept open: a file replaced since is not
    read), ``default`` without one."""

    def __init__(self, fd, size):
        self.fd, self.size, self.found = fd, size, {}

    def get(self, number, default=None):
        if number not in self.found:
            self.found[number] = self._read(number)
        found = self.found[number]
        return default if found is None else found

    def _read(self, number):
        if self.fd is None:
            return None
        try:
            data = os.pread(self.fd, self.size, 0)
        except OSError:
            return None
        needle = b'\t%d\t' % number
        at = data.find(needle)
        while at != -1:
            start, end = data.rfind(b'\n', 0, at) + 1, data.find(b'\n', at)
            fields = data[start:end].split(b'\t')
            if len(fields) == 5 and fields[2] == needle[1:-1]:
                return fields[4]
            at = data.find(needle, end)
        return None

    def __del__(self):
        if self.fd is not None:
            os.close(self.fd)


class Mmdb:
    """A MaxMind-format ASN database, read in place (memory-mapped)."""

    def __init__(self, path):
        try:
            import maxminddb    # only a run with an mmdb file set: Debian's python3-maxminddb
        except ImportError:
            if DEBIAN_PACKAGES not in sys.path and os.path.isdir(DEBIAN_PACKAGES):
                sys.path.append(DEBIAN_PACKAGES)       # python3 -S: no site-packages
            try:
                import maxminddb    # only a run with an mmdb file set, now from Debian's packages
            except ImportError:
                raise _refuse(path, 'a MaxMind database needs the maxminddb module (Debian: python3-maxminddb)')
        self.path = path
        try:
            self.reader = maxminddb.open_database(path, maxminddb.MODE_MMAP)
            kind = self.reader.metadata().database_type
            self.ip_version = self.reader.metadata().ip_version
        except Exception as exc:  # pylint: disable=broad-except
            raise _refuse(path, 'not a MaxMind database (%s)' % exc)
        if 'ASN' not in kind.upper():
            raise _refuse(path, 'a MaxMind database of %s, not of autonomous systems' % kind)
        self.names = {}

    def lookup_numbers(self, pairs):
        """As Ip2asn.lookup_numbers."""
        return dict((pair, self.lookup_number(*pair)) for pair in pairs)

    def lookup_number(self, version, number):
        """As Ip2asn.lookup_number."""
        import ipaddress    # a MaxMind database only: its reader takes the address as text
        if version == 6 and self.ip_version == 4:
            return None         # an IPv4-only database holds no IPv6 address
        ip = ipaddress.IPv4Address(number) if version == 4 else ipaddress.IPv6Address(number)
        try:
            record, length = self.reader.get_with_prefix_len(str(ip))
        except Exception as exc:  # pylint: disable=broad-except
            raise bad_option('asn_database: %s: damaged (%s)' % (self.path, exc))
        if not isinstance(record, dict) or not record.get('autonomous_system_number'):
            return None
        asn, name = record['autonomous_system_number'], record.get('autonomous_system_organization') or ''
        # The format's types (an unsigned integer, a string): anything else is a damaged or forged file.
        if isinstance(asn, bool) or not isinstance(asn, int) or asn < 0 or not isinstance(name, str):
            raise bad_option('asn_database: %s: damaged (autonomous_system_number %r, autonomous_system_organization %r: '
                             'not a number and a name)' % (self.path, asn, name))
        network = ipaddress.ip_network((ip, length), strict=False)
        self.names.setdefault(asn, name)
        return asn, (version, int(network.network_address), int(network.broadcast_address))


def as_sums(lookup, plain, sought, shifts, wanted=None):
    """{AS: [requests, addresses, {range: [requests, addresses, parts]}]} of the addresses ``plain``
    [(version, number, count)] (``lookup(version, number)``: (AS, range) or None) of the ASes
    ``wanted`` (None: all); a range in ``sought`` (one that carried job seekers) gets its
    networks' own sums, ``parts`` {(first address, prefix length): [requests, addresses]}, a network
    of ``shifts`` host bits each, or of it the piece in the range (_piece), else None."""
    per_as = {}
    for version, number, count in plain:
        found = lookup(version, number)
        if found is None or (wanted is not None and found[0] not in wanted):
            continue
        total = per_as.setdefault(found[0], [0, 0, {}])
        total[0] += count
        total[1] += 1
        carried = total[2].setdefault(found[1], [0, 0, {} if found[1] in sought else None])
        carried[0] += count
        carried[1] += 1
        if carried[2] is not None:
            shift, span = shifts[version], found[1]
            low = number >> shift << shift
            whole = span[1] <= low and low + (1 << shift) - 1 <= span[2]
            network = carried[2].setdefault((low, BITS[version] - shift) if whole else _piece(version, number, span, low, shift),
                                            [0, 0])
            network[0] += count
            network[1] += 1
    return per_as


def _piece(version, number, span, low, shift):
    """(first address, prefix length) of the piece in the range ``span`` (version, first, last) that
    holds ``number`` of the network at ``low`` of ``shift`` host bits, which the range does not
    hold all of (one of range_networks's: at an edge of a range, rare)."""
    for start, length in range_networks(version, max(span[1], low), min(span[2], low + (1 << shift) - 1)):
        if start <= number < start + (1 << (BITS[version] - length)):
            return start, length
    raise ValueError('%d is not in its range' % number)      # a lookup's range holds its address


def range_pieces(version, first, last, carried, parts, people, shift, here=''):
    """[(first address, prefix length, requests, why)]: what an AS's range [first, last] is listed
    as. Its networks when no job seeker came from it (``parts`` None; ``carried``: the campaign's
    [requests, addresses] there); else the networks of ``shift`` host bits that carried the
    campaign (``parts``, as_sums's: each cut to the range, as one the range does not fill holds
    another AS's addresses) and no job seeker (``people``: {(version, prefix)})."""
    shown = '%s-%s' % (address_text(version, first), address_text(version, last))
    if parts is None:
        return [(low, length, carried[0], '%d in range %s%s, no job seekers there' % (carried[1], shown, here))
                for low, length in range_networks(version, first, last)]
    return [(start, length, requests, '%d in network %s%s, no job seekers there, though range %s carries some'
             % (addresses, network_text(version, start, length), here, shown))
            for (start, length), (requests, addresses) in sorted(parts.items()) if (version, start >> shift) not in people]
