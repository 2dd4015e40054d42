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
# The older ansible-core releases, each in its venv (`make cores`), and the newest, in .venv.
older_cores=(.venv-core/2.16 .venv-core/2.17 .venv-core/2.18)
# The first line of `ansible --version` of a venv (no pipe into head: under pipefail its
# early exit would fail the step).
core_version() { local v; v=$("$root/$1/bin/ansible" --version); echo "${v%%$'\n'*}"; }

step "pytest: core units, command, Python 3.8-3.13, equivalence with the reference, module via ansible"
pytest -n 2 -p no:cacheprovider tests/unit tests/equivalence tests/integration

step "changelog and docs: antsibull-changelog lint, CHANGELOG.md generated, antsibull-docs lint-collection-docs"
make --no-print-directory test-tree >/dev/null
(
    cd "$test_tree"
    antsibull-changelog lint
    antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
    generated=$(mktemp) && trap 'rm -f "$generated"' EXIT
    antsibull-changelog generate --output "$generated" --output-format md
    cmp -s "$generated" CHANGELOG.md || { echo "CHANGELOG.md is stale: run make docs" >&2; diff -u CHANGELOG.md "$generated" >&2; exit 1; }
    antsibull-docs lint-collection-docs --plugin-docs .
)
echo "changelog fragments, changelog.yaml, CHANGELOG.md and the plugins' docs are clean"
# (The role READMEs against their argument specs: tests/unit/test_role_readme.py, above.)

step "ansible-test sanity on ansible-core 2.19, every test (no ignore file)"
[ ! -e tests/sanity ] || { echo "tests/sanity must not exist: no ignore files" >&2; exit 1; }
(cd "$test_tree" && ansible-test sanity --venv --python 3.11 --color no 2>&1 | quiet_pip)

# Older releases: the tests whose results depend on the ansible-core version (the module
# and plugin docs and argument specs, imports, compilation, meta/runtime.yml, YAML);
# the style tests (pylint, pep8, shellcheck, ...) judge the same files the same way.
step "ansible-test sanity on ansible-core 2.16, 2.17, 2.18: ansible-doc, compile, import, runtime-metadata, validate-modules, yamllint"
for venv in "${older_cores[@]}"; do
    echo "--- $(core_version "$venv")"
    (cd "$test_tree" && "$root/$venv/bin/ansible-test" sanity --venv --python 3.11 --color no \
        --test ansible-doc --test compile --test import --test runtime-metadata --test validate-modules --test yamllint 2>&1 | quiet_pip)
done

step "ansible-test integration targets (tests/integration/targets) on ansible-core 2.16, 2.17, 2.18, 2.19"
# ansible-test runs a target as a role of that name, and a collection's own role wins:
# a target named like a role would deploy the role to this machine.
for target in tests/integration/targets/*/; do
    name=$(basename "$target")
    [ ! -e "roles/$name" ] || { echo "integration target $name has a role's name: rename it" >&2; exit 1; }
done
for venv in "${older_cores[@]}" .venv; do
    version=$(core_version "$venv")
    log=$(mktemp)
    if ! (cd "$test_tree" && "$root/$venv/bin/ansible-test" integration --local --python 3.11 --color no) >"$log" 2>&1; then
        cat "$log"; echo "integration targets failed on $version" >&2; exit 1
    fi
    printf '%s: %s\n' "$version" "$(grep -E -c '^Running .* integration test role' "$log") targets passed"
    rm -f "$log"
done

step "ansible-lint (production profile)"
ansible-lint --nocolor

step "molecule: the role on two podman hosts (create, converge, idempotence, check, verify, destroy)"
export CONTAINERS_CONF="$root/molecule/containers.conf"
molecule/build-image.sh
molecule test --scenario-name default

step "molecule: fleet mode on three podman hosts (playbooks/fleet.yml)"
molecule test --scenario-name fleet

step "molecule: nftables enforcement on a podman host with NET_ADMIN (converge, idempotence, the sets against the blocklist)"
molecule/build-image.sh localhost/bot-detector-debian12-nftables:latest nftables
molecule test --scenario-name enforcement

step "collection build and install; its playbooks run by name from the installed tarball, site.yml from the checkout"
tmp=$(mktemp -d)
trap 'step_done; rm -rf "$tmp"' EXIT
ansible-galaxy collection build --output-path "$tmp" >/dev/null
tarball=$(echo "$tmp"/jobboard-bot_detector-*.tar.gz)
contents=$(tar tzf "$tarball")
for shipped in LICENSE CHANGELOG.md changelogs/changelog.yaml meta/execution-environment.yml meta/runtime.yml \
        roles/bot_detector/README.md playbooks/site.yml playbooks/fleet.yml playbooks/unblock.yml; do
    grep -qx "$shipped" <<<"$contents" || { echo "the tarball lacks $shipped" >&2; exit 1; }
done
# The checkout's ansible.cfg (collections path, inventory, test conveniences) is not for users.
! grep -q -E '(^|/)ansible\.cfg$' <<<"$contents" || { echo "the tarball ships an ansible.cfg" >&2; exit 1; }
echo "tarball: LICENSE, changelog, EE metadata, role README and playbooks shipped; no ansible.cfg"

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
