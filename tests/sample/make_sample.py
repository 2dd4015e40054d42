"""Writes the sample that `make run` shows: an access log of two hours of a small job
board, with scrapers, a search engine, bots, an allow-listed partner and the server
itself, plus an exclusion list and a blocklist that already holds one address.
Deterministic (seeded); the times are fixed, so the run uses --now."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import loggen  # noqa: E402  pylint: disable=wrong-import-position

NOW = '2026-11-21 04:13:43'


def main(directory):
    os.environ['TZ'] = 'UTC'
    time.tzset()
    now = time.mktime(time.strptime(NOW, '%Y-%m-%d %H:%M:%S'))
    rng = random.Random(2026)
    entries = []

    def requests(address, count, start, length, agent=loggen.BROWSERS[1], paths=loggen.JOB_PATHS):
        for dummy in range(count):
            epoch = start + rng.randrange(length)
            entries.append((epoch, loggen.line(address, epoch, path=rng.choice(paths) + str(rng.randint(1, 9999)), agent=agent)))

    previous = now - 3600 - (now % 3600)
    current = now - (now % 3600)
    requests('203.0.113.7', 1450, previous, 3600, agent='python-requests/2.31.0')   # scraper, previous hour
    requests('2001:db8:4::17', 1000, current, int(now - current))                  # scraper, exactly 1000
    requests('198.51.100.23', 1200, previous, 3600)                                 # partner, allow-listed
    requests('192.0.2.50', 1100, current, int(now - current))                      # already blocked
    requests('203.0.113.99', 999, previous, 3600)                                   # one short
    requests('66.249.66.1', 3000, previous, 7200, agent='Mozilla/5.0 (compatible; Googlebot/2.1)')
    requests('10.0.0.5', 2500, previous, 7200, agent='health-check/1.0')            # the server itself
    requests('203.0.113.8', 1300, previous, 3600, paths=loggen.QUIRK_PATHS)         # never counted: the quirk
    for dummy in range(400):
        requests(loggen.ipv4(rng), rng.randint(1, 40), previous, 7200)
    log = b''.join(data for epoch, data in sorted(entries, key=lambda e: e[0]))
    with open(os.path.join(directory, 'access.log'), 'wb') as f:
        f.write(log)
    with open(os.path.join(directory, 'ipexcludedlist.txt'), 'w') as f:
        f.write('198.51.100.23\n')
    with open(os.path.join(directory, 'ipblocklist.txt'), 'w') as f:
        f.write('192.0.2.50\n')


if __name__ == '__main__':
    main(sys.argv[1])
