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

step "pytest: core units, command, Python 3.8-3.13, equivalence with the reference, module via ansible, Prometheus rules (promtool) and dashboard, the README's first steps in a fresh clone"
pytest -n 2 -p no:cacheprovider --durations=15 tests/unit tests/equivalence tests/integration

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

step "collection build and install; its playbooks run by name from the installed tarball, site.yml from the checkout"
tmp=$(mktemp -d)
trap 'step_done; rm -rf "$tmp"' EXIT
ansible-galaxy collection build --output-path "$tmp" >/dev/null
tarball=$(echo "$tmp"/jobboard-bot_detector-*.tar.gz)
contents=$(tar tzf "$tarball")
for shipped in LICENSE CHANGELOG.md changelogs/changelog.yaml meta/execution-environment.yml meta/runtime.yml \
        roles/bot_detector/README.md playbooks/site.yml playbooks/fleet.yml playbooks/unblock.yml playbooks/fleet_store.yml roles/fleet_store/README.md \
        roles/bot_detector/files/prometheus/bot_detector.rules.yml roles/bot_detector/files/prometheus/bot_detector.dashboard.json \
        docs/docsite/extra-docs.yml docs/docsite/rst/guide_monitoring.rst; do
    grep -qx "$shipped" <<<"$contents" || { echo "the tarball lacks $shipped" >&2; exit 1; }
done
# The checkout's ansible.cfg (collections path, inventory, test conveniences) is not for
# users, nor are the developers' files galaxy.yml's build_ignore names.
! grep -q -E '(^|/)ansible\.cfg$' <<<"$contents" || { echo "the tarball ships an ansible.cfg" >&2; exit 1; }
for unneeded in .ansible-lint docs/benchmarks.md.in; do
    ! grep -qx "$unneeded" <<<"$contents" || { echo "the tarball ships $unneeded" >&2; exit 1; }
done
echo "tarball: LICENSE, changelog, EE metadata, role README, playbooks, Prometheus rules and dashboard, guides shipped; no ansible.cfg, .ansible-lint, docs/benchmarks.md.in"

# Two scratch web hosts on this machine (local connection), each with its own files in $tmp.
mkdir "$tmp/web-a" "$tmp/web-b"
cat >"$tmp/inventory.yml" <<INVENTORY
all:
  children:
    web:
      vars:
        ansible_connection: local
        ansible_python_interpreter: /usr/bin/python3
        ansible_become: false           # root already
        bot_detector_logs: ["$tmp/{{ inventory_hostname }}/access.log"]
        bot_detector_blocklist: "$tmp/{{ inventory_hostname }}/ipblocklist.txt"
        bot_detector_exclusions_file: "$tmp/{{ inventory_hostname }}/ipexcludedlist.txt"
        bot_detector_activity_log: "$tmp/{{ inventory_hostname }}/bot-detector.log"
        bot_detector_config_file: "$tmp/{{ inventory_hostname }}/bot-detector.conf"
        bot_detector_cron_output: "$tmp/{{ inventory_hostname }}/cron.log"
        bot_detector_lib_dir: "$tmp/{{ inventory_hostname }}/lib"
        bot_detector_command: "$tmp/{{ inventory_hostname }}/bot-detector.sh"
        bot_detector_exclusions: [198.51.100.23]
        bot_detector_server_ips: [10.255.255.1]
      hosts:
        web-a:
        web-b:
INVENTORY
# A scraper with 600 requests on each host, stamped now: 1200 across the fleet.
stamp=$(LC_ALL=C date '+%d/%b/%Y:%H:%M:%S %z')
for host in web-a web-b; do
    for _ in $(seq 600); do
        printf '192.0.2.200 - - [%s] "GET /jobs/1 HTTP/1.1" 200 512 "-" "curl/8.4.0"\n' "$stamp"
    done >"$tmp/$host/access.log"
done
# expect REGEX TEXT: TEXT has a line matching REGEX, or say which and show TEXT's end.
expect() {
    grep -q -E -e "$1" <<<"$2" || { printf '%s\n' "$2" | tail -30 >&2; echo "expected a line matching: $1" >&2; return 1; }
}
# Check mode plans the role's files on both hosts and writes nothing. $1: the run's output.
deployment_planned() {
    expect 'web-a +: ok=[0-9]+ +changed=[1-9][0-9]* +unreachable=0 +failed=0' "$1"
    expect 'web-b +: ok=[0-9]+ +changed=[1-9][0-9]* +unreachable=0 +failed=0' "$1"
    expect "root mkdir -p -m 0700 /run/bot-detector && flock -n /run/bot-detector/cron-[0-9a-f]+\.lock $tmp/web-a/bot-detector\.sh $tmp/web-a/access\.log >> $tmp/web-a/cron\.log 2>&1" "$1"
    expect "^\+blocklist = $tmp/web-a/ipblocklist\.txt$" "$1"
    expect '^\+198\.51\.100\.23$' "$1"
    for host in web-a web-b; do
        [ "$(ls "$tmp/$host")" = access.log ] || { echo "check mode wrote in $tmp/$host: $(ls "$tmp/$host")" >&2; return 1; }
    done
}
cron_before=$(ls /etc/cron.d)
# Outside the checkout and without its ansible.cfg, as a user would install it.
(
    cd "$tmp" && unset ANSIBLE_CONFIG
    ansible-galaxy collection install --force -p "$tmp/installed" "$tarball" >/dev/null
    # The guide's other way (guide_role.rst): a requirements.yml that names the tarball.
    printf 'collections:\n  - name: %s\n    type: file\n' "$tarball" >"$tmp/requirements.yml"
    ansible-galaxy collection install --force -p "$tmp/installed-req" -r "$tmp/requirements.yml" >/dev/null
    [ -f "$tmp/installed-req/ansible_collections/jobboard/bot_detector/MANIFEST.json" ] ||
        { echo "requirements.yml: the collection was not installed" >&2; exit 1; }
    export ANSIBLE_COLLECTIONS_PATH="$tmp/installed"
    # Captured first: grep -q closing the pipe early would fail the step under pipefail.
    module_doc=$(ansible-doc jobboard.bot_detector.bot_detector)
    role_doc=$(ansible-doc -t role jobboard.bot_detector.bot_detector)
    grep -q 'Counts requests to job-listing pages' <<<"$module_doc"
    grep -q 'bot_detector_logs' <<<"$role_doc"
    echo "installed tarball: ansible-doc renders the module and the role"

    deployment_planned "$(ansible-playbook -i inventory.yml jobboard.bot_detector.site --check --diff)"
    echo "installed tarball: ansible-playbook jobboard.bot_detector.site --check --diff plans the deployment, writes nothing"

    # The fleet playbook reads each host's config file, which the check run above did not
    # write: write what the role would (it also writes /etc/cron.d, which this step keeps out of).
    for host in web-a web-b; do
        printf '[bot_detector]\nblocklist = %s\nexclusions_file = %s\nactivity_log = %s\nserver_ips =\n    10.255.255.1\n' \
            "$tmp/$host/ipblocklist.txt" "$tmp/$host/ipexcludedlist.txt" "$tmp/$host/bot-detector.log" >"$tmp/$host/bot-detector.conf"
    done
    fleet=$(ansible-playbook -i inventory.yml jobboard.bot_detector.fleet)
    expect 'web-a +: ok=[0-9]+ +changed=1 +unreachable=0 +failed=0' "$fleet"
    for host in web-a web-b; do
        [ "$(cat "$tmp/$host/ipblocklist.txt")" = 192.0.2.200 ] || { echo "fleet: $host's blocklist holds: $(cat "$tmp/$host/ipblocklist.txt")" >&2; exit 1; }
        grep -q ' | IP addess 192.0.2.200 added to the block list, RPH=1200 (fleet)$' "$tmp/$host/bot-detector.log"
    done
    echo "installed tarball: ansible-playbook jobboard.bot_detector.fleet blocked the fleet's scraper (600 + 600 requests) on both hosts"

    unblock=$(ansible-playbook -i inventory.yml jobboard.bot_detector.unblock -e '{"bot_detector_unblock": ["192.0.2.200"]}')
    expect 'web-b +: ok=[0-9]+ +changed=1 +unreachable=0 +failed=0' "$unblock"
    for host in web-a web-b; do
        [ ! -s "$tmp/$host/ipblocklist.txt" ] || { echo "unblock: $host's blocklist holds: $(cat "$tmp/$host/ipblocklist.txt")" >&2; exit 1; }
        grep -q ' | IP addess 192.0.2.200 removed from the block list (unblock)$' "$tmp/$host/bot-detector.log"
    done
    echo "installed tarball: ansible-playbook jobboard.bot_detector.unblock took it off both hosts' blocklists"
)
rm -f "$tmp"/web-?/ipblocklist.txt "$tmp"/web-?/bot-detector.log "$tmp"/web-?/bot-detector.conf
# The checkout's documented entry point imports the same play.
deployment_planned "$(ansible-playbook -i "$tmp/inventory.yml" site.yml --check --diff)"
echo "checkout: ansible-playbook site.yml --check --diff plans the same deployment"
[ "$(ls /etc/cron.d)" = "$cron_before" ] || { echo "check mode changed /etc/cron.d" >&2; exit 1; }
