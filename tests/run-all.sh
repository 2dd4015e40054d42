#!/usr/bin/env bash
# `make test`: every test, in the order that fails fastest. Run by CI through .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH" ANSIBLE_CONFIG="$root/ansible.cfg"
step() { printf '\n=== %s\n' "$*"; }

step "pytest: core units, command, Python 3.8-3.13, equivalence with the reference, module via ansible"
pytest -n 2 -p no:cacheprovider tests/unit tests/equivalence tests/integration

step "ansible-test sanity (no ignore file)"
[ ! -e tests/sanity ] || { echo "tests/sanity must not exist: no ignore files" >&2; exit 1; }
make --no-print-directory test-tree >/dev/null
(cd .build/test/ansible_collections/jobboard/bot_detector && ansible-test sanity --venv --python 3.11 --color no 2>&1 \
    | grep -v -E '^(WARNING: Location|Collecting|  Downloading|  Using cached|Requirement already|Installing collected|Successfully installed|  Attempting|    Found existing|    Uninstalling|    Successfully uninstalled| +━)')

step "ansible-lint (production profile)"
ansible-lint --nocolor

step "molecule: the role on two podman hosts (create, converge, idempotence, check, verify, destroy)"
export CONTAINERS_CONF="$root/molecule/containers.conf"
molecule/build-image.sh
molecule test --scenario-name default

step "molecule: fleet mode on three podman hosts (playbooks/fleet.yml)"
molecule test --scenario-name fleet

step "collection build and install"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ansible-galaxy collection build --output-path "$tmp" >/dev/null
# Outside the checkout and without its ansible.cfg, as a user would install it.
(
    cd "$tmp" && unset ANSIBLE_CONFIG
    ansible-galaxy collection install --force -p "$tmp/installed" "$tmp"/jobboard-bot_detector-*.tar.gz >/dev/null
    export ANSIBLE_COLLECTIONS_PATH="$tmp/installed"
    # Captured first: grep -q closing the pipe early would fail the step under pipefail.
    module_doc=$(ansible-doc jobboard.bot_detector.bot_detector)
    role_doc=$(ansible-doc -t role jobboard.bot_detector.bot_detector)
    grep -q 'Counts requests to job-listing pages' <<<"$module_doc"
    grep -q 'bot_detector_logs' <<<"$role_doc"
    echo "installed tarball: ansible-doc renders the module and the role"
)
