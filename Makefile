# Two commands work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench proto web clean

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

# Every test runs, on every core (pytest-xdist; an idle worker steals queued tests, so one
# slow file does not leave the other core idle at the end), with two workers more than the
# cores: many tests wait on a daemon, a browser or a command they started, and the extra
# workers fill that time (on 2 cores, 4 workers took 4:16 and 4:19 where 3 took 4:32 and
# 4:43, back to back). JOBS=0 runs them in this process.
# Bytecode is cached even where the environment turns it off (PYTHONDONTWRITEBYTECODE): the
# workers and the daemons and commands the tests start then compile each module, and
# rewrite each test's asserts, once per run instead of once per process.
JOBS ?= $(shell echo $$(( $$(nproc) + 2 )))
test: $(VENV)/.installed-dev
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(JOBS) --dist worksteal --durations=15

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p build/typecheck/deniable
	for package in client aggregator shared; do \
		ln -sfn ../../../$$package build/typecheck/deniable/$$package; done
	$(BIN)/mypy
	@# client/web's TypeScript, type-checked strictly (tsc), where Node.js is (CI installs it).
	@if command -v node >/dev/null && command -v npm >/dev/null; then \
		$(MAKE) --no-print-directory $(WEB)/node_modules/.installed && \
		cd $(WEB) && node node_modules/typescript/bin/tsc --noEmit -p . && echo "tsc: clean"; \
	elif [ "$$CI_REQUIRE_NODE" = 1 ]; then \
		echo "CI_REQUIRE_NODE=1 but node or npm is missing" >&2; exit 1; \
	else echo "no Node.js: client/web's TypeScript was not type-checked"; fi

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/perturb_throughput.py
	$(BIN)/python bench/mechanism_throughput.py
	$(BIN)/python bench/ingest_throughput.py
	$(BIN)/python bench/storage_scale.py
	$(BIN)/python bench/ingest_backends.py
	$(BIN)/python bench/pg_index_cost.py
	$(BIN)/python bench/pg_ingest_limit.py
	$(BIN)/python bench/export_memory.py

# Regenerate the committed wire code (tests/test_proto_drift.py fails when it is stale).
# proto/deniable/v1/*.proto is compiled as deniable/shared/wire/v1/*.proto, so that the
# generated modules are deniable.shared.wire.v1.* and import each other by that name.
proto: $(VENV)/.installed-dev
	rm -rf build/proto && mkdir -p build/proto
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m grpc_tools.protoc \
		-Ideniable/shared/wire=proto/deniable --python_out=build/proto \
		--grpc_python_out=build/proto --mypy_out=build/proto --mypy_grpc_out=build/proto \
		proto/deniable/v1/*.proto
	cp build/proto/deniable/shared/wire/v1/*_pb2* shared/wire/v1/

# Rebuild the browser participant's committed page (client/web/dist) and its message code
# from proto/: needs Node.js and npm; `make demo` and `make test` do not (the bundle is
# committed, and a test without Node checks it against the sources' hashes).
WEB := client/web
$(WEB)/node_modules/.installed: $(WEB)/package.json $(WEB)/package-lock.json
	cd $(WEB) && npm ci --no-audit --no-fund
	touch $@

web: $(VENV)/.installed-dev $(WEB)/node_modules/.installed
	cd $(WEB) && PYTHON=$(abspath $(BIN)/python) node scripts/gen.mjs && node scripts/build.mjs

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(WEB)/node_modules $(WEB)/build
