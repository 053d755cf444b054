# Every target does its own set-up from nothing: a fresh clone needs only
# python3 (3.11+), node and npm on PATH.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: install postgres test lint bench fuzz demo clean

install: $(STAMP) $(NODE_STAMP)

$(STAMP): pyproject.toml lib/_speedups.c lib/_cells.c lib/_claude_rows.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

# The PostgreSQL store's tests (and its bench section) start a throwaway server from the
# system's PostgreSQL programs: install them where they are missing and we may.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; \
	  else echo "PostgreSQL not found: apt-get install postgresql to run its store's tests" >&2; fi; }

# Two workers: most tests wait on real provider processes and disk, not on the CPU.
# A file's tests stay on one worker, so its module fixtures are built once.
test: install postgres
	$(PY) -m pytest -q -n 2 --dist loadfile

lint: install
	$(VENV)/bin/ruff check cli lib tests

bench: install postgres
	$(PY) -m tests.bench.run

# The record fuzzer of `make test`, with many more cases.
fuzz: install
	AGENTCTL_FUZZ_EXAMPLES=3000 $(PY) -m pytest -q tests/pipeline/test_record_fuzz.py

demo: install
	$(PY) -m tests.support.demo

clean:
	rm -rf $(VENV) node_modules .pytest_cache
