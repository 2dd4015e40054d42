# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one table of settings and the checks of their values (config.py: where values come from).

Each setting is one ``Setting`` row in ``SETTINGS``: its name (also the host config
file's key, the module's option and the role's ``bot_detector_<name>`` variable), kind,
default, bounds and help. The command's options (cli.py), the module's argument_spec
and documentation fragment, the role's argument_specs, the README's tables and the
config file's parser and writer all come from this table.
"""

from __future__ import absolute_import, division, print_function

import re

from ..base.clock import format_duration, parse_duration
from ..base.errors import bad_option
from ..base.text import quote_item as _quote, unquote_item as _unquote
from .answer_settings import ANSWER_ROWS, check_answers
from .campaign_settings import CAMPAIGN_ROWS, check_campaigns
from .fleet_settings import FLEET_ROWS
from .checks import check_fleet, check_formats, check_server_ips
from .log_formats import CHOICES as LOG_FORMATS, parse_overrides

__metaclass__ = type

SPEC_JOB_PREFIXES = [
    'GET /job/', 'GET /jobs/', 'GET /stelle/', 'GET /stellen/', 'GET /stellenangebot/',
    'GET /de/stelle/', 'GET /de/stellen/', 'GET /de/stellenangebot/',
]

# Precise mode: a request whose user agent matches a crawler here (case-insensitive) is
# not counted only when its address verifies: reverse DNS gives a name under one of
# the crawler's documented domains, and that name resolves forward to the address.
DEFAULT_CRAWLERS = {
    'google': {'user_agent': 'Googlebot|Google-InspectionTool|GoogleOther|Google',
               'domains': ['googlebot.com', 'google.com', 'googleusercontent.com']},
    'bing': {'user_agent': 'bingbot|BingPreview|msnbot', 'domains': ['search.msn.com']},
    'apple': {'user_agent': 'Applebot', 'domains': ['applebot.apple.com']},
    'yandex': {'user_agent': 'YandexBot|YandexImages', 'domains': ['yandex.ru', 'yandex.net', 'yandex.com']},
    'baidu': {'user_agent': 'Baiduspider', 'domains': ['baidu.com', 'baidu.jp']},
}

RULES = ('spec', 'precise')
KINDS = ('path', 'str', 'int', 'float', 'bool', 'list', 'dict', 'duration')
# The Ansible type (module option, role variable) of each kind: a duration is given as
# seconds (a number) or as text with a unit, so Ansible passes it through untouched.
ANSIBLE_TYPES = {'path': 'path', 'str': 'str', 'int': 'int', 'float': 'float', 'bool': 'bool', 'list': 'list',
                 'dict': 'dict', 'duration': 'raw'}
_TRUE = ('true', 'yes', 'on', '1')
SAME = object()     # a role_default that is the setting's own default (a path the role's tasks also need)
_FALSE = ('false', 'no', 'off', '0')


class Setting:
    """One row of the table.

    ``flag`` is the command's option (a list setting's flag is given once per item);
    a bool setting also has ``off_flag``. ``module_default`` is where the module's
    default differs from the command's (``help`` says why); ``role_default`` is the value
    the role's defaults/main.yml sets, when it sets one (SAME: the setting's default).
    ``default_text`` describes a default that is not a value. ``version_added``: the
    collection release that added the setting, when after 1.0.0 (the module docs say it).
    """

    def __init__(self, name, kind, default, help, flag=None, off_flag=None, metavar=None, choices=None,
                 minimum=None, maximum=None, aliases=(), module_default=None, role_default=None,
                 default_text=None, group='detection', elements='str', version_added=None):
        if kind not in KINDS:
            raise ValueError('unknown kind %r of setting %s' % (kind, name))
        self.name = name
        self.kind = kind
        self.default = default
        self.help = help
        self.flag = flag or '--' + name.replace('_', '-')
        self.off_flag = off_flag
        self.metavar = metavar
        self.choices = choices
        self.minimum = minimum
        self.maximum = maximum
        self.aliases = tuple(aliases)
        self.module_default = default if module_default is None else module_default
        self.role_default = default if role_default is SAME else role_default
        self.default_text = default_text
        self.group = group
        self.elements = elements        # a list's items: 'str', or 'int' (bounded by minimum and maximum)
        self.version_added = version_added      # the collection release that added it, when after 1.0.0

    @property
    def ansible_type(self):
        """The type of the module's option and of the role's variable."""
        return ANSIBLE_TYPES[self.kind]

    # ---- checking a value of any source

    def check(self, value, where):
        """``value`` (typed: from the module, the command after parsing, or Python) checked
        against the row; returns it normalised. ``where`` names the source for the error."""
        if value is None:
            return None
        kind = self.kind
        if kind == 'bool':
            if not isinstance(value, bool):
                raise bad_option('%s: must be true or false, got %r' % (where, value))
        elif kind == 'int':
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad_option('%s: must be a whole number, got %r' % (where, value))
            self._check_bounds(value, where, 'a whole number')
        elif kind == 'float':
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad_option('%s: must be a number, got %r' % (where, value))
            value = float(value)
            if self.minimum is not None and value <= self.minimum:
                raise bad_option('%s: must be a number above %s, got %r' % (where, self.minimum, value))
        elif kind in ('path', 'str'):
            if not isinstance(value, str):
                raise bad_option('%s: must be text, got %r' % (where, value))
            if not value:
                raise bad_option('%s: must not be empty' % where)
            if self.choices and value not in self.choices:
                raise bad_option('%s: must be one of %s, got %r' % (where, ', '.join(self.choices), value))
        elif kind == 'list':
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
                raise bad_option('%s: must be a list, got %r' % (where, value))
            value = list(value)
            if self.elements == 'int':
                value = [self._item_number(item, where) for item in value]
            elif not all(isinstance(item, str) and item for item in value):
                raise bad_option('%s: every item must be non-empty text, got %r' % (where, value))
        elif kind == 'dict':
            if not isinstance(value, dict):
                raise bad_option('%s: must be a mapping, got %r' % (where, value))
        elif kind == 'duration':
            if isinstance(value, str):
                value = parse_duration(value, where)
            elif isinstance(value, bool) or not isinstance(value, int):
                raise bad_option('%s: must be a duration (seconds, or a number with a unit s, m, h, d or w: '
                                 '90m, 12h, 7d), got %r' % (where, value))
            self._check_bounds(value, where, 'a duration in seconds')
        return value

    def _item_number(self, item, where):
        """One item of a list of whole numbers (text from the command line or the config file)."""
        if isinstance(item, str) and item.strip().isdigit():
            item = int(item.strip(), 10)
        if isinstance(item, bool) or not isinstance(item, int):
            raise bad_option('%s: every item must be a whole number, got %r' % (where, item))
        self._check_bounds(item, where, 'a whole number')
        return item

    def _check_bounds(self, value, where, what):
        low, high = self.minimum, self.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            if high is None:
                bound = 'of at least %d' % low
            else:
                bound = 'from %d to %d' % (low, high)
            raise bad_option('%s: must be %s %s, got %r' % (where, what, bound, value))

    # ---- text (the command line, the config file)

    def parse(self, text, where):
        """The value of ``text`` (one string; a list's items one per line) for this row."""
        kind = self.kind
        if kind == 'bool':
            word = text.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
            raise bad_option('%s: must be true or false, got %r' % (where, text))
        if kind == 'int':
            try:
                value = int(text.strip(), 10)
            except ValueError:
                raise bad_option('%s: must be a whole number, got %r' % (where, text))
            return self.check(value, where)
        if kind == 'float':
            try:
                value = float(text.strip())
            except ValueError:
                raise bad_option('%s: must be a number, got %r' % (where, text))
            return self.check(value, where)
        if kind == 'list':
            return self.check([_unquote(line, where) for line in text.splitlines() if line.strip()], where)
        if kind == 'duration':
            return self.check(parse_duration(text, where), where)
        if kind == 'dict':
            import json     # only settings given as JSON (crawlers, log_json_fields)
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as exc:     # RecursionError: nested deeper than json reads
                raise bad_option('%s: must be a JSON object (%s), got %r' % (where, exc, text))
            return self.check(value, where)
        return self.check(text.strip(), where)

    def format(self, value):
        """``value`` as config-file text; ``parse`` reads it back unchanged."""
        if self.kind == 'bool':
            return 'true' if value else 'false'
        if self.kind == 'list':
            return ''.join('\n    %s' % _quote(str(item)) for item in value)
        if self.kind == 'dict':
            import json     # only settings given as JSON
            return json.dumps(value, sort_keys=True)
        if self.kind == 'duration':
            return format_duration(value)
        return str(value)

    @property
    def effective_default_text(self):
        """The default for the docs, in words."""
        if self.default_text:
            return self.default_text
        if self.default is None:
            return 'off'
        if self.kind == 'list':
            return ', '.join(repr(item) if isinstance(item, str) else str(item) for item in self.default)
        return self.format(self.default)


SETTINGS = (
    Setting('blocklist', 'path', '/etc/ipblocklist.txt',
            'The blocklist to search and append to, one address per line; the firewall reads it.',
            metavar='PATH', role_default=SAME),
    Setting('exclusions_file', 'path', '/etc/ipexcludedlist.txt',
            'The allow-list: an address found in it is never blocked. A missing file, or /dev/null, counts as empty; one '
            'that cannot be read too (as the reference), with a warning, except with precise rules (exit status 3).',
            flag='--exclusions', metavar='PATH', aliases=('exclusions',), role_default=SAME),
    Setting('activity_log', 'path', '/var/log/bot-detector.log',
            'The activity log: one line per addition.', metavar='PATH', role_default=SAME),
    Setting('threshold', 'int', 1000,
            'Requests in one hourly window that block an address (this many or more).',
            metavar='N', minimum=1),
    Setting('top', 'int', 20,
            'How many of the busiest addresses are examined per window, after the server addresses are dropped.',
            metavar='N', minimum=1),
    Setting('job_prefixes', 'list', SPEC_JOB_PREFIXES,
            'Request prefixes of job-listing pages; a line is counted only if it holds one of them.',
            flag='--job-prefix', metavar='TEXT', default_text="the spec's eight, 'GET /job/' to 'GET /de/stellenangebot/'"),
    Setting('search_engine', 'str', 'Google',
            "Case-sensitive marker of a search engine's requests, which are never counted (spec rules).",
            metavar='TEXT'),
    Setting('server_ips', 'list', None,
            "This server's own IP addresses, never blocked; anything else is refused (exit status 2). With one "
            "address, counted records holding it as a substring are dropped (the spec's rule); with several, each "
            "is matched as a whole address.",
            flag='--server-ip', metavar='ADDR', aliases=('server_ip',),
            default_text='each address `hostname -i` prints (the role: the host\'s addresses from its network facts)',
            role_default=[]),
    Setting('log_format', 'str', 'combined',
            'The format of the access logs: combined (the default, the spec\'s), vhost_combined, nginx_json, caddy, '
            'traefik, traefik_json, haproxy, w3c, or auto (told from each log\'s first lines; a log it cannot tell '
            'is refused with exit status 2). Each line counts as its combined twin would.',
            metavar='FORMAT', choices=LOG_FORMATS, version_added='2.0.0'),
    Setting('log_formats', 'list', None,
            'A format for one log, LOG=FORMAT (the path as given), over log_format; for hosts with logs in '
            'several formats.',
            flag='--log-format-for', metavar='LOG=FORMAT', version_added='2.0.0'),
    Setting('log_json_fields', 'dict', None,
            'nginx_json: key names beyond the usual ones, {role: key} with role one of address, time, request, '
            'method, uri, protocol, status, bytes, referer, user_agent, forwarded_for.',
            metavar='JSON', version_added='2.0.0'),
    Setting('trusted_proxies', 'list', None,
            'Addresses or CIDR networks of proxies in front of the server. When the logged client is one and the '
            'format logs X-Forwarded-For (nginx_json, caddy, traefik_json), the client is the right-most address '
            'in it that is not a trusted proxy (as nginx real_ip_recursive), never the left-most.',
            flag='--trusted-proxy', metavar='CIDR', version_added='2.0.0'),
    Setting('haproxy_user_agent_capture', 'int', None,
            'haproxy: the place (1-based) of the user agent in the request-capture block {a|b|...}; without it the '
            'twin has no user agent and the bot and search-engine exemptions cannot apply (one warning per run).',
            metavar='N', minimum=1, version_added='2.0.0'),
    Setting('rotated', 'bool', False,
            'When a log starts after the previous-hour window began (logrotate ran within the last hour or so), '
            'also read its most recent rotated file, LOG.1 or LOG.1.gz. Off for the bare command, as in the '
            'spec; on for the module and the role.',
            off_flag='--no-rotated', module_default=True, role_default=True),
    Setting('seek', 'bool', True,
            'In a plain log in time order, find where the windows can start from the line timestamps (probes '
            'spread over the file) and read only from there; off reads every log whole, as the reference does.',
            off_flag='--full-scan'),
    Setting('seek_margin', 'int', 600,
            'Seconds lines may be out of time order; the seek starts this much before the earliest moment a '
            "line of the windows can have been written.",
            metavar='SECONDS', minimum=0),
    Setting('lock_timeout', 'int', 60,
            'Seconds a run waits for the lock on the blocklist while another run holds it (the lists are read and '
            'appended to under it); then it fails with exit status 3.',
            metavar='SECONDS', minimum=0, version_added='2.0.0'),
    Setting('state_dir', 'path', None,
            'Where each run keeps what it counted, per log (what it read up to, the counts per address for the '
            'hours still in play), so that the next run reads only the lines appended since; the decisions are '
            "those of a run without it. Off, every run reads the logs' windows, as the reference does.",
            metavar='DIR', role_default='/var/lib/bot-detector',
            default_text='off (the role: /var/lib/bot-detector)', version_added='2.0.0'),
    # 200,000: the largest round budget whose runs peak under 64 MiB RSS (GNU time, /usr/bin/python3,
    # 2 cores) on the benchmark logs, the busy day and churn hours of 0.25 to 5 million addresses, cold
    # and with a state (docs/benchmarks.md, "Choosing count_budget"); 250,000 peaked at 65.7 MiB.
    Setting('count_budget', 'int', 200000,
            'Distinct addresses a run holds in memory, all windows together (about 130 bytes each; the default '
            'keeps a run under 64 MiB); past it, the counts (spec or precise rules) spill to files in STATE_DIR/spill '
            '(else in TMPDIR; a directory only this user writes) and are ranked a part at a time, with the same '
            'decisions; with none, or a full one, they stay in memory (a warning), up to a quarter of the memory limit. '
            'With the spec rules a '
            "log's state is kept past it too, its counts in parts, within state_budget; with the precise rules "
            'a log whose counts go past it keeps no state.',
            metavar='N', minimum=1, version_added='2.0.0'),
    # 8 MiB: with count_budget 200,000, runs that keep or drop a state this large peaked at 59.9 MiB
    # RSS (churn hours of 0.25 to 5 million addresses); 12 MiB peaked at 64.2 MiB.
    Setting('state_budget', 'int', 8 * 1024 * 1024,
            'Largest state file, in bytes, a run writes or reads (about 24 bytes per IPv4 address and hour, 40 per '
            "IPv6; the default keeps a run under 64 MiB); past it the state of that log is dropped with one "
            "warning, and the next run counts that log's windows cold, with the same decisions.",
            metavar='BYTES', minimum=0, version_added='2.0.0'),
    Setting('rules', 'str', 'spec',
            "spec: the reference script's rules, quirks included. precise: bot and search-engine tests on the "
            'user agent only, crawlers exempt only when their address verifies by reverse and forward DNS, '
            'lists matched by exact address or CIDR network.',
            choices=RULES),
    Setting('crawlers', 'dict', DEFAULT_CRAWLERS,
            'Precise rules: the crawlers exempt when verified, {name: {user_agent: REGEX, domains: [...]}}; the '
            'regex is matched case-insensitively against the user agent.',
            metavar='JSON', default_text='Google, Bing, Apple, Yandex and Baidu with their documented domains'),
    Setting('ipv6_prefix', 'int', None,
            'Precise rules: count and block IPv6 clients per network of this prefix length (64 is usual).',
            metavar='N', minimum=1, maximum=128),
    Setting('ipv4_prefix', 'int', None,
            'Precise rules: count and block IPv4 clients per network of this prefix length (24 is usual; at least '
            '8), as ipv6_prefix does for IPv6. Every client behind one campus or carrier NAT network then counts '
            'as one.',
            metavar='N', minimum=8, maximum=32, version_added='2.0.0'),
    Setting('dns_timeout', 'float', 2.0,
            'Precise rules: the time limit of each DNS lookup, in seconds; a failed or slow lookup does not verify.',
            metavar='SECONDS', minimum=0),
    Setting('dns_budget', 'float', 30.0,
            'Precise rules: the time all crawler verifications of one run may take together, in seconds (they run '
            'before the lists are locked, several at a time). A claim left unverified when it runs out is neither '
            'exempt nor counted in that run; the next run verifies again.',
            metavar='SECONDS', minimum=0, version_added='2.0.0'),
    Setting('dns_lookups', 'int', 256,
            'Precise rules: the most crawler claims (address, crawler) one run verifies, the largest first; the '
            'rest are left unverified as when dns_budget runs out.',
            metavar='N', minimum=1, version_added='2.0.0'),
    Setting('ban_time', 'duration', None,
            'Ban expiry: at the start of each run, remove a blocklist entry whose latest addition in the activity '
            'log (or its rotated files) is older than this, and log it as expired. Seconds, or with a unit: 90m, '
            '12h, 7d. Entries without an addition line (added by hand or by other software) never expire.',
            metavar='DURATION', minimum=1, version_added='2.0.0'),
    Setting('ban_time_max', 'duration', None,
            'Ban expiry for repeat offenders: each new block of an address whose earlier block expired lasts '
            'twice as long as that one, up to this maximum. Needs ban_time.',
            metavar='DURATION', minimum=1, version_added='2.0.0'),
    Setting('metrics_file', 'path', None,
            "Prometheus metrics (text format, for node_exporter's textfile collector): written to this file "
            'after every run, atomically; off when unset.',
            metavar='PATH', version_added='2.0.0'),
    Setting('enforcement', 'str', 'none',
            'Where the blocklist takes effect, made equal to it after every change and by --enforce-now: none (another '
            'program reads the file), nftables (table inet bot_detector, one a blocklist) or nginx (the geo file nginx_geo_file).',
            choices=('none', 'nftables', 'nginx'), role_default=SAME, group='enforcement', version_added='2.0.0'),
    Setting('enforcement_ports', 'list', [80, 443],
            'nftables enforcement: the ports (TCP and UDP) to which every packet from a blocked address is dropped.',
            flag='--enforcement-port', metavar='PORT', minimum=1, maximum=65535, elements='int', group='enforcement',
            version_added='2.0.0'),
    Setting('enforcement_min_prefix_v4', 'int', 8,
            'Enforcement: an IPv4 line, lines that merge into one network, or network lines all together, covering more than '
            'this prefix length (a /8: 1/256 of the addresses) are refused with a warning naming them, never enforced (the '
            'widest first); two /1 lines would drop everyone.',
            metavar='LENGTH', minimum=1, maximum=32, group='enforcement', version_added='2.0.0'),
    Setting('enforcement_min_prefix_v6', 'int', 32,
            'Enforcement: the same for IPv6, as a prefix length (a /32: a large provider\'s whole allocation).',
            metavar='LENGTH', minimum=1, maximum=128, group='enforcement', version_added='2.0.0'),
    Setting('nginx_geo_file', 'path', '/etc/nginx/bot-detector/blocked.conf',
            'nginx enforcement: the file of lines "<address or network> 1;" that a geo block includes.',
            metavar='PATH', role_default=SAME, group='enforcement', version_added='2.0.0'),
    Setting('nginx_test_command', 'str', 'nginx -t -q',
            'nginx enforcement: the command (split as a shell would, run without one) that tests the configuration '
            'after the geo file changed; on failure the previous file is put back.', metavar='COMMAND',
            group='enforcement', version_added='2.0.0'),
    Setting('nginx_reload_command', 'str', 'nginx -s reload',
            'nginx enforcement: the command that reloads nginx after a passed test.', metavar='COMMAND',
            group='enforcement', version_added='2.0.0'),
) + tuple(Setting(name, kind, default, text, **more) for name, kind, default, text, more in FLEET_ROWS + ANSWER_ROWS + CAMPAIGN_ROWS)

BY_NAME = dict((s.name, s) for s in SETTINGS)
ALIASES = dict((alias, s.name) for s in SETTINGS for alias in s.aliases)


class Settings:
    """The detection settings of a run: one attribute per row of SETTINGS.

    ``Settings(threshold=500)`` takes typed values (Python, the module); ``None`` or
    absent means the built-in default. ``surface='module'`` uses the module's defaults.
    """

    def __init__(self, surface='command', **values):
        for alias, name in ALIASES.items():
            if alias in values:
                values[name] = values.pop(alias)
        unknown = sorted(set(values) - set(BY_NAME))
        if unknown:
            raise bad_option('unknown setting %s' % ', '.join(unknown))
        for setting in SETTINGS:
            value = setting.check(values.get(setting.name), setting.name)
            if value is None:
                value = setting.module_default if surface == 'module' else setting.default
                value = list(value) if isinstance(value, list) else value
            setattr(self, setting.name, value)
        self.validate()

    def validate(self):
        """What no single row can check."""
        if self.ipv6_prefix is not None and self.rules != 'precise':
            raise bad_option('ipv6_prefix: IPv6 grouping needs the precise rules (rules: precise)')
        if self.ipv4_prefix is not None and self.rules != 'precise':
            raise bad_option('ipv4_prefix: IPv4 grouping needs the precise rules (rules: precise)')
        if self.ban_time_max is not None:
            if self.ban_time is None:
                raise bad_option('ban_time_max: needs ban_time')
            if self.ban_time_max < self.ban_time:
                raise bad_option('ban_time_max: must be at least ban_time (%s), got %s'
                                 % (format_duration(self.ban_time), format_duration(self.ban_time_max)))
        if not self.job_prefixes:
            raise bad_option('job_prefixes: must list at least one prefix')
        parse_overrides(self.log_formats)
        check_server_ips(self.server_ips)
        check_formats(self.log_json_fields, self.trusted_proxies)
        check_fleet(self)
        check_campaigns(self)
        check_answers(self)
        for name, crawler in self.crawlers.items():
            try:
                re.compile(crawler['user_agent'])
                valid = bool(crawler['user_agent']) and bool(crawler['domains']) and all(
                    isinstance(d, str) and d for d in crawler['domains'])
            except (KeyError, TypeError, re.error):
                valid = False
            if not valid:
                raise bad_option('crawlers: crawler %r needs a user_agent pattern and a list of domains' % (name,))

    def as_dict(self):
        return dict((s.name, getattr(self, s.name)) for s in SETTINGS)
