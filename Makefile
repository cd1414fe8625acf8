# Each target sets itself up: a fresh clone needs only Python 3.11+ and make.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench postgres system-deps clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e '.[dev,worker,server]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/thinkgraph demo

test: $(STAMP) lint typecheck postgres system-deps unit

lint: $(STAMP)
	$(VENV)/bin/ruff check thinkgraph tests bench $(wildcard examples)
	$(VENV)/bin/ruff format --check thinkgraph tests bench $(wildcard examples)
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# PostgreSQL-backed tests need the local server; start it when it is down.
postgres:
	@scripts/ensure-postgres

# Graphviz and Chromium for the diagram and browser tests; installed when root with apt.
system-deps:
	@scripts/ensure-system-deps

unit: $(STAMP)
	$(VENV)/bin/pytest -q -n auto --dist worksteal

bench: $(STAMP) postgres system-deps
	$(PY) -m bench
	$(PY) -m bench.replay_run
	$(PY) -m bench.fleet
	$(PY) -m bench.studio_page

clean:
	rm -rf $(VENV) .thinkgraph .mypy_cache .ruff_cache .pytest_cache
