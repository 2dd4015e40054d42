"""Seeded combined-format access logs for the benchmark: about 170,000 requests an hour
(a 24-hour log is about 780 MB and 4 million lines), in time order with up to 30 s of
disorder (Apache logs a request's start time), with planted scrapers, bots, a search
engine, static files and ordinary visitors.

    python3 generate.py HOURS OUT [--shuffled]       HOURS hours ending at END
    python3 generate.py churn OUT --distinct N       N distinct addresses in END's hour (issue 19)
    python3 generate.py busy OUT                     the busy day (issue 39): 4 million lines over
                                                     the 24 hours to END, of which BUSY_WINDOW_LINES
                                                     in the windows (the previous hour, the current
                                                     hour to END), most of their visitors seen once
    python3 generate.py day OUT --index INDEX        the cron day: DAY_START to DAY_END, and
                                                     INDEX (JSON): for each cron run of the day
                                                     (and the warm-up run before them), the size
                                                     of the log when it starts

The cron day's log is written in the order a server appends it: each line when its
request completes (its start stamp plus up to 30 s); a run at time T sees exactly the
lines completed by T.
"""
import argparse
import calendar
import json
import random
import time

END = '2026-11-21 04:13:43'        # UTC; the benchmark runs with TZ=UTC and --now END
DAY_START = '2026-11-21 00:00:00'  # the cron day: the log starts at midnight ...
DAY_END = '2026-11-21 17:50:00'    # ... and grows until the last run
DAY_RUNS = ('2026-11-21 12:00:00', 600, 36)   # first run, interval, runs: 12:00 to 17:50
DAY_WARM_UP = '2026-11-21 11:50:00'           # the cron run before them (it leaves the state they start from)
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


def utc(text):
    return calendar.timegm(time.strptime(text, '%Y-%m-%d %H:%M:%S'))


def run_times():
    """The warm-up run's time, then the day's runs'."""
    first, interval, count = DAY_RUNS
    return [utc(DAY_WARM_UP)] + [utc(first) + i * interval for i in range(count)]


def stamp(epoch):
    t = time.gmtime(epoch)
    return '%02d/%s/%04d:%02d:%02d:%02d +0000' % (t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour, t.tm_min, t.tm_sec)


BUSY_LINES, BUSY_WINDOW_LINES, BUSY_FRESH = 4000000, 304000, 0.745


def generate(start, end, seed=2026, per_hour=REQUESTS_PER_HOUR, fresh=0.0):
    """(completion time, line) in the order of completion, for requests started in [start, end);
    with ``fresh``, that share of the visitors' requests comes from an address seen once."""
    rng = random.Random(seed)
    once = [0]

    def visitor():
        if fresh and rng.random() < fresh:
            once[0] += 1
            scrambled = (once[0] * 0x9E3779B97F4A7C15 + seed) & 0xFFFFFFFFFFFF
            return '100.%d.%d.%d' % (64 + (scrambled >> 16) % 64, (scrambled >> 8) & 0xFF, scrambled & 0xFF) \
                if once[0] % 3 else '2a01:%x:%x::%x' % (scrambled >> 32, (scrambled >> 16) & 0xFFFF, scrambled & 0xFFFF)
        return rng.choice(visitors)
    hours = (end - start + 3599) // 3600
    visitors = ['%d.%d.%d.%d' % (rng.randint(1, 223), rng.randrange(256), rng.randrange(256), rng.randint(1, 254))
                for dummy in range(60000)]
    visitors += ['2a02:%x:%x::%x' % (rng.randrange(65536), rng.randrange(65536), rng.randrange(65536)) for dummy in range(15000)]
    total = (end - start) * per_hour // 3600
    events = []
    for hour in range(hours):
        base = start + hour * 3600
        span = min(3600, end - base)
        for dummy in range(rng.randint(2, 6)):          # scrapers of this hour, some over 1000
            address = '185.%d.%d.%d' % (rng.randrange(256), rng.randrange(256), rng.randint(1, 254))
            for dummy2 in range(rng.randint(700, 2400) * span // 3600):
                events.append((base + rng.randrange(span), address, 'GET', rng.choice(JOB[:6]) + str(rng.randrange(10 ** 6)), SCRAPER_AGENT))
    for dummy in range(total - len(events)):
        epoch = start + rng.randrange(end - start)
        roll = rng.random()
        if roll < 0.10:
            events.append((epoch, '66.249.%d.%d' % (rng.randrange(64, 96), rng.randrange(256)), 'GET',
                           rng.choice(JOB) + str(rng.randrange(10 ** 6)), rng.choice(BOT_AGENTS)))
        elif roll < 0.65:
            events.append((epoch, visitor(), 'GET', rng.choice(JOB) + str(rng.randrange(10 ** 6)), rng.choice(AGENTS)))
        else:
            events.append((epoch, visitor(), rng.choice(('GET', 'GET', 'POST', 'HEAD')), rng.choice(OTHER), rng.choice(AGENTS)))
    # Logged in time order of completion, stamped with the start: up to 30 s of disorder.
    events = sorted(((e[0] + rng.random() * 30,) + e for e in events), key=lambda e: e[0])
    stamps = {}
    for done, epoch, address, method, path, agent in events:
        text = stamps.get(epoch)
        if text is None:
            text = stamps[epoch] = stamp(epoch)
        yield done, '%s - - [%s] "%s %s HTTP/1.1" 200 %d "-" "%s"\n' % (
            address, text, method, path, 2000 + (epoch % 50000), agent)


CHURN_SCRAPERS = ([('185.7.%d.%d' % (i // 200, i % 200 + 1), 1000) for i in range(25)]     # ties at the top-20 cut
                  + [('185.8.0.1', 999), ('185.8.0.2', 1001), ('185.8.0.3', 1200), ('10.0.0.51', 1500)])


def churn(distinct, server_like=False, seed=2019):
    """The high-churn hour: ``distinct`` addresses rotating inside one IPv6 /64, one job-page
    request each, from the top of END's hour to END, in time order; among them scrapers at
    and around the threshold (1000): 25 tied at 1000 around the top-20 cut, 999, 1001, 1200,
    and one holding the server address 10.0.0.5 as a substring (dropped by rule 5.3.8).
    With ``server_like``, every rotating address holds the server address too (IPv6 with
    an embedded IPv4 part, '2001:db8:1:2:...:10.0.0.5'), and of the scrapers only 999,
    1001, 1200 and the server's: fewer records than the top 20 survive rule 5.3.8."""
    rng = random.Random(seed)
    planted_set = CHURN_SCRAPERS[25:] if server_like else CHURN_SCRAPERS
    end = utc(END)
    start = end - end % 3600
    span = end - start
    planted = sorted((start + rng.randrange(span), address) for address, count in planted_set for dummy in range(count))
    agent = AGENTS[0]
    texts = {}
    at = 0
    for i in range(distinct):
        epoch = start + i * span // distinct
        scrambled = (i * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
        if server_like:
            address = '2001:db8:1:2:%x:%x:10.0.0.5' % (scrambled >> 48, (scrambled >> 32) & 0xFFFF)
        else:
            address = '2001:db8:1:2:%x:%x:%x:%x' % (scrambled >> 48, (scrambled >> 32) & 0xFFFF,
                                                    (scrambled >> 16) & 0xFFFF, scrambled & 0xFFFF)
        while at < len(planted) and planted[at][0] <= epoch:
            when, who = planted[at]
            at += 1
            yield '%s - - [%s] "GET /job/%d HTTP/1.1" 200 2100 "-" "%s"\n' % (who, texts.get(when) or stamp(when), at, SCRAPER_AGENT)
        text = texts.get(epoch)
        if text is None:
            texts.clear()
            text = texts[epoch] = stamp(epoch)
        yield '%s - - [%s] "GET /jobs/%d HTTP/1.1" 200 2100 "-" "%s"\n' % (address, text, i, agent)
    for when, who in planted[at:]:
        yield '%s - - [%s] "GET /job/0 HTTP/1.1" 200 2100 "-" "%s"\n' % (who, stamp(when), SCRAPER_AGENT)


def write(lines, out):
    with open(out, 'w') as handle:
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) == 100000:
                handle.write(''.join(batch))
                batch = []
        handle.write(''.join(batch))


def write_day(out, index):
    """The cron day's log, and {run time: log size when the run starts}."""
    runs = run_times()
    sizes, size, pending = {}, 0, list(runs)
    with open(out, 'w') as handle:
        batch = []
        for done, line in generate(utc(DAY_START), utc(DAY_END)):
            while pending and done > pending[0]:
                handle.write(''.join(batch))
                size += sum(len(l) for l in batch)
                batch = []
                sizes[time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(pending.pop(0)))] = size
            batch.append(line)
        handle.write(''.join(batch))
        size += sum(len(l) for l in batch)
    for run in pending:
        sizes[time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(run))] = size
    with open(index, 'w') as handle:
        json.dump(sizes, handle, indent=0, sort_keys=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('hours', help="hours of log ending at END, or 'day' for the cron day")
    parser.add_argument('out')
    parser.add_argument('--shuffled', action='store_true', help='the same lines in random order')
    parser.add_argument('--index', help="the cron day's run index (JSON)")
    parser.add_argument('--distinct', type=int, default=1000000, help='churn: distinct addresses in the hour')
    parser.add_argument('--server-like', action='store_true', help='churn: the addresses hold the server address')
    args = parser.parse_args()
    if args.hours == 'churn':
        write(churn(args.distinct, args.server_like), args.out)
        return
    if args.hours == 'busy':
        end = utc(END)
        windows = end - end % 3600 - 3600
        start = end - 24 * 3600
        quiet = (BUSY_LINES - BUSY_WINDOW_LINES) * 3600 // (windows - start) + 1
        busy = BUSY_WINDOW_LINES * 3600 // (end - windows) + 1
        write((line for part in (generate(start, windows, per_hour=quiet), generate(windows, end, 2039, busy, BUSY_FRESH))
               for done, line in part), args.out)
        return
    if args.hours == 'day':
        write_day(args.out, args.index)
        return
    end = utc(END)
    lines = (line for done, line in generate(end - int(args.hours) * 3600, end))
    if args.shuffled:
        lines = list(lines)
        random.Random(7).shuffle(lines)
    write(lines, args.out)


if __name__ == '__main__':
    main()
