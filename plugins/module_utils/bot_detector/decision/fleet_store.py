# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet store's protocol (issues 37, 43): each writer's absolute counts per window hour and
address, summed in Redis or Valkey (one server or a cluster) by one Lua script per window and
batch, and the addresses whose fleet-wide sum crossed the threshold.

Keys, one hash slot a window (hash tag ``{NAME:vLAYOUT:START}``: START is the window's start in
seconds since the epoch, so hosts in zones a whole number of hours apart sum the same hour and
the two 02:00 hours of a DST night stay apart; LAYOUT is this layout's version, so hosts of two
versions never share a key), all expiring after the window has left the previous-hour place:

  TAG:epoch               the token of the keys in use, set by the first push of an empty store
  TAG:names               hash: fleet_host -> the machine pushing under it (``NAME twice``: two)
  TAG:TOKEN:w:HOST:ID     hash: address -> this writer's absolute count; ID is the machine's id and
                          the log's path, hashed: a host's two logs add up, a cron run and a
                          follower of one log are one writer; " total": their sum
  TAG:TOKEN:sum           hash: address -> the sum of the writers' counts (" total", " crossed",
                          " " and each writer's hash key: it has pushed, so its hash gone is lost)
  TAG:TOKEN:crossed       list: "address sum" at the push that took the sum to the threshold

A push sends absolute counts: the script applies count - stored for that writer, so a batch
sent twice (a lost reply) changes nothing the second time. A writer whose token is not the
store's (the store was emptied or replaced, or the window is new to it) is told the token and
sends all its counts of that window again, into that token's keys. A store that lost part of
its data but kept its token (an append-only file missing its last second, a restored backup, an
early-promoted replica, a key evicted) is found by what the writers know they pushed: a
writer's total below what the store acknowledged, its hash gone while the sums name it (a cron
run knows nothing it pushed before), the sums gone, the crossings list shorter than read.
The script then draws a new token: every writer sends all its counts again into fresh keys,
and the sums are exact again. The reply carries the crossings from the writer's
last seen place in the list.

Every exchange with the store (connecting included) is bounded as a whole (EXCHANGE_SECONDS):
a store that answers a byte at a time is a store away.

redis-py is imported only when fleet_store is set (fleet_identity.import_redis); under
``python3 -S`` (the role runs the command so) Debian's dist-packages is added to the path then.
"""

from __future__ import absolute_import, division, print_function

import os
import threading
import time

from ..base import messages
from ..values.checks import fleet_store_url, redact_url
from .fleet_answers import ENTRY_BYTES, READ_PER_PUSH, crossing
from .fleet_identity import StoreDown, digest, import_redis, machine_id, read_password

__metaclass__ = type

CONNECT_TIMEOUT = 1.0       # seconds: a store away must not hold a host's own detection up
REPLY_TIMEOUT = 2.0
EXCHANGE_SECONDS = 3.0      # one whole exchange (connecting, loading the script, a call and its reply), at most
KEEP_AFTER = 2 * 3600 + 900     # seconds a window's keys live after its last push (a window is in play 2 hours)
LAYOUT = 2      # the key layout's version, in every key (1: issue 37's, by the hour stamp)
# A window's token: this many random bytes, in lower-case hex (an epoch otherwise spelt was written
# by a host, not the script: replaced, never a part of key names or replies).
TOKEN_BYTES = 12
SAFE_POLICY = 'noeviction'      # every key has an expiry: any other policy may drop them under maxmemory

# KEYS: epoch, this writer's hash, sums, crossings, names. ARGV: 1 token known ('' none), 2 a new
# token, 3 the writer's total the store acknowledged last to this session (its floor), 4 '1' when
# exactly that (no failure since), 5 threshold, 6 ttl, 7 crossings seen, 8 host, 9 machine,
# 10 session (a cron run and a follower of one log are one writer, two sessions), then address,
# count pairs.
SCRIPT_HEAD = ("""
local cur = redis.call('GET', KEYS[1])
if not cur or #cur ~= %(token)d or string.find(cur, '[^0-9a-f]') then
  cur = ARGV[2]
  redis.call('SET', KEYS[1], cur, 'EX', ARGV[6])
end
if cur ~= ARGV[1] then
  return {0, cur}
end
local seen = tonumber(ARGV[7])
local floor = tonumber(ARGV[3])
local writer = redis.call('HMGET', KEYS[2], ' total', ' by')
local mine = tonumber(writer[1] or '0')
local sums = redis.call('HMGET', KEYS[3], ' total', ' crossed', ' ' .. KEYS[2])
local listed = tonumber(sums[2] or '0')
local lost = (floor > 0 or sums[3]) and not writer[1]
lost = lost or (writer[2] == ARGV[10] and (mine < floor or (ARGV[4] == '1' and mine ~= floor)))
lost = lost or (writer[1] and not sums[1])
lost = lost or (seen > 0 and #redis.call('LRANGE', KEYS[4], seen - 1, seen - 1) == 0)
lost = lost or (listed > 0 and #redis.call('LRANGE', KEYS[4], listed - 1, listed - 1) == 0)
if lost then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[6])
  return {0, ARGV[2], 'lost'}
end
""" % {'token': 2 * TOKEN_BYTES})
ADDRESS_PAIRS = """local threshold = tonumber(ARGV[5])
local n = (#ARGV - 10) / 2
local added = 0
if n > 0 then
  local names = {}
  for i = 1, n do names[i] = ARGV[9 + 2 * i] end
  local old = redis.call('HMGET', KEYS[2], unpack(names))
  for i = 1, n do
    local count = tonumber(ARGV[10 + 2 * i])
    local delta = count - tonumber(old[i] or '0')
    if delta ~= 0 then
      added = added + delta
      redis.call('HSET', KEYS[2], names[i], count)
      local sum = redis.call('HINCRBY', KEYS[3], names[i], delta)
      if sum >= threshold and sum - delta < threshold then
        redis.call('RPUSH', KEYS[4], names[i] .. ' ' .. sum)
        redis.call('HINCRBY', KEYS[3], ' crossed', 1)
      end
    end
  end
end
"""
SCRIPT_TAIL = """mine = redis.call('HINCRBY', KEYS[2], ' total', added)
redis.call('HSET', KEYS[2], ' by', ARGV[10])
redis.call('HSET', KEYS[3], ' ' .. KEYS[2], 1)
redis.call('HINCRBY', KEYS[3], ' total', added)
local owner = redis.call('HMGET', KEYS[5], ARGV[8], ARGV[8] .. ' twice')
if not owner[1] then
  redis.call('HSET', KEYS[5], ARGV[8], ARGV[9])
elseif owner[1] ~= ARGV[9] and not owner[2] then
  redis.call('HSET', KEYS[5], ARGV[8] .. ' twice', ARGV[9])
  owner[2] = ARGV[9]
end
for k = 1, 5 do redis.call('EXPIRE', KEYS[k], ARGV[6]) end

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
return {1, cur, found, mine, owner[2] and 1 or 0, seen}
"""
# The script in three parts: the token and lost data checked (SCRIPT_HEAD), the pairs applied
# (ADDRESS_PAIRS; the campaign keys' own: decision/fleet_campaigns.py), this writer's bookkeeping
# and the crossings read (SCRIPT_TAIL, the entries' bound a parameter).
PUSH_SCRIPT = SCRIPT_HEAD + ADDRESS_PAIRS + SCRIPT_TAIL % {'read': READ_PER_PUSH, 'entry': ENTRY_BYTES}
# The crossings read (fleet_answers.py, the reading side): at most READ_PER_PUSH entries, from
# the host's place or the list's last READ_PER_PUSH when it is further behind (a flood of entries
# is skipped to its newest), each longer than ENTRY_BYTES blanked (counted, not sent): a reply
# bounded in entries and bytes whatever a host wrote. The list's length is found by LRANGE probes
# (LLEN is not the ACL's); the reply's 6th item says where the entries start.
# What a host's ACL user needs (docs/docsite/rst/guide_fleet.rst, tested with exactly this):
# the script's calls and its commands, the cluster client's topology reads and its COMMAND (the
# commands' key positions: without it redis-py's cluster client stops at its start), the fleet's keys.
ACL_RULES = ('resetchannels', '-@all', '+evalsha', '+script|load', '+ping', '+info', '+cluster|slots',
             '+cluster|shards', '+cluster|nodes', '+command', '+get', '+set', '+hmget', '+hset', '+hincrby',
             '+hsetnx', '+rpush', '+lrange', '+expire')
EXACT = 3       # ARGV's place (from 0) of the flag 'the floor is exactly what the store holds'
MAX_BATCH = 2000        # address pairs per script call (each call is one round trip)


def window_keys(name, start, host, token='', writer='', kind=''):
    """The keys of the window starting at ``start`` (seconds since the epoch) for the writer
    ``host``/``writer`` under ``token``, in PUSH_SCRIPT's KEYS order. ``kind``: '' the
    addresses', 'c' the campaign keys' (decision/fleet_campaigns.py: a token of their own)."""
    tag = '{%s:v%d%s:%s}' % (name, LAYOUT, kind, start)
    data = '%s:%s:' % (tag, token)
    return (tag + ':epoch', data + 'w:%s:%s' % (host, writer), data + 'sum', data + 'crossed', tag + ':names')


class Store:
    """One connection to the fleet store; ``push`` is one window's batch. Each window's token,
    crossings seen and this writer's acknowledged total are kept here. A failure of the store
    raises StoreDown (the caller keeps its counts for the next push). ``logs``: the logs whose
    counts this writer pushes (with the machine's id, the writer's identity)."""

    SCRIPT = PUSH_SCRIPT
    KIND = ''       # window_keys' kind

    def __init__(self, settings, client_factory=None, logs=(), machine=None, warn=None):
        self.url = settings.fleet_store
        self.parts = fleet_store_url(self.url)
        self.password_file = settings.fleet_store_password_file
        self.name = settings.fleet_name
        host = settings.fleet_host
        if host is None:
            import socket        # only with a fleet store and no fleet_host
            host = socket.gethostname()
        self.host = host
        machine = machine if machine is not None else machine_id()
        self.machine = digest(machine)
        self.writer = digest(machine, *sorted(os.path.realpath(str(log)) for log in logs))
        self.session = os.urandom(6).hex()
        self.redis = import_redis()
        self._factory = client_factory
        self.client = self.sha = None
        self.tokens, self.seen, self.acked = {}, {}, {}     # start: token, crossings read, (total, exact)
        self.restarted = set()      # window starts whose crossings held by the caller must go (a new token, a list replaced)
        self.cluster = self.parts['cluster']
        self.known_nodes = []       # [(host, port)] of a cluster's nodes, from the last connection
        self.warn = warn or (lambda line: None)
        self.said = set()       # warnings said once
        self.policy = None      # the store's maxmemory_policy, read at each connection
        self.twice = False      # another machine pushes under this fleet_host
        self.lost = 0           # windows found with counts lost (all sent again)

    def describe(self):
        """The URL with its password as *** (--status, results, warnings)."""
        return redact_url(self.url)

    def say_once(self, line):
        if line not in self.said:
            self.said.add(line)
            self.warn(line)

    def _password(self):
        if self.parts['password'] is not None or not self.password_file:
            return self.parts['password']
        return read_password(self.password_file, self.say_once)

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
            return self._checked()
        tls = dict(ssl=True) if parts['tls'] else {}
        if self.cluster is None:        # auto: asked once, from the server given
            probe = redis.Redis(host=parts['host'], port=parts['port'], db=parts['db'], **dict(common, **tls))
            self.client = probe         # closed with the exchange if it never ends
            try:
                self.cluster = bool(probe.info('cluster').get('cluster_enabled'))
            finally:
                self.client = None
                probe.close()
        if self.cluster:
            from redis.cluster import ClusterNode, RedisCluster      # only with a cluster (redis-py 4.1 or later)
            nodes = [ClusterNode(host, port) for host, port in [(parts['host'], parts['port'])] + self.known_nodes]
            self.client = RedisCluster(startup_nodes=nodes, **dict(common, **tls))
        else:
            self.client = redis.Redis(host=parts['host'], port=parts['port'], db=parts['db'], **dict(common, **tls))
        return self._checked()

    def _checked(self):
        """The new connection's client, its store's eviction policy read (INFO memory; the
        fleet's user may not CONFIG GET) and warned about once when it may drop keys."""
        found = self.client.info('memory')
        if found and all(isinstance(value, dict) for value in found.values()):      # a cluster: per node
            policies = sorted(set(str(value.get('maxmemory_policy')) for value in found.values()))
        else:
            policies = [str(found.get('maxmemory_policy'))]
        unsafe = [policy for policy in policies if policy != SAFE_POLICY]
        self.policy = (unsafe or policies)[0]
        if unsafe:
            self.say_once(messages.FLEET_EVICTION % (self.describe(), self.policy))
        return self.client

    def close(self):
        client, self.client = self.client, None
        if client is not None:
            pools = [getattr(client, 'connection_pool', None)]
            try:
                if self.cluster:        # the next connection starts from any master known: the URL's may be the one away
                    nodes = client.get_nodes()
                    self.known_nodes = sorted(set((node.host, node.port) for node in nodes))
                    pools += [getattr(node.redis_connection, 'connection_pool', None) for node in nodes if node.redis_connection]
            except Exception:       # pylint: disable=broad-except
                pass        # the URL's node only, as at first
            try:
                for pool in pools:      # connections in use too: a read of a bounded exchange ends (every redis-py)
                    if pool is not None:
                        pool.disconnect()
                client.close()
            except Exception:       # pylint: disable=broad-except
                pass        # a broken connection: dropped all the same

    def forget(self, starts_kept):
        for start in list(self.tokens):
            if start not in starts_kept:
                for kept in (self.tokens, self.seen, self.acked):
                    kept.pop(start, None)

    def ping(self):
        """True when the store answers a PING within EXCHANGE_SECONDS (connecting included)."""
        return self.bounded(lambda: self.connect().ping())

    def push(self, start, ttl, pairs, full, threshold, stamp=None):
        """One window's batch (``start``: the window's start, seconds since the epoch): ``pairs``
        [(address bytes, absolute count)], all of this writer's counts of the window when
        ``full``. Returns (applied, crossings [(address bytes, sum)]): applied False means the
        store needs all this writer's counts of the window (call again with them all, ``full``).
        ``stamp``: the window's hour stamp, to find hosts of the first layout (said once), after
        the push: its key is in another slot, whose master away stops no push. Raises StoreDown."""
        probe = stamp is not None and start not in self.tokens
        for dummy in range(3):      # all of them sent under the token the store holds (a new one: again)
            applied, crossings = self._push(start, ttl, pairs, threshold)
            if applied or not full:
                break
        if probe:
            try:
                self._older_layout(stamp)
            except StoreDown:
                pass        # asked again with the next connection's first push of the window
        return applied, crossings

    def _push(self, start, ttl, pairs, threshold):
        crossings = []
        batches = [pairs[i:i + MAX_BATCH] for i in range(0, len(pairs), MAX_BATCH)] or [[]]
        for batch in batches:
            token = self.tokens.get(start, '')
            floor, exact = self.acked.get(start, (0, False))
            keys = window_keys(self.name, start, self.host, token, self.writer, self.KIND)
            argv = [token, os.urandom(TOKEN_BYTES).hex(), floor, '1' if exact else '0', threshold, max(60, int(ttl)),
                    self.seen.get(start, 0), self.host, self.machine, self.session]
            for address, count in batch:
                argv.extend((address, count))
            self.acked[start] = (floor, False)      # until this call's answer: maybe applied, maybe not
            reply = self._call(keys, argv)
            if not (isinstance(reply, list) and len(reply) in (2, 3, 6) and isinstance(reply[1], bytes)
                    and len(reply[1]) == 2 * TOKEN_BYTES
                    and (len(reply) != 6 or (isinstance(reply[2], list) and isinstance(reply[3], int)
                                             and isinstance(reply[5], int)))):
                raise StoreDown('an answer not of this script: %r' % (reply[:2],))
            if not reply[0]:        # another token: all of this writer's counts into its keys
                self._restart(start, reply[1].decode('ascii', 'replace'))
                self.acked[start] = (0, False)      # what it holds of this writer: another session's maybe
                if len(reply) == 3:
                    self.lost += 1
                    said = messages.FLEET_JUNK if reply[2] == b'junk' else messages.FLEET_LOST      # junk: fleet_campaigns.py
                    self.warn(said % (self.describe(), time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))))
                return False, crossings
            self.acked[start] = (reply[3], True)
            if reply[4] and not self.twice:
                self.twice = True
                self.say_once(messages.FLEET_HOST_TWICE % (self.host,))
            crossings.extend(self._read_crossings(start, reply[1].decode('ascii', 'replace'), reply[2], reply[5], threshold))
        return True, crossings

    def _read_crossings(self, start, token, found, place, threshold):
        """The reading side (fleet_answers.py): the entries read from ``place``, at most
        READ_PER_PUSH, junk dropped; a new token or a list read from before the host's place (it
        was replaced) makes what the host holds of the window go (``restarted``): it follows the
        store."""
        if token != self.tokens.get(start) or place < self.seen.get(start, 0):
            self._restart(start, token)
        found = found[:READ_PER_PUSH]
        self.seen[start] = place + len(found)
        return [entry for entry in (self.entry(item, threshold) for item in found) if entry is not None]

    @staticmethod
    def entry(item, threshold):
        """One crossings list entry read (fleet_answers.crossing), or None: junk."""
        return crossing(item, threshold)

    def _restart(self, start, token):
        self.tokens[start], self.seen[start] = token, 0
        self.restarted.add(start)

    def _older_layout(self, stamp):
        """Said once when hosts of layout 1 (keys by the hour stamp, before issue 43) push to this
        store: their counts and this host's are summed apart until every host is upgraded."""
        stamp = stamp.decode('ascii') if isinstance(stamp, bytes) else stamp
        found = self._call_plain(lambda client: client.get('{%s:%s}:epoch' % (self.name, stamp)))
        if found is not None:
            self.say_once(messages.FLEET_OTHER_LAYOUT % (self.describe(), 1, LAYOUT))

    def _call_plain(self, work):
        try:
            return self.bounded(lambda: work(self.connect()))
        except StoreDown:
            self.close()
            raise
        except Exception as exc:        # pylint: disable=broad-except  # as _call: a store away
            self.close()
            raise StoreDown(str(exc).replace(self.url, self.describe()))

    def _call(self, keys, argv):
        """One script call; a lost reply (a dropped connection, a read timed out) is sent once
        more at once on a new connection: the script applies it once whatever the first did.
        An exchange that does not end within EXCHANGE_SECONDS is not sent again: the store is away."""
        errors = self.redis.exceptions
        lost = (errors.ConnectionError, errors.TimeoutError, OSError)
        try:
            try:
                return self.bounded(lambda: self._evalsha(keys, argv))
            except lost:
                self.close()
                argv[EXACT] = '0'       # the first may have been applied: this writer's total at least the floor
                return self.bounded(lambda: self._evalsha(keys, argv))
        except StoreDown:
            self.close()
            raise
        except Exception as exc:        # pylint: disable=broad-except  # RedisError, the cluster client's own: never fail closed
            self.close()
            raise StoreDown(str(exc).replace(self.url, self.describe()))

    def bounded(self, work):
        """``work()`` in a thread of its own, waited for EXCHANGE_SECONDS at most: a reply that
        drips in (each read within redis-py's timeout) ends with the connection shut."""
        box = {}

        def run():
            try:
                box['value'] = work()
            except BaseException as exc:        # pylint: disable=broad-except  # handed to the caller
                box['error'] = exc
        worker = threading.Thread(target=run, name='fleet-store-exchange', daemon=True)
        worker.start()
        worker.join(EXCHANGE_SECONDS)
        if worker.is_alive():
            self.close()        # its sockets shut: the worker's read ends
            raise StoreDown(messages.FLEET_SLOW % EXCHANGE_SECONDS)
        if 'error' in box:
            raise box['error']
        return box.get('value')

    def _load(self, client, key):
        """The script loaded where ``key`` lives: on a cluster, only the master of its slot
        (SCRIPT LOAD goes to every master by default: one away would stop every window)."""
        if self.cluster:
            return client.execute_command('SCRIPT LOAD', self.SCRIPT, target_nodes=client.get_node_from_key(key))
        return client.script_load(self.SCRIPT)

    def _evalsha(self, keys, argv):
        client = self.connect()     # StoreDown itself when the password file cannot be read
        if self.sha is None:
            self.sha = self._load(client, keys[0])
        try:
            return client.evalsha(self.sha, len(keys), *(list(keys) + argv))
        except self.redis.exceptions.NoScriptError:      # a restarted or new server, another master: load it there
            self._load(client, keys[0])
            return client.evalsha(self.sha, len(keys), *(list(keys) + argv))
