#!/usr/bin/env bash
# The reference bot-detector.sh, written from the processing rules of
# docs/docsite/rst/guide_contract.rst as a GNU grep/awk/sort/uniq pipeline: the oracle the
# equivalence tests compare the Python core against. It is not shipped.
#
# Test-only overrides, from the environment (defaults are the contract's):
#   BD_BLOCKLIST BD_EXCLUSIONS BD_ACTIVITY_LOG   file paths
#   BD_SERVER_IP      the server address text (default: the output of hostname -i; the
#                     spec drops records holding that whole text, even when it holds
#                     several addresses)
#   BD_NOW            'YYYY-MM-DD HH:MM:SS' local time the run pretends to start at
#   BD_SEARCH_ENGINE  the search-engine marker (default: Google)
#   BD_THRESHOLD BD_TOP
# LC_ALL=C and grep -a: bytes, not characters, whatever the log holds. The activity
# date is `date` in the caller's locale, as the spec's script would print it.
caller_lc_all=${LC_ALL-}
caller_lc_all_set=${LC_ALL+set}
export LC_ALL=C
set -f   # no globbing when a record is split into words

blocklist=${BD_BLOCKLIST:-/etc/ipblocklist.txt}
exclusions=${BD_EXCLUSIONS:-/etc/ipexcludedlist.txt}
activity_log=${BD_ACTIVITY_LOG:-/var/log/bot-detector.log}
search_engine=${BD_SEARCH_ENGINE:-Google}
threshold=${BD_THRESHOLD:-1000}
top=${BD_TOP:-20}

if [ $# -lt 1 ]; then
    echo "Path to log file missing."
    echo "Usage: bot-detector.sh <logfile>"
    echo "    bot-detector.sh /var/log/nginx/access.log"
    exit 1
fi
logfile=$1
if [ ! -r "$logfile" ]; then
    echo "File not found or not readable: $logfile"
    exit 1
fi

start=$(date +%s)
if [ -n "${BD_SERVER_IP+set}" ]; then
    server_ip=$BD_SERVER_IP
else
    server_ip=$(hostname -i) || exit 3
fi
drop_server() {
    if [ -n "$server_ip" ]; then grep -avF -- "$server_ip"; else cat; fi
}
activity_date() {
    if [ -n "$caller_lc_all_set" ]; then LC_ALL=$caller_lc_all date; else env -u LC_ALL date; fi
}
now=$(date -d "${BD_NOW:-now}" +%s) || exit 3

for timeframe in "1 hour ago" "now"; do
    if [ "$timeframe" = "1 hour ago" ]; then
        echo "Checking the previous hour..."
    else
        echo "Checking the current hour..."
    fi
    # date -d "$timeframe", relative to $now: "@N" takes no relative items, so
    # anchor on the same instant written in UTC.
    hour_timestamp=$(date -d "$(date -u -d "@$now" '+%Y-%m-%d %H:%M:%S') UTC $timeframe" +%d/%b/%Y:%H)
    records=$(grep -aF -- "$hour_timestamp" "$logfile" \
        | grep -aF -e 'GET /job/' -e 'GET /jobs/' -e 'GET /stelle/' -e 'GET /stellen/' \
                   -e 'GET /stellenangebot/' -e 'GET /de/stelle/' -e 'GET /de/stellen/' \
                   -e 'GET /de/stellenangebot/' \
        | grep -aiv 'bot' \
        | grep -aFv -- "$search_engine" \
        | grep -aFv '/files/' \
        | awk '{print $1}' \
        | sort | uniq -c | sort -nr \
        | drop_server \
        | head -n "$top")
    while read -r line; do
        [ -n "$line" ] || continue
        read -r -a parts <<< "$line"   # split on blanks, as the spec does
        count=${parts[0]}
        ip=${parts[1]}
        if [ "$count" -ge "$threshold" ]; then
            if grep -qF -- "$ip" "$blocklist" 2>/dev/null; then
                echo "IP address $ip is already blocked."
            elif grep -qF -- "$ip" "$exclusions" 2>/dev/null; then
                echo "IP address $ip is allow-listed and will not be blocked."
            else
                echo "Blocking IP address: $ip ($count requests)"
                echo "$ip" >> "$blocklist" || exit 3
                echo "$(activity_date) | IP addess $ip added to the block list, RPH=$count" >> "$activity_log" || exit 3
            fi
        fi
    done <<< "$records"
done

end=$(date +%s)
duration=$((end - start))
echo "Execution time: $duration seconds"
