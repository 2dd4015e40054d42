#!/usr/bin/env bash
# `make test`: every test, in the order that fails fastest. Run by CI through .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH" ANSIBLE_CONFIG="$root/ansible.cfg"
# Each step's wall time is printed when the next one starts, and at the end.
step_name='' step_start=$SECONDS
step_done() { [ -z "$step_name" ] || printf '=== done in %ds: %s\n' $((SECONDS - step_start)) "$step_name"; }
step() { step_done; step_name=$*; step_start=$SECONDS; printf '\n=== %s\n' "$*"; }
# ansible-test's pip chatter, left out of the log.
quiet_pip() {
    grep -v -E '^(WARNING: Location|Collecting|  Downloading|  Using cached|Requirement already|Installing collected|Successfully installed|  Attempting|    Found existing|    Uninstalling|    Successfully uninstalled| +━|Looking in (indexes|links))' || true
}
test_tree=.build/test/ansible_collections/jobboard/bot_detector
# ansible-core 2.19 runs in .venv (Python 3.11); the releases that need Python >= 3.12 (the
# Makefile's CONTAINER_CORES, e.g. 2.20.10 2.21.5) run in a Debian 13 podman image.
read -r -a container_cores <<<"${CONTAINER_CORES:-$(make -s --no-print-directory container-cores)}"
container_majors=("${container_cores[@]%.*}")
export CONTAINERS_CONF="$root/molecule/containers.conf"
# The first line of `ansible --version` (no pipe into head: under pipefail its early exit
# would fail the step).
core_version() { local v; v=$(ansible --version); echo "${v%%$'\n'*}"; }

# Jobs that wait on the network or on podman more than on the CPU run in the background
# from the start, each in its own process group with its output in a log, while the steps
# below run: `background NAME COMMAND...`, then `await NAME` prints the log (and fails the
# run when the job failed). A failing step ends the jobs still running.
declare -A job_pid job_log job_start
background() {
    local name=$1; shift
    job_log[$name]=$(mktemp) job_start[$name]=$SECONDS
    setsid "$@" >"${job_log[$name]}" 2>&1 &
    job_pid[$name]=$!
    echo "started in the background: $name (pid ${job_pid[$name]})"
}
await() {
    local name=$1
    if ! wait "${job_pid[$name]}"; then
        cat "${job_log[$name]}"; echo "$name: failed" >&2; exit 1
    fi
    cat "${job_log[$name]}"; rm -f "${job_log[$name]}"
    echo "($name: done $((SECONDS - ${job_start[$name]}))s after its start)"
    unset "job_pid[$name]"
}
stop_jobs() { local pid; for pid in "${job_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; }
trap stop_jobs EXIT

step "background jobs: molecule's host images (Debian 12, 13, 12 with systemd, 12 with nftables); ansible-core ${container_majors[*]} in a Debian 13 container"
# Images are built once, then kept in podman's store. The container tests run on a snapshot
# of the files git tracks, since the steps below rewrite the test tree. Both start before
# the venv is made: they need neither it nor each other.
container_tree=.build/test-container/ansible_collections/jobboard/bot_detector
rm -rf .build/test-container
make --no-print-directory tree TREE="$root/$container_tree" >/dev/null
background "molecule images" molecule/build-image.sh
background "ansible-core ${container_majors[*]}" tests/tools/container-tests.sh "$container_tree" "${container_cores[@]}"

step "the venv (requirements-dev.txt) and the collection's link: make setup"
make --no-print-directory setup
# Needs the venv: beside pytest, awaited after it (before the next step remakes the collection's
# link), rather than alone after the molecule lanes.
background "collection tarball" tests/tools/tarball-checks.sh

step "pytest: core units, command, Python 3.8-3.13, equivalence with the reference, module via ansible, Prometheus rules (promtool) and dashboard, the README's first steps in a fresh clone"
# tests/integration (ansible runs of minutes) first, the short unit tests last, so that no
# worker is left with a long test at the end.
pytest -n 2 -p no:cacheprovider --durations=15 tests/integration tests/equivalence tests/unit

step "collection build and install; its playbooks run by name from the installed tarball, site.yml from the checkout (background job)"
await "collection tarball"

step "changelog and docs: antsibull-changelog lint, CHANGELOG.md generated, antsibull-docs lint-collection-docs (plugins and the guides of docs/docsite)"
make --no-print-directory test-tree >/dev/null
(
    cd "$test_tree"
    antsibull-changelog lint
    antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
    generated=$(mktemp) && trap 'rm -f "$generated"' EXIT
    antsibull-changelog generate --output "$generated" --output-format md
    cmp -s "$generated" CHANGELOG.md || { echo "CHANGELOG.md is stale: run make docs" >&2; diff -u CHANGELOG.md "$generated" >&2; exit 1; }
    antsibull-docs lint-collection-docs --plugin-docs --check-extra-docs-refs .
)
echo "changelog fragments, changelog.yaml, CHANGELOG.md, the plugins' docs and the guides are clean"
# (The role READMEs against their argument specs: tests/unit/test_role_readme.py, above.)

step "molecule, second lane (background job): the systemd and follow schedulers, then fleet mode"
# Molecule waits on its hosts about a quarter of the time: two scenarios run at a time, in
# two lanes of about the same length (each scenario has its own instances and ephemeral
# directory). Started after the step above, the last to remake the collection's link.
await "molecule images"
background "molecule systemd, fleet" bash -c 'molecule test --scenario-name systemd && molecule test --scenario-name fleet'

step "ansible-test sanity on ansible-core 2.19, every test (no ignore file)"
[ ! -e tests/sanity ] || { echo "tests/sanity must not exist: no ignore files" >&2; exit 1; }
(cd "$test_tree" && ansible-test sanity --venv --python 3.11 --color no 2>&1 | quiet_pip)

step "ansible-test integration targets (tests/integration/targets) on ansible-core 2.19"
# ansible-test runs a target as a role of that name, and a collection's own role wins:
# a target named like a role would deploy the role to this machine.
for target in tests/integration/targets/*/; do
    name=$(basename "$target")
    [ ! -e "roles/$name" ] || { echo "integration target $name has a role's name: rename it" >&2; exit 1; }
done
log=$(mktemp)
if ! (cd "$test_tree" && ansible-test integration --local --python 3.11 --color no) >"$log" 2>&1; then
    cat "$log"; echo "integration targets failed on $(core_version)" >&2; exit 1
fi
printf '%s: %s\n' "$(core_version)" "$(grep -E -c '^Running .* integration test role' "$log") targets passed"
rm -f "$log"

step "ansible-lint (production profile)"
ansible-lint --nocolor

step "molecule: the role on a Debian 12 and a Debian 13 podman host (create, converge, idempotence, check, verify, destroy)"
molecule test --scenario-name default

step "molecule: nftables enforcement on a podman host with NET_ADMIN (converge, idempotence, the sets against the blocklist)"
molecule test --scenario-name enforcement

step "molecule, second lane: the systemd and follow schedulers on hosts whose init is systemd (timer, sandboxed services, a scraper blocked within seconds, a killed follower restarted, switch to cron, absent); fleet mode on three podman hosts (playbooks/fleet.yml) (background job)"
await "molecule systemd, fleet"

step "ansible-test sanity (every test) and integration targets on ansible-core ${container_majors[*]}, Debian 13 container (background job)"
await "ansible-core ${container_majors[*]}"
trap - EXIT
step_done
