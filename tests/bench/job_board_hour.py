"""A job board's hour, replayed (issue 45): the access log of one hour with the actors a
campaign profile must tell apart, and the ip2asn TSV of the addresses it uses, both seeded.

    python3 job_board_hour.py OUT_DIR [--seed N] [--scale F]

writes OUT_DIR/access.log (combined format, in time order), OUT_DIR/ip2asn.tsv (the
iptoasn.com layout: range_start range_end AS_number country AS_description, IPv4 and IPv6)
and OUT_DIR/actors.json ({address: actor}; a carrier NAT address is 'cgnat', whoever of
its people sent a line). ``--scale`` shrinks every actor (tests use small hours).

The actors (their parameters are fixed here, before any threshold is tuned):
- seekers: SEEKERS people in four residential ISPs (AS64500-AS64503), one address each,
  a few in IPv6; a listing page, then 1 to 5 job pages with a referer from the site, each
  followed by its assets (CSS, JS, two images).
- cgnat: CGNAT_ADDRESSES carrier-grade NAT addresses of a mobile carrier (AS64504,
  100.64.0.0/10, the shared address space of RFC 6598), each carrying CGNAT_PEOPLE people
  who behave as seekers: over 1000 job views an hour per address.
- naive: one address (192.0.2.10, a hosting AS) walking job ids, no assets, no referer.
- cloud: a scraper rotating through 203.0.113.0/24 (a cloud AS), no assets.
- ipv6: a scraper rotating through 2001:db8:ffff:1::/64, a new interface id every few
  requests, no assets.
- proxy: a residential-proxy campaign of PROXY_ADDRESSES addresses in at least 1,000 /24s,
  three quarters in ASes no seeker uses (AS65536-AS65543) and a quarter in the seekers'
  ISPs; each address sends fewer than 10 requests, walking listing pages and the links on
  them in page order, the hidden trap link (TRAP_PATH) among them, no assets.

Addresses: the documentation ranges where they are large enough (192.0.2.0/24,
203.0.113.0/24, 2001:db8::/32), the shared address space for the carrier, and 10.0.0.0/8
for the residential networks (the documentation ranges hold only three /24s; a campaign
needs a thousand). AS numbers are the documentation ones (RFC 5398).
"""
import argparse
import calendar
import ipaddress
import json
import os
import random
import time

HOUR_START = calendar.timegm((2026, 11, 21, 10, 0, 0))     # 21/Nov/2026:10, UTC
SITE = 'https://jobs.example'
TRAP_PATH = '/jobs/featured-x/'         # a link hidden from people in every listing page
SEEKERS = 3200
CGNAT_ADDRESSES, CGNAT_PEOPLE = 3, 230
NAIVE_REQUESTS = 3000
CLOUD_REQUESTS = 6000
IPV6_REQUESTS, IPV6_PER_ADDRESS = 4000, 4
PROXY_ADDRESSES, PROXY_SEEKER_SHARE = 3200, 0.25
JOB_IDS = 400000
MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')
AGENTS = [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
    'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
]
ASSETS = ['/static/app.css', '/static/app.js', '/static/img/logo.png', '/static/img/company-%d.jpg']

# (AS number, country, description, [networks]): the seekers' ISPs first.
SEEKER_ASES = [(64500 + i, 'DE', 'RESIDENTIAL-ISP-%d' % i, ['10.%d.0.0/11' % (32 * i)]) for i in range(4)]
SEEKER_ASES[0][3].append('2001:db8:1000::/36')
CARRIER_AS = (64504, 'DE', 'MOBILE-CARRIER', ['100.64.0.0/10'])
PROXY_ASES = [(65536 + i, 'US', 'RESIDENTIAL-ELSEWHERE-%d' % i, ['10.%d.0.0/12' % (128 + 16 * i)]) for i in range(8)]
HOSTING_AS = (64510, 'NL', 'HOSTING-EXAMPLE', ['192.0.2.0/24'])
CLOUD_AS = (64511, 'US', 'CLOUD-EXAMPLE', ['203.0.113.0/24', '2001:db8:ffff::/48'])


def stamp(epoch):
    t = time.gmtime(epoch)
    return '%02d/%s/%04d:%02d:%02d:%02d +0000' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour, t.tm_min, t.tm_sec)


def line(address, epoch, path, referer='-', agent=AGENTS[0], status=200, size=5120):
    return '%s - - [%s] "GET %s HTTP/1.1" %d %d "%s" "%s"\n' % (address, stamp(epoch), path, status, size, referer, agent)


def random_address(rng, network):
    net = ipaddress.ip_network(network)
    return str(net.network_address + rng.randrange(1, net.num_addresses - 1))


class Hour:
    def __init__(self, seed, scale):
        self.rng = random.Random(seed)
        self.scale = scale
        self.lines = []         # (epoch, order, text)
        self.actors = {}

    def n(self, count, least=1):
        return max(least, int(round(count * self.scale)))

    def add(self, epoch, text):
        if HOUR_START <= epoch < HOUR_START + 3600:
            self.lines.append((int(epoch), len(self.lines), text))

    def browse(self, address, start, agent, jobs):
        """A person: a listing page, then ``jobs`` job pages with referer and assets."""
        rng, t = self.rng, start
        listing = '/jobs/?q=%s&page=%d' % (rng.choice(['developer', 'nurse', 'driver', 'sales', 'cook']), rng.randint(1, 5))
        self.add(t, line(address, t, listing, SITE + '/', agent))
        for asset in ASSETS[:2]:
            self.add(t + 1, line(address, t + 1, asset, SITE + listing, agent))
        for dummy in range(jobs):
            t += rng.randint(15, 120)
            page = '/job/%d' % rng.randrange(JOB_IDS)
            self.add(t, line(address, t, page, SITE + listing, agent))
            for asset in ASSETS:
                self.add(t + 1, line(address, t + 1, asset % rng.randrange(500) if '%d' in asset else asset,
                                     SITE + page, agent, size=20480))

    def seekers(self):
        rng = self.rng
        for i in range(self.n(SEEKERS)):
            networks = [net for entry in SEEKER_ASES for net in entry[3]]
            network = networks[-1] if i % 20 == 0 else rng.choice(networks[:-1])
            address = random_address(rng, network)
            self.actors[address] = 'seeker'
            self.browse(address, HOUR_START + rng.randrange(3600 - 60), rng.choice(AGENTS), rng.randint(1, 5))

    def cgnat(self):
        rng = self.rng
        for dummy in range(self.n(CGNAT_ADDRESSES)):
            address = random_address(rng, CARRIER_AS[3][0])
            self.actors[address] = 'cgnat'
            for person in range(self.n(CGNAT_PEOPLE, 2)):
                self.browse(address, HOUR_START + rng.randrange(3600 - 60), rng.choice(AGENTS), rng.randint(3, 8))

    def walker(self, actor, addresses, requests, start, per_address=1):
        """A scraper walking job ids in order, each ``per_address`` requests from the next
        address of ``addresses`` (a callable giving one), evenly over the rest of the hour."""
        step = (HOUR_START + 3600 - start) / float(requests)
        first = self.rng.randrange(JOB_IDS // 2)
        address = None
        for i in range(requests):
            if i % per_address == 0:
                address = addresses(i // per_address)
                self.actors[address] = actor
            t = start + i * step
            self.add(t, line(address, t, '/job/%d' % (first + i), agent=AGENTS[1]))

    def scrapers(self):
        rng = self.rng
        self.walker('naive', lambda i: '192.0.2.10', self.n(NAIVE_REQUESTS, 10), HOUR_START + rng.randrange(60))
        cloud = ['203.0.113.%d' % host for host in range(1, 255)]
        self.walker('cloud', lambda i: cloud[i % len(cloud)], self.n(CLOUD_REQUESTS, 10), HOUR_START + 120)
        v6 = ipaddress.ip_network('2001:db8:ffff:1::/64')
        self.walker('ipv6', lambda i: str(v6.network_address + rng.randrange(1, 2 ** 64)), self.n(IPV6_REQUESTS, 10),
                    HOUR_START + 300, IPV6_PER_ADDRESS)

    def proxy(self):
        """Each address: a listing page, then the links on it in page order (20 jobs, the
        hidden trap link after the fifth), fewer than 10 requests, no assets, no referer."""
        rng = self.rng
        count = self.n(PROXY_ADDRESSES, 4)
        seeker_nets = [net for entry in SEEKER_ASES for net in entry[3] if '.' in net]
        proxy_nets = [net for entry in PROXY_ASES for net in entry[3]]
        # A pool of /24s the proxy network's exits sit in: at least a thousand (at full scale).
        pool = [random_address(rng, rng.choice(proxy_nets)).rsplit('.', 1)[0] for dummy in range(max(4, count // 3))]
        mixed = [random_address(rng, rng.choice(seeker_nets)).rsplit('.', 1)[0] for dummy in range(max(2, count // 12))]
        page = rng.randrange(1, 50)
        for i in range(count):
            prefix = rng.choice(mixed if i % 4 == 0 else pool)      # a quarter in the seekers' ISPs
            address = '%s.%d' % (prefix, rng.randrange(1, 255))
            if address in self.actors:
                continue
            self.actors[address] = 'proxy'
            t = HOUR_START + 240 + (3600 - 300) * i / float(count)
            page += 1
            self.add(t, line(address, t, '/jobs/?page=%d' % page, agent=rng.choice(AGENTS)))
            first = rng.randrange(0, 4)
            links = ['/job/%d' % (page * 20 + k) for k in range(20)]
            links.insert(5, TRAP_PATH + '%d' % page)
            for path in links[first:first + rng.randint(3, 8)]:
                t += rng.randint(2, 9)
                self.add(t, line(address, t, path, agent=rng.choice(AGENTS)))

    def write(self, out_dir):
        self.lines.sort()
        with open(os.path.join(out_dir, 'access.log'), 'w') as out:
            out.writelines(text for dummy, dummy2, text in self.lines)
        with open(os.path.join(out_dir, 'actors.json'), 'w') as out:
            json.dump(self.actors, out, sort_keys=True)
        write_ip2asn(os.path.join(out_dir, 'ip2asn.tsv'))


def write_ip2asn(path):
    """The ASes above as iptoasn.com writes them: one range a line, sorted by start, IPv4 then
    IPv6, tab-separated."""
    rows = []
    for asn, country, name, networks in SEEKER_ASES + [CARRIER_AS] + PROXY_ASES + [HOSTING_AS, CLOUD_AS]:
        for network in networks:
            net = ipaddress.ip_network(network)
            rows.append((net.version, int(net.network_address), '%s\t%s\t%d\t%s\t%s\n' % (
                net.network_address, net.broadcast_address, asn, country, name)))
    with open(path, 'w') as out:
        out.writelines(text for dummy, dummy2, text in sorted(rows))


def generate(out_dir, seed=1, scale=1.0):
    hour = Hour(seed, scale)
    hour.seekers()
    hour.cgnat()
    hour.scrapers()
    hour.proxy()
    hour.write(out_dir)
    return hour


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('out_dir')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--scale', type=float, default=1.0)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    hour = generate(args.out_dir, args.seed, args.scale)
    print('%d lines, %d addresses' % (len(hour.lines), len(hour.actors)))


if __name__ == '__main__':
    main()
