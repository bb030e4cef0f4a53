PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow lint bench

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,k8s,ray]'
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
	$(BIN)/lint-imports
