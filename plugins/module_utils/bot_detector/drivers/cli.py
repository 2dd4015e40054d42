# -*- coding: utf-8 -*-
# Copyright (c) jobboard.bot_detector contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host command, ``bot-detector.sh LOG``: its options come from the settings table."""

from __future__ import absolute_import, division, print_function

import argparse
import os
import sys

from .. import VERSION
from ..base.clock import parse_now
from ..base.errors import EXIT_BAD_OPTION, EXIT_ENFORCEMENT_FAILED, EXIT_OK, EXIT_SPEC_ERROR, BotDetectorError
from ..base.messages import ERROR_PREFIX, FOLLOW_NEEDS, USAGE_LINES, WARNING_PREFIX
from ..base.text import to_bytes
from ..values.config import DEFAULT_CONFIG, resolve
from ..values.settings import SETTINGS

__metaclass__ = type

EXIT_STATUSES = ('Exit status: 0 done (a rotated file left out is a warning on standard error); 1 no log given, '
                 'or the log is missing, unreadable or not a regular file; 2 bad option, value or config file '
                 '(nothing read or written); 3 the run failed (host address or date query, lock, read or append; '
                 'a failed append takes back its blocklist and activity lines where it can, and says when it cannot); '
                 '4 the run did its work but enforcement (nftables or nginx) failed: the blocklist keeps its changes, '
                 'a warning names the cause.')


# An off-flag's help says what the flag does (its setting's help says what the setting does).
OFF_HELP = {'--full-scan': 'read every log whole, as the reference does, instead of only from where the windows can start '
                           '(seek, on by default: in a plain log in time order, found from the line timestamps)'}

_COLUMNS = []


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width as shutil would find it (the
    COLUMNS variable, else the terminal, else 80): argparse would import shutil for it, and
    its compression modules, on every run."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            if not _COLUMNS:
                try:
                    columns = int(os.environ.get('COLUMNS', '0'))
                except ValueError:
                    columns = 0
                if columns <= 0:
                    try:
                        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
                    except (AttributeError, ValueError, OSError):
                        columns = 0
                _COLUMNS.append(columns or 80)
            width = _COLUMNS[0] - 2
        super(_Formatter, self).__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, exit 2: argparse's default adds the usage block.
        sys.stderr.write(ERROR_PREFIX + message + '\n')
        raise SystemExit(EXIT_BAD_OPTION)


def build_parser():
    parser = _Parser(
        prog='bot-detector.sh', formatter_class=_Formatter,
        description='Count requests to job-listing pages per client address in the previous and the current '
                    'hour of an access log, and append each address with THRESHOLD or more requests to the '
                    'blocklist (unless it is already listed or allow-listed). Without options and without a '
                    'config file it behaves exactly as the reference bot-detector.sh. Settings come from the '
                    'options given, then the config file, then the defaults.',
        epilog=EXIT_STATUSES)
    parser.add_argument('log', nargs='*', help='the access log to read; several are summed per address')
    parser.add_argument('--config', metavar='PATH',
                        help='the host config file (INI, section [bot_detector], keys are the settings\' names); '
                             'default: %s, when it exists' % DEFAULT_CONFIG)
    for setting in SETTINGS:
        default = ' (default: %s)' % setting.effective_default_text
        if setting.kind == 'bool':
            on_help = setting.help + default if setting.off_flag != '--full-scan' else argparse.SUPPRESS
            parser.add_argument(setting.flag, dest=setting.name, action='store_const', const=True, help=on_help)
            off_help = OFF_HELP.get(setting.off_flag, 'turn %s off' % setting.flag)
            parser.add_argument(setting.off_flag, dest=setting.name, action='store_const', const=False, help=off_help)
        elif setting.kind == 'list':
            parser.add_argument(setting.flag, dest=setting.name, action='append', metavar=setting.metavar,
                                help=setting.help + ' Repeat for several.' + default)
        else:
            parser.add_argument(setting.flag, dest=setting.name, metavar=setting.metavar, choices=setting.choices,
                                help=setting.help + default)
    parser.add_argument('--now', metavar="'YYYY-MM-DD HH:MM:SS'",
                        help="evaluate as if the run started at this local time, or at '@SECONDS' since the epoch "
                             '(replays, tests)')
    parser.add_argument('--check', action='store_true', help='report what would be blocked; change nothing')
    parser.add_argument('--json', action='store_true',
                        help='print one JSON document (what the Ansible module returns) instead of the text lines')
    parser.add_argument('--unblock', action='append', metavar='ADDR',
                        help='instead of a detection run (no LOG): remove the blocklist lines equal to ADDR, under the '
                             "run's lock, keeping every other line, the file's owner and mode; each removal is one "
                             'activity log line. Repeat for several.')
    for kind, what in (('throttle', 'answered with HTTP 429 past throttle_rate'),
                       ('challenge', "whose page loads are answered with the browser check")):
        parser.add_argument('--' + kind, action='append', metavar='ADDR',
                            help='instead of a detection run (no LOG): put ADDR (an address or CIDR network) on the %s '
                                 'list (%s_list), %s, until answer_time after; one activity log line each. '
                                 'Repeat for several.' % (kind, kind, what))
    parser.add_argument('--nginx-snippet', choices=('http', 'server', 'js', 'page'),
                        help="print the nginx configuration the answers need for the settings given: the http block's "
                             "part, the server block's, the njs script or the challenge page; reads and writes nothing")
    parser.add_argument('--status', action='store_true',
                        help='instead of a detection run: each blocklist entry with when and why it was added and '
                             'when it expires; with LOG, also the top addresses of the current windows against the '
                             'threshold. Reads, never writes.')
    parser.add_argument('--enforce-now', action='store_true',
                        help='instead of a detection run (no LOG): load the blocklist into the enforcement point of '
                             'setting enforcement (nftables or nginx) now, even when it looks in sync; reads no log. '
                             'Exit status 0 when in sync after it, 4 when the load failed.')
    parser.add_argument('--follow', action='store_true',
                        help='keep running: read the logs as they grow (rotations included) and decide at most a '
                             'second after new lines, as a run at that instant would; its position and counts are '
                             'kept in the state directory (--state-dir, required). SIGTERM ends it (exit 0). With '
                             '--now, its clock starts there and runs (replays, tests)')
    parser.add_argument('--version', action='version', version='%(prog)s ' + VERSION)
    return parser


def explicit_settings(args):
    """The settings given on the command line, parsed by the table: {name: value}."""
    values = {}
    for setting in SETTINGS:
        raw = getattr(args, setting.name)
        if raw is None or setting.kind == 'bool':
            values[setting.name] = raw
        elif setting.kind == 'list':
            values[setting.name] = setting.check(raw, setting.flag)
        else:
            values[setting.name] = setting.parse(raw, '%s %s' % (setting.flag, raw))
    return values


def main(argv=None):
    try:
        return _main(argv)
    except BrokenPipeError:
        # A closed standard output (| head) ends the run where it ends a shell script: at
        # the line that could not be written, silently, by SIGPIPE; after the run's own
        # clean-up (its lock), which the exception went through.
        import signal       # a closed standard output only
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
        raise


def _main(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout.buffer

    def emit(line):
        # Bytes, so an address with bytes that are not UTF-8 prints as the log has it.
        out.write(to_bytes(line) + b'\n')
        out.flush()

    def warn(line):
        sys.stderr.write(WARNING_PREFIX + line + '\n')

    if args.unblock and (args.log or args.status):
        parser.error('--unblock takes no LOG and no --status')
    if args.enforce_now and (args.log or args.status or args.unblock or args.check):
        parser.error('--enforce-now takes no LOG, --status, --unblock or --check')
    hand = [kind for kind in ('throttle', 'challenge') if getattr(args, kind)]
    if (hand or args.nginx_snippet) and (args.log or args.status or args.unblock or args.enforce_now or args.follow
                                         or len(hand) + bool(args.nginx_snippet) > 1):
        parser.error('--throttle, --challenge and --nginx-snippet take no LOG, no other action and not each other')
    if not args.log and not args.unblock and not args.status and not args.enforce_now and not hand and not args.nginx_snippet:
        for line in USAGE_LINES:   # docs/contract.md, rule 1: three lines on standard output, exit 1
            emit(line)
        return EXIT_SPEC_ERROR

    if args.follow and (not args.log or args.check or args.json or args.unblock or args.status or args.enforce_now):
        parser.error(FOLLOW_NEEDS)
    try:
        settings = resolve(explicit_settings(args), config_path=args.config or DEFAULT_CONFIG,
                           config_required=args.config is not None)
        now = parse_now(args.now) if args.now is not None else None
        if args.follow:
            if not settings.state_dir:
                parser.error(FOLLOW_NEEDS)
            from .follow import follow      # --follow only
            follow(settings, args.log, now=now, emit=emit, on_warning=warn)
            return EXIT_OK
        if args.enforce_now:
            if settings.enforcement == 'none':
                parser.error('--enforce-now: setting enforcement is none (set it to nftables or nginx)')
            from .after_change import enforce_now      # --enforce-now only
            result = enforce_now(settings, emit=None if args.json else emit, on_warning=warn)
        elif args.nginx_snippet:
            from ..enforce.answers_nginx import snippet     # --nginx-snippet only
            sys.stdout.write(snippet(settings, args.nginx_snippet))
            return EXIT_OK
        elif hand:
            from .answers import answer_by_hand     # --throttle, --challenge only
            result = answer_by_hand(settings, hand[0], getattr(args, hand[0]), check_mode=args.check,
                                    emit=None if args.json else emit, on_warning=warn)
        elif args.unblock:
            from .unblock import unblock      # --unblock only
            result = unblock(settings, args.unblock, check_mode=args.check, emit=None if args.json else emit,
                             on_warning=warn)
        elif args.status:
            from .status import status      # --status only
            result = status(settings, args.log, now=now)
            for line in result.warnings:
                warn(line)
            for line in [] if args.json else result.lines():
                emit(line)
        else:
            from .run import detect     # a detection run only: --version and --help load none of the stages
            result = detect(settings, args.log, now=now, check_mode=args.check, emit=None if args.json else emit,
                            on_warning=warn)
    except BotDetectorError as exc:
        if exc.exit_status == EXIT_SPEC_ERROR:
            emit(exc.message)     # the spec's errors go to standard output
        else:
            sys.stderr.write(ERROR_PREFIX + exc.message + '\n')
        return exc.exit_status
    if args.json:
        import json     # --json only
        emit(json.dumps(result.as_dict(), sort_keys=True))
    enforcement = getattr(result, 'enforcement', None)       # --status has none
    if enforcement is not None and not enforcement['in_sync']:
        return EXIT_ENFORCEMENT_FAILED
    return EXIT_OK
