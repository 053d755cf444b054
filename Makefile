# Every target does its own set-up from nothing: a fresh clone needs only
# python3 (3.11+), node and npm on PATH.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: install test lint bench demo clean

install: $(STAMP) $(NODE_STAMP)

$(STAMP): pyproject.toml lib/_speedups.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

test: install
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check cli lib tests

bench: install
	$(PY) -m tests.bench.run

demo: install
	$(PY) -m tests.support.demo

clean:
	rm -rf $(VENV) node_modules .pytest_cache
