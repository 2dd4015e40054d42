#!/usr/bin/env bash
# controller-image.sh TEST_TREE CORE...: prints the name of the podman image that runs
# ansible-test for the ansible-core releases CORE... (e.g. 2.20.10 2.21.5), which need
# Python >= 3.12: Debian 13 (trixie, Python 3.13) has it, Debian 12 does not. Builds the
# image first when podman's store lacks it; its tag is a hash of this script, the pip
# stand-in and the releases, so a new pin builds a new image.
#
# The image: a Debian 13 root from molecule/build-image.sh (python3-venv, git, shellcheck,
# openssh-client: ansible-test integration makes an SSH key),
# one venv per release in /opt/ansible-core-<major.minor>, and ansible-test's sanity venvs
# already made in /root/.ansible/test/venv (`ansible-test sanity --prime-venvs` on
# TEST_TREE, a copy of the collection): the tests then run in it with no network.
# The build itself installs from the package index with this machine's pip configuration
# (its files and PIP_* variables), in a container on the host's network.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
test_tree=$(cd "${1:?usage: controller-image.sh TEST_TREE CORE...}" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: controller-image.sh TEST_TREE CORE..." >&2; exit 1; }
cores=("$@")
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/molecule/containers.conf}
tag=$(cat "$0" "$here/get_pip_offline.py" "$repo/molecule/build-image.sh" <(echo "${cores[*]}") | sha256sum | cut -c1-12)
image=localhost/bot-detector-controller-trixie:$tag
if podman image exists "$image"; then
    echo "$image"
    exit 0
fi
base=localhost/bot-detector-controller-base:$tag
container=bot-detector-controller-build-$$
trap 'podman rm -f "$container" >/dev/null 2>&1 || true; podman rmi "$base" >/dev/null 2>&1 || true' EXIT
"$repo/molecule/build-image.sh" trixie "$base" python3-venv,git,shellcheck,ca-certificates,openssh-client >&2

# This machine's pip configuration, mounted where pip looks for it.
mounts=()
for conf in /etc/pip.conf /etc/xdg/pip "$HOME/.config/pip"; do
    [ ! -e "$conf" ] || mounts+=(-v "$conf:${conf/#$HOME//root}:ro")
done
[ ! -e /etc/ssl/certs/ca-certificates.crt ] || mounts+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
pip_env=()
while IFS='=' read -r name _; do
    pip_env+=(--env "$name")
done < <(env | grep -E '^PIP_[A-Z_]+=' || true)

echo "controller-image: ansible-core ${cores[*]} and ansible-test's sanity venvs in $image" >&2
podman run --name "$container" --network host --env LANG=C.UTF-8 "${pip_env[@]}" "${mounts[@]}" \
    -v "$here/get_pip_offline.py:/tmp/get_pip_offline.py:ro" -v "$test_tree:/tmp/tree:ro" \
    "$base" /bin/bash -euo pipefail -c '
        prime=/root/prime/ansible_collections/jobboard/bot_detector
        mkdir -p "$prime" && cp -a /tmp/tree/. "$prime" && cd "$prime"
        mkdir -p /root/.ansible/test/cache
        for core in "$@"; do
            venv=/opt/ansible-core-${core%.*}
            python3 -m venv "$venv"
            # (pip warns of each configured package location missing in here: left out.)
            "$venv/bin/pip" install --quiet "ansible-core==$core" 2>&1 | { grep -v "^WARNING: Location .* is ignored" || true; }
            # The pip version ansible-test bootstraps into its venvs, from a host it cannot reach
            # here: the stand-in takes its place.
            requirements=$("$venv/bin/python" -c "import ansible_test._internal.python_requirements as r; print(r.__file__)")
            pip_version=$(sed -n -E "s/^ *pip=.([0-9.]+).,?$/\1/p" "$requirements" | head -n 1)
            [ -n "$pip_version" ] || { echo "no pip version in $requirements" >&2; exit 1; }
            cp /tmp/get_pip_offline.py "/root/.ansible/test/cache/get_pip_${pip_version//./_}.py"
            PATH=$venv/bin:$PATH "$venv/bin/ansible-test" sanity --prime-venvs --python 3.13 --color no >/tmp/prime.log 2>&1 \
                || { tail -40 /tmp/prime.log >&2; exit 1; }
            echo "ansible-core $core: $("$venv/bin/ansible" --version | head -n 1), ansible-test bootstraps pip $pip_version"
        done
        rm -rf /root/prime /root/.cache/pip /tmp/prime.log
    ' prime "${cores[@]}" >&2
podman commit --quiet --change 'CMD ["/bin/sleep", "infinity"]' --change 'ENV LANG=C.UTF-8' "$container" "$image" >/dev/null
echo "$image"
