#!/usr/bin/env bash
# container-tests.sh TEST_TREE CORE...: on each ansible-core release CORE (e.g. 2.20.10) of
# the controller image (tests/tools/controller-image.sh builds it when podman's store lacks
# it), ansible-test sanity (every test, no ignore file) and the integration targets, each
# release in a container without network, on its own copy of TEST_TREE (ansible-test writes
# tests/output in it). Prints one summary line per release; on a failure, the failing run's
# output.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
test_tree=$(cd "${1:?usage: container-tests.sh TEST_TREE CORE...}" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: container-tests.sh TEST_TREE CORE..." >&2; exit 1; }
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/molecule/containers.conf}
start=$SECONDS
image=$("$repo/tests/tools/controller-image.sh" "$test_tree" "$@")
echo "controller image $image ready after $((SECONDS - start))s"
scratch=$(mktemp -d)
container=''
trap '[ -z "$container" ] || podman rm -f "$container" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
for release in "$@"; do
    core=${release%.*}
    copy=$scratch/$core/ansible_collections/jobboard/bot_detector
    mkdir -p "$copy" && cp -a "$test_tree/." "$copy"
    container=bot-detector-ansible-test-$core-$$
    log=$scratch/$core.log
    # runc and the ulimits of molecule/containers.conf (CONTAINERS_CONF); no network: the
    # image holds ansible-test's venvs already.
    if ! podman run --rm --name "$container" --network none -v "$scratch/$core:/root/src" \
            -w /root/src/ansible_collections/jobboard/bot_detector \
            --env PATH="/opt/ansible-core-$core/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
            "$image" /bin/bash -euo pipefail -c '
                [ ! -e tests/sanity ] || { echo "tests/sanity must not exist: no ignore files" >&2; exit 1; }
                ansible --version | head -n 1
                ansible-test sanity --python 3.13 --color no
                ansible-test integration --local --python 3.13 --color no
            ' >"$log" 2>&1; then
        cat "$log"
        echo "ansible-test on ansible-core $core (container $image) failed" >&2
        exit 1
    fi
    container=''
    printf '%s (Python 3.13, Debian 13 container): sanity passed (%s tests), %s integration targets passed\n' \
        "$(head -n 1 "$log")" "$(grep -c -E '^Running sanity test' "$log")" "$(grep -c -E '^Running .* integration test role' "$log")"
done
echo "done after $((SECONDS - start))s"
