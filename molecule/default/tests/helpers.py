"""Helpers of the verifier: files in and out of the containers, the container clock,
and ansible runs against molecule's inventory."""
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests'))
import loggen  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

CORE = os.path.join(ROOT, 'plugins', 'module_utils', 'bot_detector')   # the core package
PREPARED_BLOCKLIST = b'192.0.2.50\n192.0.2.51'


def name_of(host):
    return host.backend.name


def put(host, path, data):
    """Write ``data`` to ``path`` in the container."""
    subprocess.run(['podman', 'exec', '-i', name_of(host), 'sh', '-c', 'mkdir -p "$(dirname "$1")" && cat > "$1"', 'sh', path],
                   input=data, check=True)


def get(host, path):
    return subprocess.run(['podman', 'exec', name_of(host), 'cat', path], stdout=subprocess.PIPE, check=True).stdout


def container_now(host):
    """The container's clock, away from an hour boundary so a run stays in its hour."""
    while True:
        now = int(host.check_output('date +%s'))
        if 30 < now % 3600 < 3570:
            return now
        time.sleep(31)


def ansible_run(args, callback='json'):
    """ansible or ansible-playbook against molecule's inventory, from the checkout."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK=callback,
               ANSIBLE_LOAD_CALLBACK_PLUGINS='1', ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    return subprocess.run(args + ['-i', os.environ['MOLECULE_INVENTORY_FILE']], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd=ROOT, check=False)
