#!/usr/bin/env bash
# make test's check of the collection as users get it: built and installed from its tarball
# (what it ships and what it leaves out), its playbooks run by name from there on two scratch
# web hosts of this machine (local connection, files in a temporary directory), and site.yml
# from the checkout. Run by tests/run-all.sh in the background, from the checkout, with the
# venv on PATH and the checkout's ansible.cfg.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
