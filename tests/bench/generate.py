"""Seeded combined-format access logs for the benchmark: HOURS hours ending at END, about
170,000 requests an hour (a 24-hour log is about 750 MB and 4 million lines), in time
order with up to 30 s of disorder (Apache logs a request's start time), with planted
scrapers, bots, a search engine, static files and ordinary visitors.

    python3 generate.py HOURS OUT [--shuffled]
"""
import argparse
import calendar
import random
import time

END = '2026-11-21 04:13:43'        # UTC; the benchmark runs with TZ=UTC and --now END
REQUESTS_PER_HOUR = 170000
MONTHS = ('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec')
AGENTS = [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
    'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
]
BOT_AGENTS = ['Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
              'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
              'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)']
SCRAPER_AGENT = 'python-requests/2.32.3'
JOB = ['/job/', '/jobs/', '/stelle/', '/stellen/', '/de/stelle/', '/de/stellen/', '/stellenangebot/']
OTHER = ['/', '/search?q=developer', '/company/', '/static/app.js', '/files/logo.png', '/login']


def stamp(epoch):
    t = time.gmtime(epoch)
    return '%02d/%s/%04d:%02d:%02d:%02d +0000' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour, t.tm_min, t.tm_sec)


def generate(hours, seed=2026):
    rng = random.Random(seed)
    end = calendar.timegm(time.strptime(END, '%Y-%m-%d %H:%M:%S'))
    start = end - hours * 3600
    visitors = ['%d.%d.%d.%d' % (rng.randint(1, 223), rng.randrange(256), rng.randrange(256), rng.randint(1, 254))
                for dummy in range(60000)]
    visitors += ['2a02:%x:%x::%x' % (rng.randrange(65536), rng.randrange(65536), rng.randrange(65536)) for dummy in range(15000)]
    total = hours * REQUESTS_PER_HOUR
    events = []
    for hour in range(hours):
        base = start + hour * 3600
        for dummy in range(rng.randint(2, 6)):          # scrapers of this hour, some over 1000
            address = '185.%d.%d.%d' % (rng.randrange(256), rng.randrange(256), rng.randint(1, 254))
            for dummy2 in range(rng.randint(700, 2400)):
                events.append((base + rng.randrange(3600), address, 'GET', rng.choice(JOB[:6]) + str(rng.randrange(10 ** 6)), SCRAPER_AGENT))
    for dummy in range(total - len(events)):
        epoch = start + rng.randrange(hours * 3600)
        roll = rng.random()
        if roll < 0.10:
            events.append((epoch, '66.249.%d.%d' % (rng.randrange(64, 96), rng.randrange(256)), 'GET',
                           rng.choice(JOB) + str(rng.randrange(10 ** 6)), rng.choice(BOT_AGENTS)))
        elif roll < 0.65:
            events.append((epoch, rng.choice(visitors), 'GET', rng.choice(JOB) + str(rng.randrange(10 ** 6)), rng.choice(AGENTS)))
        else:
            events.append((epoch, rng.choice(visitors), rng.choice(('GET', 'GET', 'POST', 'HEAD')), rng.choice(OTHER), rng.choice(AGENTS)))
    # Logged in time order of completion, stamped with the start: up to 30 s of disorder.
    events.sort(key=lambda e: e[0] + rng.random() * 30)
    stamps = {}
    for epoch, address, method, path, agent in events:
        text = stamps.get(epoch)
        if text is None:
            text = stamps[epoch] = stamp(epoch)
        yield '%s - - [%s] "%s %s HTTP/1.1" 200 %d "-" "%s"\n' % (
            address, text, method, path, 2000 + (epoch % 50000), agent)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('hours', type=int)
    parser.add_argument('out')
    parser.add_argument('--shuffled', action='store_true', help='the same lines in random order')
    args = parser.parse_args()
    lines = generate(args.hours)
    if args.shuffled:
        lines = list(lines)
        random.Random(7).shuffle(lines)
    with open(args.out, 'w') as out:
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) == 100000:
                out.write(''.join(batch))
                batch = []
        out.write(''.join(batch))


if __name__ == '__main__':
    main()
