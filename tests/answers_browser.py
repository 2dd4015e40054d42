"""A real browser at the challenge (issue 46): Debian's chromium, headless, driven by Debian's
python3-selenium through Debian's /usr/bin/chromedriver (matched by packaging; no driver that
downloads a browser). Run by tests/unit/test_answers_browser.py under /usr/bin/python3:
    answers_browser.py URL PROFILE_DIR [javascript|nojavascript|nocookies]
prints one JSON document: the page's text, its URL and how long the load took."""
import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage')
PAGE_WAIT = 10      # seconds at most for the job page to appear


def main(url, profile, mode):
    options = webdriver.ChromeOptions()
    options.binary_location = '/usr/bin/chromium'
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument('--user-data-dir=' + profile)
    prefs = {}
    if mode == 'nojavascript':
        prefs['profile.managed_default_content_settings.javascript'] = 2
    if mode == 'nocookies':
        prefs['profile.default_content_setting_values.cookies'] = 2
    if prefs:
        options.add_experimental_option('prefs', prefs)
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=options)
    try:
        driver.set_page_load_timeout(PAGE_WAIT)
        started = time.monotonic()
        driver.get(url)
        deadline = started + PAGE_WAIT
        while time.monotonic() < deadline and 'page job' not in driver.find_element('tag name', 'body').text:
            time.sleep(0.05)
            if mode != 'javascript' and time.monotonic() > started + 3:
                break       # nothing more will happen: give the page three seconds
        seconds = time.monotonic() - started
        doc = {'text': driver.find_element('tag name', 'body').text, 'url': driver.current_url, 'seconds': seconds}
        # once passed, the next page load is served at once
        if mode == 'javascript' and 'page job' in doc['text']:
            driver.get(url.replace('/job/1', '/job/2'))
            doc['next_text'] = driver.find_element('tag name', 'body').text
    finally:
        driver.quit()
    print(json.dumps(doc))


if __name__ == '__main__':
    main(*sys.argv[1:4])
