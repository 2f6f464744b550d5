# pkgcat: `make run` serves the demo, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed
PYTEST_STAMP := $(VENV)/.pytest-rewritten
# openapi-python-client, locked apart (its pins clash with ours): tests/functional/test_generated_client.py
GENERATOR := tools/openapi-client
GENERATOR_STAMP := $(GENERATOR)/.venv/.installed
# uv installs the exact, hashed set recorded in uv.lock (`make lock` updates it from pyproject.toml).
UV_VERSION := 0.13.9
# --compile-bytecode: every installed module's bytecode written once, at install: a process that
# may not write it (PYTHONDONTWRITEBYTECODE set) would otherwise compile each module it imports at
# every start (a server worker's imports took 1.9 s so, 0.7 s from bytecode).
UV_SYNC := $(BIN)/uv sync --locked --inexact --quiet --compile-bytecode

.DEFAULT_GOAL := help
.PHONY: help setup bytecode lock run test test-fast bench-store bench-licence lint format typecheck client-methods fuzz bench bench-defaults bench-smoke bench-profile bench-repository bench-shop bench-indexes soak slow-clients wrk dashboard-vendor browser-deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv==$(UV_VERSION)

$(STAMP): pyproject.toml uv.lock | $(BIN)/uv
	$(UV_SYNC) --extra dev
	touch $(STAMP)

$(GENERATOR_STAMP): $(GENERATOR)/pyproject.toml $(GENERATOR)/uv.lock | $(BIN)/uv
	cd $(GENERATOR) && ../../$(UV_SYNC)
	touch $(GENERATOR_STAMP)

setup: $(STAMP) $(GENERATOR_STAMP) ## create .venv and install pkgcat with its development tools, as locked

# The same for the project's own modules (installed editable, so not compiled by uv); compileall
# rewrites only what changed, in a fraction of a second when nothing did.
bytecode: $(STAMP) $(PYTEST_STAMP)
	@$(BIN)/python -m compileall -q -j 0 src tests bench >/dev/null

# pytest rewrites the asserts of its plugins' modules (hypothesis, schemathesis...) at every
# start, 1.5 s of CPU, and caches them only where bytecode may be written: written once here,
# after each install (the test modules' own: tests/conftest.py, pytest_collection).
$(PYTEST_STAMP): $(STAMP)
	@env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest --noconftest --collect-only -q -p no:cacheprovider \
		--no-cov tests/__init__.py >/dev/null || [ $$? -eq 5 ]
	@touch $@

lock: | $(BIN)/uv ## after editing pyproject.toml's dependencies: re-resolve uv.lock
	$(BIN)/uv lock
	cd $(GENERATOR) && ../../$(BIN)/uv lock

run: bytecode $(STAMP) ## seed the demo (catalogue, signed repository, test-mode store) into ./pkgcat.db (once) and serve it on http://127.0.0.1:8000
	$(BIN)/pkgcat demo --reuse
	$(BIN)/pkgcat serve --env-file pkgcat-demo.env

# PostgreSQL and Redis: PKGCAT_TEST_POSTGRES_URL and PKGCAT_TEST_REDIS_URL, or else each at its
# default local address when it answers there (tests/backends.py); their tests skip without.
# On TEST_WORKERS processes (pytest-xdist), then the tests marked `alone` (wall-clock
# assertions) one at a time, adding to the same coverage data, whose floor the second run checks.
TEST_WORKERS ?= 2
test: bytecode $(STAMP) $(GENERATOR_STAMP) ## run the whole test suite (on PostgreSQL and Redis when they answer)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "not alone" --cov-report= --cov-fail-under=0 --durations=25
	$(BIN)/pytest -m alone --cov-append

test-fast: bytecode $(STAMP) ## the inner loop: no slow, soak, browser or generated-client tests, no coverage
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal --no-cov -q -m "not slow and not soak and not browser and not generated_client"

lint: $(STAMP) ## ruff check, ruff format --check, mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP) ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck: $(STAMP) ## mypy --strict on src/ and tests/
	$(BIN)/mypy

# The methods of Client and AsyncClient, from the operation table (tests/test_client_methods.py
# fails while the committed file and the table disagree).
client-methods: $(STAMP) ## write src/pkgcat/client/_methods.py again from the operation table
	$(BIN)/python -m tools.client_methods

# The dashboard's chart library: the version dashboard/package-lock.json pins, from the npm
# registry, copied into the served folder (and committed, so that serving needs no npm).
DASHBOARD_VENDOR := src/pkgcat/http/dashboard/assets/vendor
dashboard-vendor: ## copy the pinned Chart.js from npm into the dashboard's served folder
	cd dashboard && npm ci --ignore-scripts --no-audit --no-fund
	cp dashboard/node_modules/chart.js/dist/chart.umd.min.js $(DASHBOARD_VENDOR)/chart.umd.min.js
	cp dashboard/node_modules/chart.js/LICENSE.md $(DASHBOARD_VENDOR)/chart.js.LICENSE.md

browser-deps: ## Debian's Chromium and ChromeDriver for the dashboard's browser tests (needs root)
	@test -x /usr/bin/chromium || apt-get install -y chromium chromium-driver || \
		(apt-get update && apt-get install -y chromium chromium-driver)

FUZZ_SECONDS ?= 600
fuzz: $(STAMP) ## schemathesis against a served demo, FUZZ_SECONDS (600) a database, a fresh seed
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(BIN)/pytest --no-cov -p no:cacheprovider -s tests/functional/test_fuzz.py

$(BENCH_STAMP): $(STAMP)
	$(UV_SYNC) --extra dev --extra bench
	touch $(BENCH_STAMP)

wrk: # Debian's wrk, installed when missing (needs root)
	@command -v wrk >/dev/null || apt-get install -y wrk || (apt-get update && apt-get install -y wrk)

bench: bytecode $(BENCH_STAMP) wrk ## the load benchmark: table, curves and plots into docs/ (~12 minutes)
	$(BIN)/python -m bench.run

bench-defaults: bytecode $(BENCH_STAMP) wrk ## pkgcat serve's defaults (demo, access log on) against bare granian's, SQLite and PostgreSQL + Redis (~4 minutes)
	$(BIN)/python -m bench.run --defaults

bench-smoke: bytecode $(STAMP) wrk ## a 20-second run of the harness on a tiny catalogue, compared with docs/benchmarks.md
	$(BIN)/python -m bench.run --smoke

bench-repository: bytecode $(STAMP) wrk ## the served repository against granian's static files, and its rebuild (~3 minutes)
	$(BIN)/python -m bench.repository

bench-indexes: bytecode $(STAMP) ## the published indexes at 60,000 packages on SQLite and PostgreSQL + S3: a change served by every host, memory per worker (~5 minutes)
	$(BIN)/python -m bench.indexes

bench-shop: bytecode $(STAMP) ## a seller's page edit and price change until Packages and the depictions show them, at 60,000 packages (~3 minutes)
	$(BIN)/python -m bench.shop

bench-profile: bytecode $(BENCH_STAMP) wrk ## where a served details request's time goes: stage table and flame graph (~1 minute)
	$(BIN)/python -m bench.flame

bench-store: bytecode $(STAMP) ## the store's refusals (forged tokens, reused URLs...) against its normal answers (~30 s)
	$(BIN)/python -m bench.store

bench-licence: bytecode $(STAMP) ## licence checks of a bought, a whitelisted and an unknown device against each other (~1 minute)
	$(BIN)/python -m bench.licence

soak: $(BENCH_STAMP) wrk ## 300,000 mixed requests on one worker; memory, open files and WAL into docs/soak.* (~2 minutes)
	$(BIN)/python -m bench.soak --out docs/soak

slow-clients: $(STAMP) ## 4,000 idle and slow connections for 30 s, a normal client answered within 1 s (~1 minute)
	SLOW_CLIENTS=full $(BIN)/pytest --no-cov -p no:cacheprovider -q -s tests/functional/test_slow_clients.py -k crowd

clean: ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*
