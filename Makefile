PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow lint bench

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,k8s]'
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

demo: $(VENV)/.installed
	$(BIN)/gpufleet simulate

test: $(VENV)/.installed-dev
	$(BIN)/pytest

test-slow: $(VENV)/.installed-dev
	$(BIN)/pytest -m slow

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src/gpufleet/model src/gpufleet/engine

# Mutation testing, not part of `make test`: one module at a time with only its tests (tools/mutation.toml).
# make mutation MODULES="engine/plan.py policies/fgd/measure.py" MUTATION_TIMEOUT=900
MODULES ?= engine/plan.py policies/preemption.py policies/backfill.py policies/quota.py policies/fgd/measure.py
MUTATION_TIMEOUT ?= 1800

$(VENV)/.installed-mutation: pyproject.toml $(VENV)/.installed-dev
	$(BIN)/pip install -q -e '.[mutation]'
	touch $@

.PHONY: mutation
mutation: $(VENV)/.installed-mutation
	MUTATION_TIMEOUT=$(MUTATION_TIMEOUT) $(BIN)/python tools/mutation.py run $(MODULES)
