PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint docs bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/agent-broker serve --host 127.0.0.1 --port 8080

# Two workers (pytest-xdist) share the suite, one that runs out taking tests from the other;
# then the tests that time themselves against the whole machine run alone.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not serial"
	$(BIN)/python -m pytest -m serial

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Rewrite the documents' generated tables (settings, reasons) from the code.
docs: $(STAMP)
	$(BIN)/python -m tools.docs_tables

bench: $(STAMP)
	$(BIN)/python -m bench.run

soak: $(STAMP)
	$(BIN)/python -m bench.soak --seconds 120 --clients 64 --workers 2 --kill-every 5

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
