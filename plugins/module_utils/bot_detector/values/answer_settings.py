# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rows of the settings table for the answers softer than a block (throttle, challenge),
kept here so that settings.py stays under the layout's line limit: settings.py adds them to
its one table, ``SETTINGS``. Each row is the arguments of a ``settings.Setting``."""

from __future__ import absolute_import, division, print_function

import re

from ..base.errors import bad_option

__metaclass__ = type

BLOCK, CHALLENGE = 'block', 'challenge'
ANSWERS = ('throttle', CHALLENGE)
VERBS = {'throttle': 'Throttling', 'challenge': 'Challenging'}     # an answer's activity line: 'Throttling <address>'
# The kinds of decision, each with a setting answer_<kind> saying its answer (block: the blocklist).
DECISION_KINDS = ('address', 'trap', 'behaviour', 'shared', 'network', 'as')
_CHOICES = (BLOCK,) + ANSWERS
# nginx's rate syntax (limit_req_zone rate=): requests a second or a minute.
_RATE = re.compile(r'[1-9][0-9]{0,5}r/[sm]\Z')

_GROUP = dict(group='answers', version_added='2.0.0')

ANSWER_ROWS = (
    ('throttle_list', 'path', None,
     'The throttle list: addresses or CIDR networks (one a line, as the blocklist) that nginx answers with HTTP 429, '
     'Retry-After and Cache-Control: no-store past throttle_rate. Appended to as the blocklist is (its lock, its '
     'exemptions and width guards), never the blocklist itself. Off when unset.',
     dict(metavar='PATH', **_GROUP)),
    ('challenge_list', 'path', None,
     'The challenge list: addresses or CIDR networks (one a line) whose top-level page loads nginx answers with a '
     'static page that a browser passes by itself (a signed cookie bound to its address, made by the page\'s '
     'script); a client without JavaScript never passes. Off when unset.',
     dict(metavar='PATH', **_GROUP)),
    ('answer_dir', 'path', '/etc/nginx/bot-detector/answers',
     "The directory nginx's njs script looks in: one file per listed key (throttle/KEY, challenge/KEY, its "
     'modification time the entry\'s expiry), made equal to the lists after every change, so that nginx needs no '
     'reload for them.',
     dict(metavar='DIR', role_default='/etc/nginx/bot-detector/answers', **_GROUP)),
    ('nginx_answers_dir', 'path', '/etc/nginx/bot-detector',
     'Where nginx finds the njs script (answers.js) and the challenge page (challenge.html) that --nginx-snippet js '
     'and --nginx-snippet page print (the role installs them there).',
     dict(metavar='DIR', role_default='/etc/nginx/bot-detector', **_GROUP)),
    ('answer_time', 'duration', 86400,
     'How long an entry of the throttle or challenge list lasts after its latest addition (then it expires as a '
     'ban does, with an activity log line). Seconds, or with a unit: 90m, 12h, 7d.',
     dict(metavar='DURATION', minimum=60, **_GROUP)),
    ('throttle_rate', 'str', '30r/m',
     'The rate of requests of one throttled key (address or listed network) that nginx lets through (limit_req '
     'rate: NUMBERr/s or NUMBERr/m); above it, 429. Choose it above what the people behind one shared address '
     'reach together.',
     dict(metavar='RATE', **_GROUP)),
    ('throttle_burst', 'int', 10,
     'Requests above throttle_rate a throttled key may make at once before the 429s start (limit_req burst).',
     dict(metavar='N', minimum=0, **_GROUP)),
    ('throttle_retry_after', 'int', 60,
     'The Retry-After of a 429, in seconds.', dict(metavar='SECONDS', minimum=1, **_GROUP)),
    ('challenge_pass_time', 'duration', 3600,
     'How long a passed challenge lasts (the signed cookie\'s expiry). Seconds, or with a unit.',
     dict(metavar='DURATION', minimum=60, **_GROUP)),
    ('challenge_secret_file', 'path', '/etc/nginx/bot-detector/challenge.secret',
     'The challenge\'s HMAC secret, the same on every backend behind the balancer: its first line signs, a second '
     'line (the previous secret, during a rotation) is still accepted. Read by nginx (njs) only.',
     dict(metavar='PATH', role_default='/etc/nginx/bot-detector/challenge.secret', **_GROUP)),
    ('answer_exempt_paths', 'list', ['/robots.txt', '/favicon.ico', '/.well-known/'],
     'Path prefixes never throttled or challenged (health checks, assets); the challenge\'s own /.bot-detector/ '
     'always.',
     dict(flag='--answer-exempt-path', metavar='PREFIX', **_GROUP)),
    ('answer_escalation', 'int', 500,
     'Throttled or challenged job-page requests (status 429 or 428, read back from the access log) of one listed '
     'client in an hourly window that escalate it to a block, its activity line noted (escalated). A person without '
     'JavaScript behind a shared address loads a few pages an hour, never that many.',
     dict(metavar='N', minimum=1, **_GROUP)),
    ('answer_address', 'str', 'block',
     "The answer to the reference's per-address rule (an address over the threshold): block (the blocklist, as the "
     'reference), throttle or challenge (the throttle or challenge list, which must be set).',
     dict(metavar='ANSWER', choices=_CHOICES, **_GROUP)),
    ('answer_trap', 'str', 'block', 'The answer to a trap hit (campaign detection). From an address with browser '
     'behaviour (a NAT address, a mail scanner following links) a block is a challenge.',
     dict(metavar='ANSWER', choices=_CHOICES, **_GROUP)),
    ('answer_behaviour', 'str', 'challenge', "The answer to an address's behaviour alone (campaign detection): "
     'campaign_behaviour_threshold job pages without browser behaviour, or with it but walking job ids. A walker '
     'behaves as a browser (it may be a NAT address): a block is a challenge for it.',
     dict(metavar='ANSWER', choices=_CHOICES, **_GROUP)),
    ('answer_shared', 'str', 'challenge', 'The answer to a shared address with browser behaviour (a NAT address: '
     'campaign detection), over campaign_shared_threshold, or over threshold walking job ids. Never a block: '
     'hundreds of people may be behind it.', dict(metavar='ANSWER', choices=ANSWERS, **_GROUP)),
    ('answer_network', 'str', 'challenge', "The answer to a network's verdict (campaign detection): people and scrapers "
     'may share a network, so a challenge by default; a block is a challenge for a network where an address behaved '
     'as a browser.', dict(metavar='ANSWER', choices=_CHOICES, **_GROUP)),
    ('answer_as', 'str', 'challenge', "The answer to an autonomous system's verdict (campaign detection): its ranges "
     'that carried the campaign where the log shows no job seekers. Never a block: an AS carries people the log did '
     'not show.', dict(metavar='ANSWER', choices=ANSWERS, **_GROUP)),
)

_DEFAULTS = dict((row[0][len('answer_'):], row[2]) for row in ANSWER_ROWS if row[0][len('answer_'):] in DECISION_KINDS)


def answer_for(settings, kind, people=False):
    """The answer (block, throttle or challenge) ``settings`` give a decision of ``kind`` (one of
    DECISION_KINDS): its setting answer_<kind>, the one place a decision's answer comes from. A
    decision about ``people`` (an address that behaves as a browser, a network where one did)
    is never a block: a challenge instead, which a person's browser passes."""
    answer = getattr(settings, 'answer_' + kind)
    return CHALLENGE if people and answer == BLOCK else answer


def check_answers(settings):
    """What no single row of the answers can check."""
    if not _RATE.match(settings.throttle_rate):
        raise bad_option('throttle_rate: must be a rate as nginx writes it, NUMBERr/s or NUMBERr/m, got %r'
                         % settings.throttle_rate)
    for kind in DECISION_KINDS:
        # An answer the operator chose needs its list; the defaults' challenges without a
        # challenge list are only said, with a warning (drivers/answers.py), as before.
        answer = getattr(settings, 'answer_' + kind)
        if answer != _DEFAULTS[kind] and answer != BLOCK and not getattr(settings, answer + '_list'):
            raise bad_option('answer_%s: %s needs %s_list' % (kind, answer, answer))
    for name in ('throttle_list', 'challenge_list'):
        if getattr(settings, name) and getattr(settings, name) == settings.blocklist:
            raise bad_option('%s: must not be the blocklist (%s)' % (name, settings.blocklist))
