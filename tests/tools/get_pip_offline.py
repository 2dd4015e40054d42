"""Stand-in for the get-pip.py that ansible-test downloads from a host this
network cannot reach. ansible-test runs it (as GET_PIP) in a fresh virtualenv
with get-pip's arguments, e.g. `--disable-pip-version-check pip==24.2
--no-setuptools --no-wheel`: bootstrap pip from the interpreter's ensurepip,
then let that pip install the requested packages from the package index.
`make setup` copies it to ~/.ansible/test/cache/get_pip_<version>.py.
"""
import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
    # A child process: ensurepip.bootstrap() in this one would set PIP_CONFIG_FILE=/dev/null
    # for the pip run below, hiding the machine's pip configuration.
    subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)


if __name__ == '__main__':
    main()
