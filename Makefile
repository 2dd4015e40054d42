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
# The pip version ansible-test bootstraps into its venvs (ansible_test/_internal/python_requirements.py).
ANSIBLE_TEST_PIP := 24_2

.PHONY: help venv setup prereqs test-tree run bench test unit equivalence integration pythons sanity lint build clean

help:
	@echo "make run     run the detector on an embedded sample log, in a scratch dir"
	@echo "make test    every test (installs what it needs)"
	@echo "make bench   speed and memory against the reference pipeline (docs/benchmarks.md)"
	@echo "make build   build the collection tarball"

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
	cp tests/tools/get_pip_offline.py $(HOME)/.ansible/test/cache/get_pip_$(ANSIBLE_TEST_PIP).py

test-tree: setup
	rm -rf $(TEST_TREE) && mkdir -p $(TEST_TREE)
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $(TEST_TREE)
	# Its own repository: otherwise ansible-test asks the checkout's git, which ignores .build.
	cd $(TEST_TREE) && git init -q && git add -A

prereqs:
	tests/tools/install-prereqs.sh

run:
	tests/sample/run-sample.sh $(CURDIR)/scratch

test: setup prereqs
	tests/run-all.sh

unit: setup
	$(BIN)/pytest tests/unit -q

equivalence: setup
	$(BIN)/pytest tests/equivalence -q

integration: setup
	$(BIN)/pytest tests/integration -q

# Not part of `make test`: minutes, and a few GB of generated logs in .cache/bench.
bench:
	@[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
	$(PYTHON) tests/bench/run_bench.py

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path $(CURDIR)

clean:
	rm -rf .build scratch jobboard-bot_detector-*.tar.gz tests/output
