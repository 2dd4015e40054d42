# jobboard.bot_detector: developer and CI entry points. See README.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
COLLECTION_ROOT := $(CURDIR)/.build/ansible_collections/jobboard/bot_detector
# ansible-test resolves symlinks in its working directory, so it gets a copy of the
# files git tracks or would track (`make test-tree`).
TEST_TREE := $(CURDIR)/.build/test/ansible_collections/jobboard/bot_detector
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)
# The pip version ansible-test 2.19 bootstraps into its venvs (ansible_test/_internal/python_requirements.py).
ANSIBLE_TEST_PIPS := 24_2
# ansible-core releases meta/runtime.yml claims (>=2.19.0): 2.19 in .venv (requirements-dev.txt,
# Python 3.11); 2.20 and 2.21 need Python >= 3.12, which Debian 12 lacks: they run in a podman
# image of Debian 13 (Python 3.13) that tests/tools/controller-image.sh builds once and caches
# (its tag hashes these pins: a new pin builds a new image).
CONTAINER_CORES := 2.20.10 2.21.5
export CONTAINER_CORES

.PHONY: help venv setup container-cores prereqs test-tree tree run bench test unit equivalence integration docs build clean

help:
	@echo "make run     run the detector on an embedded sample log, in a scratch dir (needs only python3)"
	@echo "make setup   the venv (.venv, from requirements-dev.txt), the checkout linked as"
	@echo "             .build/ansible_collections/jobboard/bot_detector; then: export PATH=\$$PWD/.venv/bin:\$$PATH"
	@echo "make test    every test (installs what it needs); CI runs it"
	@echo "make unit / equivalence / integration    the pytest parts of make test alone"
	@echo "make venv    the venv alone (make setup makes it too)"
	@echo "make prereqs the system tools the tests need, with apt: podman, runc, debootstrap, shellcheck, promtool (prometheus)"
	@echo "make test-tree  a copy of the tracked files in .build/test/..., where ansible-test runs"
	@echo "make docs    regenerate the role READMEs (from meta/argument_specs.yml) and CHANGELOG.md"
	@echo "make build   build the collection tarball"
	@echo "make bench   speed and memory against the reference pipeline, fleet mode at scale, nftables load times (docs/benchmarks.md; not in make test)"
	@echo "make clean   remove the build products (.build, scratch, tarballs, tests/output)"

$(BIN)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(BIN)/.installed

# The checkout, linked where Ansible and ansible-test look for jobboard.bot_detector.
setup: venv
	mkdir -p $(dir $(COLLECTION_ROOT))
	ln -sfn $(CURDIR) $(COLLECTION_ROOT)
	mkdir -p $(HOME)/.ansible/test/cache
	for v in $(ANSIBLE_TEST_PIPS); do cp tests/tools/get_pip_offline.py $(HOME)/.ansible/test/cache/get_pip_$$v.py; done

test-tree: setup
	$(MAKE) --no-print-directory tree TREE=$(TEST_TREE)

# A copy of the files git tracks or would track in TREE (no venv needed: make test's
# background jobs start from one before the venv is made).
tree:
	test -n "$(TREE)"
	rm -rf $(TREE) && mkdir -p $(TREE)
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $(TREE)
	# Its own repository: otherwise ansible-test asks the checkout's git, which ignores .build.
	cd $(TREE) && git init -q && git add -A

# For tests/run-all.sh run alone (make test exports CONTAINER_CORES).
container-cores:
	@echo $(CONTAINER_CORES)

prereqs:
	tests/tools/install-prereqs.sh

run:
	tests/sample/run-sample.sh $(CURDIR)/scratch

# run-all.sh makes the venv itself (make setup), after starting its background jobs.
test: prereqs
	tests/run-all.sh

unit: setup
	$(BIN)/pytest tests/unit -q

equivalence: setup
	$(BIN)/pytest tests/equivalence -q

integration: setup
	$(BIN)/pytest tests/integration -q

# The core before it was arranged by stage: the start-up figures' "before" (startup_bench.py).
STARTUP_BEFORE := f71bf7f
# Not part of `make test`: minutes, and a few GB of generated logs in .cache/bench.
# The fleet part (aggregation and playbook) needs ansible-core: the venv's interpreter.
bench: setup prereqs
	@[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
	@[ -x /usr/bin/wrk ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	$(PYTHON) tests/bench/run_bench.py
	$(PYTHON) tests/bench/precise_bench.py
	$(PYTHON) tests/bench/allow_list_bench.py
	$(PYTHON) tests/bench/churn_bench.py
	$(PYTHON) tests/bench/busy_bench.py
	$(BIN)/python tests/bench/fleet_bench.py
	$(PYTHON) tests/bench/enforce_bench.py
	$(PYTHON) tests/bench/geo_bench.py
	/usr/bin/python3 tests/bench/answers_bench.py
	/usr/bin/python3 tests/bench/follow_bench.py
	/usr/bin/python3 tests/bench/fleet_store_bench.py
	/usr/bin/python3 tests/bench/fleet_follower_bench.py
	/usr/bin/python3 tests/bench/fleet_campaign_bench.py
	$(PYTHON) tests/bench/formats_bench.py
	/usr/bin/python3 tests/bench/campaign_bench.py
	/usr/bin/python3 tests/bench/nginx_replay_bench.py
	$(PYTHON) tests/bench/startup_bench.py --before $(STARTUP_BEFORE)

# Generated documentation: the role READMEs from their argument specs, CHANGELOG.md from
# changelogs/changelog.yaml. `make test` fails when either is stale.
docs: setup
	$(BIN)/python tests/tools/render_role_readme.py
	cd $(COLLECTION_ROOT) && $(BIN)/antsibull-changelog generate

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path $(CURDIR)

clean:
	rm -rf .build scratch jobboard-bot_detector-*.tar.gz tests/output
