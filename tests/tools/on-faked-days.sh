#!/usr/bin/env bash
# Runs pytest (its arguments: test files, -k ...) once for each faked day of tests/fakeclock.py's
# NOWS (every day of December 2026 and Europe/Berlin's DST nights), the whole test process and
# everything it starts (the command, date(1), the reference) on a clock faked by libfaketime:
# a test that passes here holds whatever today's date and hour. Prints one line a day, and the
# failures; exits 1 when a day failed. Not part of make test (about a minute a day per file).
# FAKED_DAYS, a grep -E pattern, picks the days by name (2026-12-1, dst-).
#   tests/tools/on-faked-days.sh tests/unit/test_expiry.py tests/unit/test_status.py
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
library=$(find /usr/lib -path '*/faketime/libfaketime.so.1' 2>/dev/null | head -n 1)
[ -n "$library" ] || { echo "on-faked-days: libfaketime is missing: tests/tools/install-prereqs.sh installs it" >&2; exit 1; }
python=${PYTHON:-.venv/bin/python}
failed=0
while read -r name epoch; do
    [ -z "${FAKED_DAYS:-}" ] || grep -qE -- "$FAKED_DAYS" <<<"$name" || continue
    faketime=$(printf '%+d' $(( epoch - $(date +%s) )))
    started=$(LD_PRELOAD="$library" FAKETIME="$faketime" date -u '+%a %d %b %Y %H:%M:%S UTC')
    out=$(LD_PRELOAD="$library" FAKETIME="$faketime" "$python" -m pytest -q -p no:cacheprovider "$@" 2>&1)
    status=$?
    echo "$name (from $started): $(tail -n 1 <<<"$out")"
    if [ $status -ne 0 ]; then
        failed=1
        grep -E '^(FAILED|ERROR)' <<<"$out"
    fi
done < <("$python" -c 'import sys; sys.path.insert(0, "tests"); import fakeclock
for name, epoch in fakeclock.NOWS: print(name, epoch)')
exit $failed
