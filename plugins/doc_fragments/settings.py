# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated from the settings table by tests/tools/render_settings_docs.py: do not edit.

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r'''
options:
  blocklist:
    description:
      - >-
        The blocklist to search and append to, one address per line; the firewall reads it.
      - >-
        Default: the host config file's C(blocklist) when set there, else /etc/ipblocklist.txt.
    type: path
  exclusions_file:
    description:
      - >-
        The allow-list: an address found in it is never blocked. A missing file, or /dev/null,
        counts as empty; one that cannot be read too (as the reference), with a warning, except with
        precise rules (exit status 3).
      - >-
        Default: the host config file's C(exclusions_file) when set there, else
        /etc/ipexcludedlist.txt.
    type: path
    aliases: [exclusions]
  activity_log:
    description:
      - >-
        The activity log: one line per addition.
      - >-
        Default: the host config file's C(activity_log) when set there, else
        /var/log/bot-detector.log.
    type: path
  threshold:
    description:
      - >-
        Requests in one hourly window that block an address (this many or more).
      - >-
        Default: the host config file's C(threshold) when set there, else 1000.
    type: int
  top:
    description:
      - >-
        How many of the busiest addresses are examined per window, after the server addresses are
        dropped.
      - >-
        Default: the host config file's C(top) when set there, else 20.
    type: int
  job_prefixes:
    description:
      - >-
        Request prefixes of job-listing pages; a line is counted only if it holds one of them.
      - >-
        Default: the host config file's C(job_prefixes) when set there, else the spec's eight, 'GET
        /job/' to 'GET /de/stellenangebot/'.
    type: list
    elements: str
  search_engine:
    description:
      - >-
        Case-sensitive marker of a search engine's requests, which are never counted (spec rules).
      - >-
        Default: the host config file's C(search_engine) when set there, else Google.
    type: str
  server_ips:
    description:
      - >-
        This server's own IP addresses, never blocked; anything else is refused (exit status 2).
        With one address, counted records holding it as a substring are dropped (the spec's rule);
        with several, each is matched as a whole address.
      - >-
        Default: the host config file's C(server_ips) when set there, else each address `hostname
        -i` prints (the role: the host's addresses from its network facts).
    type: list
    elements: str
    aliases: [server_ip]
  log_format:
    description:
      - >-
        The format of the access logs: combined (the default, the spec's), vhost_combined,
        nginx_json, caddy, traefik, traefik_json, haproxy, w3c, or auto (told from each log's first
        lines; a log it cannot tell is refused with exit status 2). Each line counts as its combined
        twin would.
      - >-
        Default: the host config file's C(log_format) when set there, else combined.
    type: str
    choices: [combined, vhost_combined, nginx_json, caddy, traefik, traefik_json, haproxy, w3c, auto]
    version_added: 2.0.0
  log_formats:
    description:
      - >-
        A format for one log, LOG=FORMAT (the path as given), over log_format; for hosts with logs
        in several formats.
      - >-
        Default: the host config file's C(log_formats) when set there, else off.
    type: list
    elements: str
    version_added: 2.0.0
  log_json_fields:
    description:
      - >-
        nginx_json: key names beyond the usual ones, {role: key} with role one of address, time,
        request, method, uri, protocol, status, bytes, referer, user_agent, forwarded_for.
      - >-
        Default: the host config file's C(log_json_fields) when set there, else off.
    type: dict
    version_added: 2.0.0
  trusted_proxies:
    description:
      - >-
        Addresses or CIDR networks of proxies in front of the server. When the logged client is one
        and the format logs X-Forwarded-For (nginx_json, caddy, traefik_json), the client is the
        right-most address in it that is not a trusted proxy (as nginx real_ip_recursive), never the
        left-most.
      - >-
        Default: the host config file's C(trusted_proxies) when set there, else off.
    type: list
    elements: str
    version_added: 2.0.0
  haproxy_user_agent_capture:
    description:
      - >-
        haproxy: the place (1-based) of the user agent in the request-capture block {a|b|...};
        without it the twin has no user agent and the bot and search-engine exemptions cannot apply
        (one warning per run).
      - >-
        Default: the host config file's C(haproxy_user_agent_capture) when set there, else off.
    type: int
    version_added: 2.0.0
  rotated:
    description:
      - >-
        When a log starts after the previous-hour window began (logrotate ran within the last hour
        or so), also read its most recent rotated file, LOG.1 or LOG.1.gz. Off for the bare command,
        as in the spec; on for the module and the role.
      - >-
        Default: the host config file's C(rotated) when set there, else true.
    type: bool
  seek:
    description:
      - >-
        In a plain log in time order, find where the windows can start from the line timestamps
        (probes spread over the file) and read only from there; off reads every log whole, as the
        reference does.
      - >-
        Default: the host config file's C(seek) when set there, else true.
    type: bool
  seek_margin:
    description:
      - >-
        Seconds lines may be out of time order; the seek starts this much before the earliest moment
        a line of the windows can have been written.
      - >-
        Default: the host config file's C(seek_margin) when set there, else 600.
    type: int
  lock_timeout:
    description:
      - >-
        Seconds a run waits for the lock on the blocklist while another run holds it (the lists are
        read and appended to under it); then it fails with exit status 3.
      - >-
        Default: the host config file's C(lock_timeout) when set there, else 60.
    type: int
    version_added: 2.0.0
  state_dir:
    description:
      - >-
        Where each run keeps what it counted, per log (what it read up to, the counts per address
        for the hours still in play), so that the next run reads only the lines appended since; the
        decisions are those of a run without it. Off, every run reads the logs' windows, as the
        reference does.
      - >-
        Default: the host config file's C(state_dir) when set there, else off (the role:
        /var/lib/bot-detector).
    type: path
    version_added: 2.0.0
  count_budget:
    description:
      - >-
        Distinct addresses a run holds in memory, all windows together (about 130 bytes each; the
        default keeps a run under 64 MiB); past it, the counts (spec or precise rules) spill to
        files in STATE_DIR/spill (else in TMPDIR; a directory only this user writes) and are ranked
        a part at a time, with the same decisions; with none, or a full one, they stay in memory (a
        warning), up to a quarter of the memory limit. With the spec rules a log's state is kept
        past it too, its counts in parts, within state_budget; with the precise rules a log whose
        counts go past it keeps no state.
      - >-
        Default: the host config file's C(count_budget) when set there, else 200000.
    type: int
    version_added: 2.0.0
  state_budget:
    description:
      - >-
        Largest state file, in bytes, a run writes or reads (about 24 bytes per IPv4 address and
        hour, 40 per IPv6; the default keeps a run under 64 MiB); past it the state of that log is
        dropped with one warning, and the next run counts that log's windows cold, with the same
        decisions.
      - >-
        Default: the host config file's C(state_budget) when set there, else 8388608.
    type: int
    version_added: 2.0.0
  rules:
    description:
      - >-
        spec: the reference script's rules, quirks included. precise: bot and search-engine tests on
        the user agent only, crawlers exempt only when their address verifies by reverse and forward
        DNS, lists matched by exact address or CIDR network.
      - >-
        Default: the host config file's C(rules) when set there, else spec.
    type: str
    choices: [spec, precise]
  crawlers:
    description:
      - >-
        Precise rules: the crawlers exempt when verified, {name: {user_agent: REGEX, domains:
        [...]}}; the regex is matched case-insensitively against the user agent.
      - >-
        Default: the host config file's C(crawlers) when set there, else Google, Bing, Apple, Yandex
        and Baidu with their documented domains.
    type: dict
  ipv6_prefix:
    description:
      - >-
        Precise rules: count and block IPv6 clients per network of this prefix length (64 is usual).
      - >-
        Default: the host config file's C(ipv6_prefix) when set there, else off.
    type: int
  ipv4_prefix:
    description:
      - >-
        Precise rules: count and block IPv4 clients per network of this prefix length (24 is usual;
        at least 8), as ipv6_prefix does for IPv6. Every client behind one campus or carrier NAT
        network then counts as one.
      - >-
        Default: the host config file's C(ipv4_prefix) when set there, else off.
    type: int
    version_added: 2.0.0
  dns_timeout:
    description:
      - >-
        Precise rules: the time limit of each DNS lookup, in seconds; a failed or slow lookup does
        not verify.
      - >-
        Default: the host config file's C(dns_timeout) when set there, else 2.0.
    type: float
  dns_budget:
    description:
      - >-
        Precise rules: the time all crawler verifications of one run may take together, in seconds
        (they run before the lists are locked, several at a time). A claim left unverified when it
        runs out is neither exempt nor counted in that run; the next run verifies again.
      - >-
        Default: the host config file's C(dns_budget) when set there, else 30.0.
    type: float
    version_added: 2.0.0
  dns_lookups:
    description:
      - >-
        Precise rules: the most crawler claims (address, crawler) one run verifies, the largest
        first; the rest are left unverified as when dns_budget runs out.
      - >-
        Default: the host config file's C(dns_lookups) when set there, else 256.
    type: int
    version_added: 2.0.0
  ban_time:
    description:
      - >-
        Ban expiry: at the start of each run, remove a blocklist entry whose latest addition in the
        activity log (or its rotated files) is older than this, and log it as expired. Seconds, or
        with a unit: 90m, 12h, 7d. Entries without an addition line (added by hand or by other
        software) never expire.
      - >-
        Default: the host config file's C(ban_time) when set there, else off.
    type: raw
    version_added: 2.0.0
  ban_time_max:
    description:
      - >-
        Ban expiry for repeat offenders: each new block of an address whose earlier block expired
        lasts twice as long as that one, up to this maximum. Needs ban_time.
      - >-
        Default: the host config file's C(ban_time_max) when set there, else off.
    type: raw
    version_added: 2.0.0
  metrics_file:
    description:
      - >-
        Prometheus metrics (text format, for node_exporter's textfile collector): written to this
        file after every run, atomically; off when unset.
      - >-
        Default: the host config file's C(metrics_file) when set there, else off.
    type: path
    version_added: 2.0.0
  enforcement:
    description:
      - >-
        Where the blocklist takes effect, made equal to it after every change and by --enforce-now:
        none (another program reads the file), nftables (table inet bot_detector, one a blocklist)
        or nginx (the geo file nginx_geo_file).
      - >-
        Default: the host config file's C(enforcement) when set there, else none.
    type: str
    choices: [none, nftables, nginx]
    version_added: 2.0.0
  enforcement_ports:
    description:
      - >-
        nftables enforcement: the ports (TCP and UDP) to which every packet from a blocked address
        is dropped.
      - >-
        Default: the host config file's C(enforcement_ports) when set there, else 80, 443.
    type: list
    elements: int
    version_added: 2.0.0
  enforcement_min_prefix_v4:
    description:
      - >-
        Enforcement: an IPv4 line, lines that merge into one network, or network lines all together,
        covering more than this prefix length (a /8: 1/256 of the addresses) are refused with a
        warning naming them, never enforced (the widest first); two /1 lines would drop everyone.
      - >-
        Default: the host config file's C(enforcement_min_prefix_v4) when set there, else 8.
    type: int
    version_added: 2.0.0
  enforcement_min_prefix_v6:
    description:
      - >-
        Enforcement: the same for IPv6, as a prefix length (a /32: a large provider's whole
        allocation).
      - >-
        Default: the host config file's C(enforcement_min_prefix_v6) when set there, else 32.
    type: int
    version_added: 2.0.0
  nginx_geo_file:
    description:
      - >-
        nginx enforcement: the file of lines "<address or network> 1;" that a geo block includes.
      - >-
        Default: the host config file's C(nginx_geo_file) when set there, else
        /etc/nginx/bot-detector/blocked.conf.
    type: path
    version_added: 2.0.0
  nginx_test_command:
    description:
      - >-
        nginx enforcement: the command (split as a shell would, run without one) that tests the
        configuration after the geo file changed; on failure the previous file is put back.
      - >-
        Default: the host config file's C(nginx_test_command) when set there, else nginx -t -q.
    type: str
    version_added: 2.0.0
  nginx_reload_command:
    description:
      - >-
        nginx enforcement: the command that reloads nginx after a passed test.
      - >-
        Default: the host config file's C(nginx_reload_command) when set there, else nginx -s
        reload.
    type: str
    version_added: 2.0.0
  fleet_store:
    description:
      - >-
        Share counts with the fleet through Redis or Valkey (follow mode, state_dir runs):
        redis://[USER[:PASSWORD]@]HOST:PORT/DB, rediss:// (TLS) or unix://PATH?db=DB; ?cluster=yes
        for a Redis Cluster. Never shown with its password; a password holding / ? # [ ] is
        percent-encoded (or in fleet_store_password_file). Off when unset.
      - >-
        Default: the host config file's C(fleet_store) when set there, else off.
    type: str
    version_added: 2.0.0
  fleet_store_password_file:
    description:
      - >-
        The fleet store's password, read from this file (its first line).
      - >-
        Default: the host config file's C(fleet_store_password_file) when set there, else off.
    type: path
    version_added: 2.0.0
  fleet_host:
    description:
      - >-
        This host's name in the fleet (its counts in the store kept per log of this machine).
      - >-
        Default: the host config file's C(fleet_host) when set there, else the host's name.
    type: str
    version_added: 2.0.0
  fleet_name:
    description:
      - >-
        The store's key prefix, so that several fleets share one store (no * ? [ ] \ { } : or
        blanks: its ACL user's key pattern and the keys' hash tag would read them).
      - >-
        Default: the host config file's C(fleet_name) when set there, else bot-detector.
    type: str
    version_added: 2.0.0
  throttle_list:
    description:
      - >-
        The throttle list: addresses or CIDR networks (one a line, as the blocklist) that nginx
        answers with HTTP 429, Retry-After and Cache-Control: no-store past throttle_rate. Appended
        to as the blocklist is (its lock, its exemptions and width guards), never the blocklist
        itself. Off when unset.
      - >-
        Default: the host config file's C(throttle_list) when set there, else off.
    type: path
    version_added: 2.0.0
  challenge_list:
    description:
      - >-
        The challenge list: addresses or CIDR networks (one a line) whose top-level page loads nginx
        answers with a static page that a browser passes by itself (a signed cookie bound to its
        address, made by the page's script); a client without JavaScript never passes. Off when
        unset.
      - >-
        Default: the host config file's C(challenge_list) when set there, else off.
    type: path
    version_added: 2.0.0
  answer_dir:
    description:
      - >-
        The directory nginx's njs script looks in: one file per listed key (throttle/KEY,
        challenge/KEY, its modification time the entry's expiry), made equal to the lists after
        every change, so that nginx needs no reload for them.
      - >-
        Default: the host config file's C(answer_dir) when set there, else
        /etc/nginx/bot-detector/answers.
    type: path
    version_added: 2.0.0
  nginx_answers_dir:
    description:
      - >-
        Where nginx finds the njs script (answers.js) and the challenge page (challenge.html) that
        --nginx-snippet js and --nginx-snippet page print (the role installs them there).
      - >-
        Default: the host config file's C(nginx_answers_dir) when set there, else
        /etc/nginx/bot-detector.
    type: path
    version_added: 2.0.0
  answer_time:
    description:
      - >-
        How long an entry of the throttle or challenge list lasts after its latest addition (then it
        expires as a ban does, with an activity log line). Seconds, or with a unit: 90m, 12h, 7d.
      - >-
        Default: the host config file's C(answer_time) when set there, else 1d.
    type: raw
    version_added: 2.0.0
  throttle_rate:
    description:
      - >-
        The rate of requests of one throttled key (address or listed network) that nginx lets
        through (limit_req rate: NUMBERr/s or NUMBERr/m); above it, 429. Choose it above what the
        people behind one shared address reach together.
      - >-
        Default: the host config file's C(throttle_rate) when set there, else 30r/m.
    type: str
    version_added: 2.0.0
  throttle_burst:
    description:
      - >-
        Requests above throttle_rate a throttled key may make at once before the 429s start
        (limit_req burst).
      - >-
        Default: the host config file's C(throttle_burst) when set there, else 10.
    type: int
    version_added: 2.0.0
  throttle_retry_after:
    description:
      - >-
        The Retry-After of a 429, in seconds.
      - >-
        Default: the host config file's C(throttle_retry_after) when set there, else 60.
    type: int
    version_added: 2.0.0
  challenge_pass_time:
    description:
      - >-
        How long a passed challenge lasts (the signed cookie's expiry). Seconds, or with a unit.
      - >-
        Default: the host config file's C(challenge_pass_time) when set there, else 1h.
    type: raw
    version_added: 2.0.0
  challenge_secret_file:
    description:
      - >-
        The challenge's HMAC secret, the same on every backend behind the balancer: its first line
        signs, a second line (the previous secret, during a rotation) is still accepted. Read by
        nginx (njs) only.
      - >-
        Default: the host config file's C(challenge_secret_file) when set there, else
        /etc/nginx/bot-detector/challenge.secret.
    type: path
    version_added: 2.0.0
  answer_exempt_paths:
    description:
      - >-
        Path prefixes never throttled or challenged (health checks, assets); the challenge's own
        /.bot-detector/ always.
      - >-
        Default: the host config file's C(answer_exempt_paths) when set there, else '/robots.txt',
        '/favicon.ico', '/.well-known/'.
    type: list
    elements: str
    version_added: 2.0.0
  answer_escalation:
    description:
      - >-
        Throttled or challenged job-page requests (status 429 or 428, read back from the access log)
        of one listed client in an hourly window that escalate it to a block, its activity line
        noted (escalated). A person without JavaScript behind a shared address loads a few pages an
        hour, never that many.
      - >-
        Default: the host config file's C(answer_escalation) when set there, else 500.
    type: int
    version_added: 2.0.0
  answer_address:
    description:
      - >-
        The answer to the reference's per-address rule (an address over the threshold): block (the
        blocklist, as the reference), throttle or challenge (the throttle or challenge list, which
        must be set).
      - >-
        Default: the host config file's C(answer_address) when set there, else block.
    type: str
    choices: [block, throttle, challenge]
    version_added: 2.0.0
  answer_trap:
    description:
      - >-
        The answer to a trap hit (campaign detection). From an address with browser behaviour (a NAT
        address, a mail scanner following links) a block is a challenge.
      - >-
        Default: the host config file's C(answer_trap) when set there, else block.
    type: str
    choices: [block, throttle, challenge]
    version_added: 2.0.0
  answer_behaviour:
    description:
      - >-
        The answer to an address's behaviour alone (campaign detection):
        campaign_behaviour_threshold job pages without browser behaviour, or with it but walking job
        ids. A walker behaves as a browser (it may be a NAT address): a block is a challenge for it.
      - >-
        Default: the host config file's C(answer_behaviour) when set there, else challenge.
    type: str
    choices: [block, throttle, challenge]
    version_added: 2.0.0
  answer_shared:
    description:
      - >-
        The answer to a shared address with browser behaviour (a NAT address: campaign detection),
        over campaign_shared_threshold, or over threshold walking job ids. Never a block: hundreds
        of people may be behind it.
      - >-
        Default: the host config file's C(answer_shared) when set there, else challenge.
    type: str
    choices: [throttle, challenge]
    version_added: 2.0.0
  answer_network:
    description:
      - >-
        The answer to a network's verdict (campaign detection): people and scrapers may share a
        network, so a challenge by default; a block is a challenge for a network where an address
        behaved as a browser.
      - >-
        Default: the host config file's C(answer_network) when set there, else challenge.
    type: str
    choices: [block, throttle, challenge]
    version_added: 2.0.0
  answer_as:
    description:
      - >-
        The answer to an autonomous system's verdict (campaign detection): its ranges that carried
        the campaign where the log shows no job seekers. Never a block: an AS carries people the log
        did not show.
      - >-
        Default: the host config file's C(answer_as) when set there, else challenge.
    type: str
    choices: [throttle, challenge]
    version_added: 2.0.0
  campaigns:
    description:
      - >-
        The campaign profile (see the campaigns guide): besides each address, count its network, the
        distinct addresses of each network, trap hits and what the log shows of its behaviour
        (assets loaded, referers), in the same pass. An address over the threshold without browser
        behaviour or one that hit a trap is blocked; a network, an address below the threshold or
        one that behaves as a browser is at most challenged, never blocked. Off, the reference's
        rule alone, byte for byte.
      - >-
        Default: the host config file's C(campaigns) when set there, else false.
    type: bool
    version_added: 2.0.0
  trap_paths:
    description:
      - >-
        Campaigns: request paths no person asks for (links hidden in listing pages, paths robots.txt
        disallows), each matched as a path prefix. One request flags its address at once. A path
        that would match every page (/, or a prefix of a job prefix's path) is refused.
      - >-
        Default: the host config file's C(trap_paths) when set there, else off.
    type: list
    elements: str
    version_added: 2.0.0
  sliding_hour:
    description:
      - >-
        Judge the current hour on a sliding hour, as HAProxy's http_req_rate: its count plus the
        previous hour's weighted by the share of that hour still inside the last 60 minutes, so that
        999 requests at :59 and 999 at :00 count as about 1998.
      - >-
        Default: the host config file's C(sliding_hour) when set there, else false.
    type: bool
    version_added: 2.0.0
  campaign_behaviour_threshold:
    description:
      - >-
        Campaigns: job-page requests in a window that get an address without browser behaviour
        challenged, below the threshold.
      - >-
        Default: the host config file's C(campaign_behaviour_threshold) when set there, else 100.
    type: int
    version_added: 2.0.0
  campaign_shared_threshold:
    description:
      - >-
        Campaigns: job-page requests in a window that get an address with browser behaviour (many
        people behind one carrier-grade NAT address) challenged; it is never blocked.
      - >-
        Default: the host config file's C(campaign_shared_threshold) when set there, else 5000.
    type: int
    version_added: 2.0.0
  campaign_network_threshold:
    description:
      - >-
        Campaigns: job-page requests in a window, from two or more addresses of one network without
        browser behaviour, that get the network challenged.
      - >-
        Default: the host config file's C(campaign_network_threshold) when set there, else 200.
    type: int
    version_added: 2.0.0
  campaign_network_addresses:
    description:
      - >-
        Campaigns: distinct addresses without browser behaviour that sent job-page requests from one
        network in a window, that get the network challenged.
      - >-
        Default: the host config file's C(campaign_network_addresses) when set there, else 16.
    type: int
    version_added: 2.0.0
  campaign_ipv4_prefix:
    description:
      - >-
        Campaigns: the prefix length of an IPv4 address's network.
      - >-
        Default: the host config file's C(campaign_ipv4_prefix) when set there, else 24.
    type: int
    version_added: 2.0.0
  campaign_ipv6_prefixes:
    description:
      - >-
        Campaigns: the prefix lengths of an IPv6 address's networks, each counted (the narrower
        first: a wider network is judged on the addresses outside the narrower ones decided).
      - >-
        Default: the host config file's C(campaign_ipv6_prefixes) when set there, else 64, 48.
    type: list
    elements: int
    version_added: 2.0.0
  asn_database:
    description:
      - >-
        Campaigns: an offline database of autonomous systems, an ip2asn TSV file (iptoasn.com) or a
        MaxMind-format ASN database (GeoLite2-ASN, DB-IP ASN Lite; read with python3-maxminddb). An
        AS whose addresses without browser behaviour reach campaign_as_threshold requests or
        campaign_as_addresses addresses gets its ranges that carried them challenged, only those
        where the log shows no job seekers; an AS is never blocked. The collection ships no database
        (their licences).
      - >-
        Default: the host config file's C(asn_database) when set there, else off.
    type: path
    version_added: 2.0.0
  campaign_as_threshold:
    description:
      - >-
        Campaigns: job-page requests in a window from one AS's addresses without browser behaviour
        that get its ranges without job seekers challenged.
      - >-
        Default: the host config file's C(campaign_as_threshold) when set there, else 300.
    type: int
    version_added: 2.0.0
  campaign_walk_ids:
    description:
      - >-
        Campaigns: job ids, among those an address came to by a referer, that have a neighbour id
        (one more or one less) it requested too, and half of its ids at least, that make an address
        that behaves as a browser a walker of ids (a harvester faking assets and referers):
        challenged from campaign_behaviour_threshold requests (over the threshold too, never
        blocked: many people behind one address may look at neighbouring jobs), and counted towards
        its network and AS as no browser is.
      - >-
        Default: the host config file's C(campaign_walk_ids) when set there, else 20.
    type: int
    version_added: 2.0.0
  hosting_asns:
    description:
      - >-
        Campaigns: AS numbers of hosting and cloud providers, where no person browses from: a
        network whose addresses are all in them, and each of them as an AS, are judged on the
        network and AS thresholds divided by campaign_hosting_divisor. Needs asn_database.
      - >-
        Default: the host config file's C(hosting_asns) when set there, else off.
    type: list
    elements: int
    version_added: 2.0.0
  campaign_hosting_divisor:
    description:
      - >-
        Campaigns: what the network and AS thresholds (requests and distinct addresses, two at
        least) are divided by for the networks and ASes of hosting_asns.
      - >-
        Default: the host config file's C(campaign_hosting_divisor) when set there, else 4.
    type: int
    version_added: 2.0.0
  campaign_as_addresses:
    description:
      - >-
        Campaigns: distinct addresses without browser behaviour of one AS in a window that get its
        ranges without job seekers challenged.
      - >-
        Default: the host config file's C(campaign_as_addresses) when set there, else 20.
    type: int
    version_added: 2.0.0
'''
