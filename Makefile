# Two commands work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench proto clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files re-install when pyproject.toml changes.
$(VENV)/.installed-aggregator: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[aggregator]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-aggregator

demo: $(VENV)/.installed-aggregator
	$(BIN)/deniable-aggregator simulate --participants 10000 --p 0.3 --alpha 0.5

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/perturb_throughput.py
	$(BIN)/python bench/mechanism_throughput.py
	$(BIN)/python bench/ingest_throughput.py

# Regenerate the committed wire code (tests/test_proto_drift.py fails when it is stale).
proto: $(VENV)/.installed-dev
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m grpc_tools.protoc -Ishared=proto \
		--python_out=. --grpc_python_out=. --mypy_out=. --mypy_grpc_out=. \
		proto/deniable/v1/*.proto

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
