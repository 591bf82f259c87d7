# gradserve: `make serve` runs the service, `make test` runs every test.
# Each target installs what it needs into a local virtualenv (.venv).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# make serve HOST=... PORT=..., else GRADSERVE_HOST / GRADSERVE_PORT as the settings table says
HOST   ?= $(or $(GRADSERVE_HOST),127.0.0.1)
PORT   ?= $(or $(GRADSERVE_PORT),8000)

.PHONY: serve test lint typecheck unit openapi bench fuzz docker-smoke test-scaleout test-package browser-deps redis-deps clean

$(VENV)/.serve-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[server]'
	touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/.serve-installed
	$(PY) -m pip install -q -e '.[server,test]'
	touch $@

serve: $(VENV)/.serve-installed
	@echo "gradserve on http://$(HOST):$(PORT)"
	@echo "  playground: http://$(HOST):$(PORT)/ui/"
	@echo "  API docs:   http://$(HOST):$(PORT)/docs"
	$(VENV)/bin/gradserve serve --host $(HOST) --port $(PORT)

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check gradcore engine service client tests bench examples
	$(VENV)/bin/ruff format --check gradcore engine service client tests bench examples

typecheck: $(VENV)/.test-installed
	$(VENV)/bin/mypy

unit: $(VENV)/.test-installed
	$(PY) -m pytest

test: lint typecheck unit

openapi: $(VENV)/.serve-installed
	$(PY) -m service.openapi_dump > openapi/openapi.json

# the differential fuzzer, longer than the fixed seeds of `make test` (SEEDS=start:stop),
# every op of the catalogue called with wrong kinds of arguments (a sample in `make test`)
# and every sample of PyTorch's op database (tests/opdb; `make test` runs the first of each),
# and every sample made complex (the complex sweep; `make test` runs the first two of each)
SEEDS ?= 0:3000
fuzz: $(VENV)/.test-installed
	$(PY) -m tests.fuzz.run --seeds $(SEEDS)
	GRADSERVE_WRONG_KINDS=all $(PY) -m pytest -q tests/service/test_wrong_kinds.py
	GRADSERVE_ESTIMATES=all $(PY) -m pytest -q tests/engine/test_estimates.py
	OPDB_LIMIT=all $(PY) -m pytest tests/opdb -q -s -p no:cacheprovider --timeout 3600
	COMPLEX_SWEEP=all $(PY) -m pytest -q tests/engine/test_complex_sweep.py

bench: $(VENV)/.test-installed
	$(PY) bench/engine.py
	$(PY) bench/service.py

# heavy checks, kept out of `make test` and run by .ci/run after it
docker-smoke: $(VENV)/.test-installed
	GRADSERVE_SMOKE_PYTHON=$(PY) bash docker/smoke.sh

# Debian's headless Chromium for tests/browser (they skip without it unless CI_BROWSER=1),
# and graphviz, whose dot lays out the graph pictures when installed
browser-deps:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v dot >/dev/null || { \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	    chromium chromium-driver fonts-dejavu-core graphviz; }

# the package installed in fresh virtualenvs, base (engine + client) and [server]
test-package: $(VENV)/.test-installed
	$(PY) -m pytest -m package tests/package

# Debian's redis-server for tests/store (they skip without it unless CI_REDIS=1)
redis-deps:
	command -v redis-server >/dev/null || { \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server; }

test-scaleout: $(VENV)/.test-installed redis-deps
	command -v nginx >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends nginx-light; }
	$(PY) -m pytest -m scaleout tests/deploy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
