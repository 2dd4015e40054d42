#!/usr/bin/env bash
# build-image.sh SUITE [IMAGE [PACKAGES]]: builds a minbase Debian image of SUITE (bookworm,
# trixie) with python3, cron and logrotate, plus PACKAGES (comma-separated, installed with
# cron and logrotate), from the Debian
# mirror this machine's apt uses (there is no container registry here), and imports it into
# podman as IMAGE (default: localhost/bot-detector-debian<release>:latest, the molecule
# hosts'). Podman's image store is the cache: an existing image is kept.
# Without arguments: every image the scenarios run (molecule/*/molecule.yml): Debian 12 and
# 13, and Debian 12 with systemd as init (molecule/systemd) or with nftables
# (molecule/enforcement), and molecule/fleet's: Debian 12 web hosts with python3-redis and
# a Debian 13 store host with valkey-server (the hosts have no network: what the roles
# install must be there).
set -euo pipefail
if [ $# -eq 0 ]; then
    "$0" bookworm && "$0" trixie &&
        "$0" bookworm localhost/bot-detector-debian12-systemd:latest systemd,systemd-sysv &&
        "$0" bookworm localhost/bot-detector-debian12-nftables:latest nftables &&
        "$0" bookworm localhost/bot-detector-debian12-fleet:latest python3-redis &&
        exec "$0" trixie localhost/bot-detector-debian13-store:latest valkey-server
fi
suite=$1
case $suite in
    bookworm) release=12 ;;
    trixie) release=13 ;;
    *) echo "build-image: unknown Debian suite $suite (bookworm or trixie)" >&2; exit 1 ;;
esac
image=${2:-localhost/bot-detector-debian$release:latest}
packages=python3
IFS=, read -r -a extra <<<"${3:-}"
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
trap 'rm -rf "$root" "$root.log"' EXIT
echo "build-image: debootstrap $suite (minbase, $packages; then cron, logrotate ${extra[*]}) into $root"
# cron and logrotate afterwards, with the root's apt: debootstrap 1.0.128 (Debian 12) cannot
# install trixie's cron with --include (its systemd pre-depends on a library unpacked in the
# same dpkg call); the extra packages with them, for the same reason. No service starts in
# the chroot (policy-rc.d; valkey-server's would).
{
    debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" &&
        printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 0755 "$root/usr/sbin/policy-rc.d" &&
        chroot "$root" apt-get update &&
        DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y --no-install-recommends cron logrotate "${extra[@]}" &&
        rm "$root/usr/sbin/policy-rc.d"
} >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | podman import --quiet --change 'CMD ["/bin/sleep", "infinity"]' - "$image" >/dev/null
echo "build-image: $image"
