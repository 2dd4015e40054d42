#!/usr/bin/env bash
# `make run`: the detector on the embedded sample, with every file in a scratch directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${1:-$root/scratch}
rm -rf "$scratch" && mkdir -p "$scratch"
python3 "$root/tests/sample/make_sample.py" "$scratch"
cd "$scratch"
echo "Sample: $(wc -l < access.log) requests in $scratch/access.log, as of 2026-11-21 04:13:43 UTC"
echo "\$ bot-detector.sh access.log   (files in $scratch)"
set +e
TZ=UTC python3 "$root/plugins/module_utils/bot_detector" \
    --blocklist ipblocklist.txt --exclusions ipexcludedlist.txt --activity-log bot-detector.log \
    --server-ip 10.0.0.5 --now '2026-11-21 04:13:43' access.log
status=$?
set -e
echo "(exit status $status)"
echo "--- ipblocklist.txt"; cat ipblocklist.txt
echo "--- bot-detector.log"; cat bot-detector.log
exit $status
