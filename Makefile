PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What serving needs (the package and its dependencies), and on top of it what the tests,
# the linters and the benchmarks need (the dev extras): `make run` installs only the first.
SERVE_STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev
# `make run HOST=0.0.0.0 PORT=9000` (given on the command line; the environment's HOST is
# ignored); in development the service's links follow them.
HOST := 127.0.0.1
PORT := 8080

.PHONY: run test lint docs client-models bench soak clean

# The server depends on the standalone client (clients/python), which no package index
# carries: it is installed from the checkout first, so `-e .` finds it already there.
$(SERVE_STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ./clients/python
	$(BIN)/pip install --quiet -e .
	touch $(SERVE_STAMP)

$(DEV_STAMP): $(SERVE_STAMP)
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(DEV_STAMP)

run: $(SERVE_STAMP)
	$(BIN)/agent-broker serve --host $(HOST) --port $(PORT)

# Two workers (pytest-xdist) share the suite, one that runs out taking tests from the other;
# then the tests that time themselves against the whole machine run alone.
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not serial"
	$(BIN)/python -m pytest -m serial

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Rewrite the documents' generated tables (settings, reasons) from the code.
docs: $(DEV_STAMP)
	$(BIN)/python -m tools.docs_tables

# Regenerate the standalone client's models (clients/python) from the service's /openapi.json.
client-models: $(DEV_STAMP)
	$(BIN)/python clients/python/generate.py

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.run

soak: $(DEV_STAMP)
	$(BIN)/python -m bench.soak --seconds 120 --clients 64 --workers 2 --kill-every 5

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
