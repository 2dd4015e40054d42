#!/usr/bin/env bash
# Installs the system tools the tests need, with apt, when they are missing:
# podman + runc (molecule hosts), debootstrap (their image), shellcheck (ansible-test
# sanity). Anything still missing afterwards is an error, never a skipped test.
set -euo pipefail
declare -A package_of=([podman]=podman [runc]=runc [debootstrap]=debootstrap [shellcheck]=shellcheck)
missing=()
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("${package_of[$tool]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-prereqs: missing ${missing[*]}; install them (as root, with apt-get) and run again" >&2
    exit 1
fi
echo "install-prereqs: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install-prereqs: $tool still missing" >&2; exit 1; }
done
