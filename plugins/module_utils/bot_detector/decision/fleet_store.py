# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet store's protocol (issue 37): each host's absolute counts per window hour and
address, summed in Redis or Valkey (one server or a cluster) by one Lua script per window and
batch, and the addresses whose fleet-wide sum crossed the threshold.

Keys, one hash slot a window (hash tag ``{NAME:STAMP}``, so a cluster spreads the windows over
its masters), all expiring after the window has left the previous-hour place:

  {NAME:STAMP}:epoch      a random token, set (NX) by the first push after the store was empty
  {NAME:STAMP}:h:HOST     hash: address -> this host's absolute count
  {NAME:STAMP}:sum        hash: address -> the sum of the hosts' counts
  {NAME:STAMP}:crossed    list: "address sum" at the push that took the sum to the threshold

A push sends absolute counts: the script applies count - stored for that host, so a batch
sent twice (a lost reply) changes nothing the second time. A host whose token is not the
store's (the store was emptied or replaced, or the host is new) is told so and sends all its
counts of that window again (``full``), which the script applies whatever the token; the sums
are then exactly the hosts' counts again. The reply carries the crossings from the host's
last seen place in the list (from 0 after a new token).

redis-py is imported only here, only when fleet_store is set; under ``python3 -S`` (the role
runs the command so) Debian's dist-packages is not on the path: it is added then, once.
"""

from __future__ import absolute_import, division, print_function

import os
import sys

from ..base import messages
from ..base.errors import EXIT_BAD_OPTION, BotDetectorError
from ..values.checks import fleet_store_url, redact_url
from .fleet_answers import ENTRY_BYTES, READ_PER_PUSH, crossing

__metaclass__ = type

DEBIAN_PACKAGES = '/usr/lib/python3/dist-packages'
CONNECT_TIMEOUT = 1.0       # seconds: a store away must not hold a host's own detection up
REPLY_TIMEOUT = 2.0
KEEP_AFTER = 2 * 3600 + 900     # seconds a window's keys live after its last push (a window is in play 2 hours)

# KEYS: epoch, this host's hash, sums, crossings. ARGV: token known ('' none), a new token,
# full ('1': all the host's counts of the window), threshold, ttl, crossings seen, then
# address, count pairs.
PUSH_SCRIPT = """
local cur = redis.call('GET', KEYS[1])
if not cur then
  cur = ARGV[2]
  redis.call('SET', KEYS[1], cur, 'EX', ARGV[5], 'NX')
end
local seen = tonumber(ARGV[6])
if cur ~= ARGV[1] then
  if ARGV[3] ~= '1' then
    return {0, cur}
  end
  seen = 0
end
local threshold = tonumber(ARGV[4])
local n = (#ARGV - 6) / 2
if n > 0 then
  local names = {}
  for i = 1, n do names[i] = ARGV[5 + 2 * i] end
  local old = redis.call('HMGET', KEYS[2], unpack(names))
  for i = 1, n do
    local count = tonumber(ARGV[6 + 2 * i])
    local delta = count - tonumber(old[i] or '0')
    if delta ~= 0 then
      redis.call('HSET', KEYS[2], names[i], count)
      local sum = redis.call('HINCRBY', KEYS[3], names[i], delta)
      if sum >= threshold and sum - delta < threshold then
        redis.call('RPUSH', KEYS[4], names[i] .. ' ' .. sum)
      end
    end
  end
end
for k = 1, 4 do redis.call('EXPIRE', KEYS[k], ARGV[5]) end
""" + """
local function length(key)
  if #redis.call('LRANGE', key, 0, 0) == 0 then return 0 end
  local low, high = 0, 1
  while #redis.call('LRANGE', key, high, high) > 0 do low, high = high, high * 2 end
  while high - low > 1 do
    local middle = math.floor((low + high) / 2)
    if #redis.call('LRANGE', key, middle, middle) > 0 then low = middle else high = middle end
  end
  return low + 1
end
local size = length(KEYS[4])
if seen > size then seen = 0 end
seen = math.max(seen, size - %(read)d)
local found = redis.call('LRANGE', KEYS[4], seen, seen + %(read)d - 1)
for i = 1, #found do
  if #found[i] > %(entry)d then found[i] = '' end
end
return {1, cur, found, seen}
""" % {'read': READ_PER_PUSH, 'entry': ENTRY_BYTES}
# The crossings read (fleet_answers.py, the reading side): at most READ_PER_PUSH entries, from
# the host's place or the list's last READ_PER_PUSH when it is further behind (a flood of entries
# is skipped to its newest), each longer than ENTRY_BYTES blanked (counted, not sent): a reply
# bounded in entries and bytes whatever a host wrote. The list's length is found by LRANGE probes
# (LLEN is not the ACL's); a list shorter than the host's place was replaced: read again, and the
# reply's 4th item (where the entries start) tells the host.
# What a host's ACL user needs (docs/docsite/rst/guide_fleet.rst, tested with exactly this):
# the script's calls and its commands, the cluster client's topology reads and its COMMAND (the
# commands' key positions: without it redis-py's cluster client stops at its start), the fleet's keys.
ACL_RULES = ('resetchannels', '-@all', '+evalsha', '+script|load', '+ping', '+info', '+cluster|slots',
             '+cluster|shards', '+cluster|nodes', '+command', '+get', '+set', '+hmget', '+hset', '+hincrby',
             '+rpush', '+lrange', '+expire')
MAX_BATCH = 2000        # address pairs per script call (each call is one round trip)


def import_redis():
    """The redis module; Debian's python3-redis also under ``python3 -S``. Missing: exit 2.
    Its log records (the cluster client logs each failure with a traceback) go nowhere: a store
    away is said once, by the fleet's own warning."""
    try:
        import redis      # only with a fleet store: a run without one stays standard library only
    except ImportError:
        if os.path.isdir(DEBIAN_PACKAGES) and DEBIAN_PACKAGES not in sys.path:
            sys.path.append(DEBIAN_PACKAGES)        # after everything else: nothing of the core is shadowed
        try:
            import redis      # Debian's python3-redis, outside the path python3 -S sees
        except ImportError:
            raise BotDetectorError(messages.FLEET_NO_CLIENT, EXIT_BAD_OPTION)
    import logging      # only with a fleet store, as redis-py itself imports it
    logging.getLogger('redis').addHandler(logging.NullHandler())
    logging.getLogger('redis').propagate = False
    return redis


def window_keys(name, stamp, host):
    tag = '{%s:%s}' % (name, stamp)
    return (tag + ':epoch', tag + ':h:' + host, tag + ':sum', tag + ':crossed')


class Store:
    """One connection to the fleet store; ``push`` is one window's batch. Each window's token
    and crossings seen are kept here. A failure of the store raises StoreDown (the caller
    keeps its counts for the next push)."""

    def __init__(self, settings, client_factory=None):
        self.url = settings.fleet_store
        self.parts = fleet_store_url(self.url)
        self.password_file = settings.fleet_store_password_file
        self.name = settings.fleet_name
        host = settings.fleet_host
        if host is None:
            import socket        # only with a fleet store and no fleet_host
            host = socket.gethostname()
        self.host = host
        self.redis = import_redis()
        self._factory = client_factory
        self.client = self.sha = None
        self.tokens, self.seen = {}, {}
        self.restarted = set()      # windows whose crossings held by the caller must go (a new token, a list replaced)
        self.cluster = self.parts['cluster']

    def describe(self):
        """The URL with its password as *** (--status, results, warnings)."""
        return redact_url(self.url)

    def _password(self):
        if self.parts['password'] is not None or not self.password_file:
            return self.parts['password']
        try:
            with open(self.password_file, 'rb') as handle:
                return handle.read().decode('utf-8').splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError) as exc:      # as a store away: the host's own counts decide
            raise StoreDown(messages.FLEET_PASSWORD_FILE % (self.password_file, getattr(exc, 'strerror', None) or 'empty'))

    def connect(self):
        if self.client is not None:
            return self.client
        if self._factory is not None:
            self.client = self._factory()
            return self.client
        parts, redis = self.parts, self.redis
        common = dict(username=parts['username'], password=self._password(), socket_timeout=REPLY_TIMEOUT,
                      socket_connect_timeout=CONNECT_TIMEOUT)
        if parts['path']:
            self.client = redis.Redis(unix_socket_path=parts['path'], db=parts['db'], **common)
            return self.client
        tls = dict(ssl=True) if parts['tls'] else {}
        if self.cluster is None:        # auto: asked once, from the server given
            probe = redis.Redis(host=parts['host'], port=parts['port'], db=parts['db'], **dict(common, **tls))
            try:
                self.cluster = bool(probe.info('cluster').get('cluster_enabled'))
            finally:
                probe.close()
        if self.cluster:
            from redis.cluster import RedisCluster      # only with a cluster (redis-py 4.1 or later)
            self.client = RedisCluster(host=parts['host'], port=parts['port'], **dict(common, **tls))
        else:
            self.client = redis.Redis(host=parts['host'], port=parts['port'], db=parts['db'], **dict(common, **tls))
        return self.client

    def close(self):
        client, self.client = self.client, None
        if client is not None:
            try:
                client.close()
            except Exception:       # pylint: disable=broad-except
                pass        # a broken connection: dropped all the same

    def forget(self, stamps_kept):
        for stamp in list(self.tokens):
            if stamp not in stamps_kept:
                self.tokens.pop(stamp, None)
                self.seen.pop(stamp, None)

    def push(self, stamp, ttl, pairs, full, threshold):
        """One window's batch: ``pairs`` [(address bytes, absolute count)]. Returns (applied,
        crossings [(address bytes, sum)]): applied False means the store needs all this host's
        counts of the window (call again with ``full``). Raises StoreDown."""
        stamp_text = stamp.decode('ascii') if isinstance(stamp, bytes) else stamp
        keys = window_keys(self.name, stamp_text, self.host)
        crossings = []
        batches = [pairs[i:i + MAX_BATCH] for i in range(0, len(pairs), MAX_BATCH)] or [[]]
        for batch in batches:
            argv = [self.tokens.get(stamp, ''), os.urandom(12).hex(), '1' if full else '0', threshold, max(60, int(ttl)),
                    self.seen.get(stamp, 0)]
            for address, count in batch:
                argv.extend((address, count))
            reply = self._call(keys, argv)
            if not (isinstance(reply, list) and len(reply) in (2, 4) and isinstance(reply[1], bytes)
                    and (len(reply) == 2 or (isinstance(reply[2], list) and isinstance(reply[3], int)))):
                raise StoreDown('an answer not of this script: %r' % (reply[:2],))
            token = reply[1].decode('ascii', 'replace')
            if not reply[0]:
                self._restart(stamp, token)
                return False, crossings
            crossings.extend(self._read_crossings(stamp, token, reply[2], reply[3], threshold))
        return True, crossings

    def _read_crossings(self, stamp, token, found, start, threshold):
        """The reading side (fleet_answers.py): the entries read from ``start``, at most
        READ_PER_PUSH, junk dropped; a new token or a list read from before the host's place (it
        was replaced) makes what the host holds of the window go (``restarted``): it follows the
        store."""
        if token != self.tokens.get(stamp) or start < self.seen.get(stamp, 0):
            self._restart(stamp, token)
        found = found[:READ_PER_PUSH]
        self.seen[stamp] = start + len(found)
        return [entry for entry in (crossing(item, threshold) for item in found) if entry is not None]

    def _restart(self, stamp, token):
        self.tokens[stamp], self.seen[stamp] = token, 0
        self.restarted.add(stamp)

    def _call(self, keys, argv):
        """One script call; a lost reply (a dropped connection, a timeout) is sent once more at
        once on a new connection: the script applies it once whatever the first did."""
        errors = self.redis.exceptions
        lost = (errors.ConnectionError, errors.TimeoutError, OSError)
        try:
            try:
                return self._evalsha(keys, argv)
            except lost:
                self.close()
                return self._evalsha(keys, argv)
        except StoreDown:
            self.close()
            raise
        except Exception as exc:        # pylint: disable=broad-except  # RedisError, the cluster client's own: never fail closed
            self.close()
            raise StoreDown(str(exc).replace(self.url, self.describe()))

    def _evalsha(self, keys, argv):
        client = self.connect()     # StoreDown itself when the password file cannot be read
        if self.sha is None:
            self.sha = client.script_load(PUSH_SCRIPT)
        try:
            return client.evalsha(self.sha, len(keys), *(list(keys) + argv))
        except self.redis.exceptions.NoScriptError:      # a restarted or new server: load it again
            client.script_load(PUSH_SCRIPT)
            return client.evalsha(self.sha, len(keys), *(list(keys) + argv))


class StoreDown(Exception):
    """The store did not answer (refused, timed out, dropped, an error reply): the batch may or
    may not have been applied; sending it again is safe (absolute counts)."""
