# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The campaign profile's rows of the one settings table (issue 45), as plain data that
settings.py turns into its ``Setting`` rows (this file imports nothing of it: no circle),
and their checks that need several settings (``check_campaigns``).

The thresholds' defaults are the ones the replayed hour tuned (tests/bench/campaign_bench.py,
docs/benchmarks.md "Campaigns")."""

from __future__ import absolute_import, division, print_function

from ..base.errors import bad_option

__metaclass__ = type

# (name, kind, default, help, {keyword arguments of Setting}), as answer_settings.ANSWER_ROWS
CAMPAIGN_ROWS = (
    ('campaigns', 'bool', False,
     'The campaign profile (see the campaigns guide): besides each address, count its network, the distinct '
     'addresses of each network, trap hits and what the log shows of its behaviour (assets loaded, referers), '
     'in the same pass. An address over the threshold without browser behaviour or one that hit a trap is '
     'blocked; a network, an address below the threshold or one that behaves as a browser is at most '
     'challenged, never blocked. Off, the reference\'s rule alone, byte for byte.',
     {'off_flag': '--no-campaigns', 'version_added': '2.0.0'}),
    ('trap_paths', 'list', None,
     'Campaigns: request paths no person asks for (links hidden in listing pages, paths robots.txt '
     'disallows), each matched as a path prefix. One request flags its address at once. A path that would '
     'match every page (/, or a prefix of a job prefix\'s path) is refused.',
     {'flag': '--trap-path', 'metavar': 'PATH', 'version_added': '2.0.0'}),
    ('sliding_hour', 'bool', False,
     'Judge the current hour on a sliding hour, as HAProxy\'s http_req_rate: its count plus the previous '
     'hour\'s weighted by the share of that hour still inside the last 60 minutes, so that 999 requests at '
     ':59 and 999 at :00 count as about 1998.',
     {'off_flag': '--no-sliding-hour', 'version_added': '2.0.0'}),
    ('campaign_behaviour_threshold', 'int', 100,
     'Campaigns: job-page requests in a window that get an address without browser behaviour challenged, '
     'below the threshold.',
     {'metavar': 'N', 'minimum': 1, 'version_added': '2.0.0'}),
    ('campaign_shared_threshold', 'int', 5000,
     'Campaigns: job-page requests in a window that get an address with browser behaviour (many people '
     'behind one carrier-grade NAT address) challenged; it is never blocked.',
     {'metavar': 'N', 'minimum': 1, 'version_added': '2.0.0'}),
    ('campaign_network_threshold', 'int', 200,
     'Campaigns: job-page requests in a window, from two or more addresses of one network without browser '
     'behaviour, that get the network challenged.',
     {'metavar': 'N', 'minimum': 1, 'version_added': '2.0.0'}),
    ('campaign_network_addresses', 'int', 16,
     'Campaigns: distinct addresses without browser behaviour that sent job-page requests from one network in '
     'a window, that get the network challenged.',
     {'metavar': 'N', 'minimum': 2, 'version_added': '2.0.0'}),
    ('campaign_ipv4_prefix', 'int', 24,
     'Campaigns: the prefix length of an IPv4 address\'s network.',
     {'metavar': 'LENGTH', 'minimum': 8, 'maximum': 32, 'version_added': '2.0.0'}),
    ('campaign_ipv6_prefixes', 'list', [64, 48],
     'Campaigns: the prefix lengths of an IPv6 address\'s networks, each counted (the narrower first: a wider '
     'network is judged on the addresses outside the narrower ones decided).',
     {'flag': '--campaign-ipv6-prefix', 'metavar': 'LENGTH', 'minimum': 16, 'maximum': 128, 'elements': 'int',
      'version_added': '2.0.0'}),
    ('asn_database', 'path', None,
     'Campaigns: an offline database of autonomous systems, an ip2asn TSV file (iptoasn.com) or a MaxMind-format '
     'ASN database (GeoLite2-ASN, DB-IP ASN Lite; read with python3-maxminddb). An AS whose addresses without '
     'browser behaviour reach campaign_as_threshold requests or campaign_as_addresses addresses gets its ranges '
     'that carried them challenged, only those where the log shows no job seekers; an AS is never blocked. The '
     'collection ships no database (their licences).',
     {'metavar': 'PATH', 'version_added': '2.0.0'}),
    ('campaign_as_threshold', 'int', 300,
     'Campaigns: job-page requests in a window from one AS\'s addresses without browser behaviour that get its '
     'ranges without job seekers challenged.',
     {'metavar': 'N', 'minimum': 1, 'version_added': '2.0.0'}),
    ('campaign_walk_ids', 'int', 20,
     'Campaigns: job ids, among those an address came to by a referer, that have a neighbour id (one more or '
     'one less) it requested too, and half of its ids at least, that make an address that behaves as a browser '
     'a walker of ids (a harvester faking assets and referers): challenged from campaign_behaviour_threshold '
     'requests (over the threshold too, never blocked: many people behind one address may look at '
     'neighbouring jobs), and counted towards its network and AS as no browser is.',
     {'metavar': 'N', 'minimum': 2, 'version_added': '2.0.0'}),
    ('hosting_asns', 'list', None,
     'Campaigns: AS numbers of hosting and cloud providers, where no person browses from: a network whose '
     'addresses are all in them, and each of them as an AS, are judged on the network and AS thresholds '
     'divided by campaign_hosting_divisor. Needs asn_database.',
     {'flag': '--hosting-asn', 'metavar': 'ASN', 'elements': 'int', 'minimum': 1, 'maximum': 4294967295,
      'version_added': '2.0.0'}),
    ('campaign_hosting_divisor', 'int', 4,
     'Campaigns: what the network and AS thresholds (requests and distinct addresses, two at least) are '
     'divided by for the networks and ASes of hosting_asns.',
     {'metavar': 'N', 'minimum': 1, 'version_added': '2.0.0'}),
    ('campaign_as_addresses', 'int', 20,
     'Campaigns: distinct addresses without browser behaviour of one AS in a window that get its ranges without '
     'job seekers challenged.',
     {'metavar': 'N', 'minimum': 2, 'version_added': '2.0.0'}),
)


def check_campaigns(settings):
    """What the campaign rows need of each other and of the rest."""
    if not settings.campaigns:
        for name in ('trap_paths', 'asn_database', 'hosting_asns'):
            if getattr(settings, name):
                raise bad_option('%s: needs the campaign profile (campaigns: true)' % name)
        return
    if settings.rules != 'spec':
        raise bad_option('campaigns: the campaign profile works with the spec rules for now (rules: spec)')
    if not settings.campaign_ipv6_prefixes:
        raise bad_option('campaign_ipv6_prefixes: must list at least one prefix length')
    if settings.hosting_asns and not settings.asn_database:
        raise bad_option('hosting_asns: needs an AS database (asn_database) to tell which addresses are in them')
    pages = [prefix.split(' ', 1)[-1] for prefix in settings.job_prefixes]
    for path in settings.trap_paths or ():
        if not path.startswith('/') or any(character.isspace() or not character.isprintable() or character == '"' for character in path):
            raise bad_option('trap_paths: %r is not a request path (it starts with / and holds no blank, control '
                             'character or quote)' % path)
        covered = [page for page in pages if page.startswith(path)]
        if path == '/' or covered:
            raise bad_option('trap_paths: %r would match every page%s; a trap is a path no person asks for'
                             % (path, ' under %s' % covered[0] if covered else ''))
