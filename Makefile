# The two commands of the README, for a fresh machine:
#   make run   - virtual env + install + a scored rollout of every registered env (reference
#                policy) into a SQLite file, printing the summary
#   make test  - virtual env + dev install + bubblewrap, Docker engine and sandbox image, PostgreSQL
#                for the store tests + ruff, mypy, pytest
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# torch is pinned in the same pip command as everything that depends on it, so pip never
# picks a multi-GB CUDA build on a CPU machine.
TORCH  ?= torch==2.13.0
PIP    := $(PY) -m pip install --quiet --disable-pip-version-check
DB     ?= gymhub.db

.PHONY: run test lint typecheck bench clean

$(VENV)/bin/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "gymhub needs Python >= 3.10"'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: pyproject.toml | $(VENV)/bin/python
	$(PIP) -e ".[envs]"
	touch $@

# verl and OpenRLHF pin GPU builds (flash-attn, deepspeed, vllm): the adapter tests need only
# their Python modules, so they go in without their requirements (the dev extra has the rest).
ADAPTER_PKGS ?= verl==0.9.1 openrlhf==0.11.2

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) "$(TORCH)" -e ".[dev]"
	$(PIP) --no-deps $(ADAPTER_PKGS)
	touch $@ $(VENV)/.installed-base

run: $(VENV)/.installed-base
	$(VENV)/bin/gymhub rollout all --db $(DB) --group-size 2 --concurrency 2

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy gymhub

test: lint typecheck
	@bash scripts/start_sandbox_services.sh $(VENV)/bin/gymhub || { \
	  if [ "$$CI" = "true" ]; then echo "the sandbox services could not be started" >&2; exit 1; fi; \
	  echo "warning: bwrap/docker unavailable here; their sandbox tests will skip" >&2; }
	@url=$$(bash scripts/start_postgres.sh) || { \
	  if [ "$$CI" = "true" ]; then echo "PostgreSQL could not be started" >&2; exit 1; fi; \
	  echo "warning: no PostgreSQL here; the PostgreSQL store tests will skip" >&2; url=""; }; \
	GYMHUB_TEST_POSTGRES_URL="$$url" $(VENV)/bin/pytest -n 2 -q tests

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/rollout_overhead.py
	$(PY) benchmarks/sandboxes.py
	$(PY) benchmarks/envs.py
	$(PY) benchmarks/search_engines.py

clean:
	rm -rf $(VENV) build dist *.egg-info $(DB) $(DB)-wal $(DB)-shm
