#!/usr/bin/env bash
# Installs the system tools the tests need, with apt, when they are missing:
# podman + runc (molecule hosts), debootstrap (their image), shellcheck (ansible-test
# sanity), localedef (locales) for the de_DE.UTF-8 locale the activity-date test runs
# `date` under, promtool (prometheus) for the Prometheus rules' tests, nft, nginx, curl
# and ip for the enforcement tests (namespaces, a scratch nginx), logrotate for follow mode's
# rotation tests, redis-server and redis-cli, and valkey-server on Debian 13 (a scratch fleet store, one server and a cluster, that
# the fleet tests start themselves) and Debian's python3-redis (the command's client under
# `python3 -S` on hosts), faketime (libfaketime: the date-dependent tests run date(1) and the command
# on a faked clock, every day of a month and DST nights, tests/fakeclock.py), python3-maxminddb (the
# campaign profile's MaxMind-format AS databases), and for the answers' tests Debian's njs module
# (libnginx-mod-http-js), chromium with its chromium-driver and python3-selenium (a real browser at
# the challenge, driver and browser matched by packaging: nothing downloads a browser). Anything still missing
# afterwards is an error, never a skipped test.
# Debian's prometheus and nginx packages would start (and enable) their servers: only the
# programs are wanted, so the install runs under a policy-rc.d that forbids starting services
# (unless one is in place already), and the Prometheus unit is then disabled and stopped.
set -euo pipefail
declare -A package_of=([podman]=podman [runc]=runc [debootstrap]=debootstrap [shellcheck]=shellcheck [localedef]=locales
                        [promtool]=prometheus [nft]=nftables [nginx]=nginx [curl]=curl [ip]=iproute2 [logrotate]=logrotate
                        [redis-server]=redis-server [redis-cli]=redis-tools [chromium]=chromium [chromedriver]=chromium-driver
                        [faketime]=faketime)
# Valkey where Debian has it (13 and later): the fleet tests run against it as against Redis.
debian_major=0
if grep -qx 'ID=debian' /etc/os-release 2>/dev/null; then
    debian_major=$(sed -n 's/^VERSION_ID="\{0,1\}\([0-9]*\).*/\1/p' /etc/os-release)
fi
if [ "${debian_major:-0}" -ge 13 ] 2>/dev/null; then package_of[valkey-server]=valkey-server; fi
test_locale=de_DE.UTF-8

has_locale() { locale -a 2>/dev/null | grep -qix 'de_DE\.utf-\?8'; }

missing=()
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("${package_of[$tool]}")
done
has_python3_redis() { [ -f /usr/lib/python3/dist-packages/redis/__init__.py ]; }
has_python3_redis || missing+=(python3-redis)
# The campaign profile's MaxMind-format AS databases (asn_database) are read with Debian's python3-maxminddb.
has_python3_maxminddb() { [ -f /usr/lib/python3/dist-packages/maxminddb/__init__.py ]; }
has_python3_maxminddb || missing+=(python3-maxminddb)
has_njs() { [ -f /usr/lib/nginx/modules/ngx_http_js_module.so ]; }
has_njs || missing+=(libnginx-mod-http-js)
has_python3_selenium() { [ -f /usr/lib/python3/dist-packages/selenium/__init__.py ]; }
has_python3_selenium || missing+=(python3-selenium)
[ ${#missing[@]} -eq 0 ] && has_locale && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-prereqs: missing ${missing[*]:-} ${test_locale}; install them (as root, with apt-get) and run again" >&2
    exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-prereqs: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\n# install-prereqs.sh: start no service while it installs packages\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [[ " ${missing[*]} " == *' prometheus '* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    fi
    for server in redis-server valkey-server; do       # the tests start their own servers
        if [[ " ${missing[*]} " == *" $server "* ]]; then
            systemctl disable --now "$server.service" >/dev/null 2>&1 || systemctl disable "$server.service" >/dev/null 2>&1 || true
        fi
    done
fi
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install-prereqs: $tool still missing" >&2; exit 1; }
done
if ! has_locale; then
    echo "install-prereqs: generating the ${test_locale} locale"
    localedef -i de_DE -f UTF-8 "$test_locale"
fi
has_locale || { echo "install-prereqs: the ${test_locale} locale is still missing" >&2; exit 1; }
has_python3_redis || { echo "install-prereqs: python3-redis still missing" >&2; exit 1; }
has_python3_maxminddb || { echo "install-prereqs: python3-maxminddb still missing" >&2; exit 1; }
has_njs || { echo "install-prereqs: libnginx-mod-http-js still missing" >&2; exit 1; }
has_python3_selenium || { echo "install-prereqs: python3-selenium still missing" >&2; exit 1; }
