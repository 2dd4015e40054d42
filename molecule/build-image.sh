#!/usr/bin/env bash
# Builds the molecule hosts' image, a minbase Debian 12 with python3 and cron (and the
# packages named by the second argument, comma-separated: the enforcement scenario's
# nftables, as its hosts have no network to install it), from the
# Debian mirror this machine's apt uses (there is no container registry here), and
# imports it into podman. Podman's image store is the cache: an existing image is kept.
set -euo pipefail
image=${1:-localhost/bot-detector-debian12:latest}
extra=${2:+,$2}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$(cd "$(dirname "$0")" && pwd)/containers.conf}
if podman image exists "$image"; then
    exit 0
fi
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
fi
[ -n "$mirror" ] || { echo "build-image: no Debian mirror found in /etc/apt" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "build-image: debootstrap bookworm (minbase, python3, cron${extra}) into $root"
debootstrap --variant=minbase --include="python3,cron,logrotate${extra}" bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | podman import --change 'CMD ["/bin/sleep", "infinity"]' - "$image" >/dev/null
echo "build-image: $image"
