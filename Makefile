PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow lint bench fuzz browser-deps

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

# a test that hangs fails after 30 min with its stack instead of holding CI to its limit (the
# limit covers fixtures too: the first Slurm test installs and starts the cluster, up to 20 min)
test: $(VENV)/.installed-dev browser-deps
	$(BIN)/pytest --timeout=1800

# Debian's chromium + chromium-driver for tests/browser/ (apt-get when absent; quiet when present).
# Not fatal here: without root the browser tests skip with the reason (under CI they fail instead).
browser-deps:
	-@tools/browser-deps.sh

test-slow: $(VENV)/.installed-dev
	$(BIN)/pytest -m slow

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src/gpufleet/model src/gpufleet/engine src/gpufleet/policies
	$(BIN)/lint-imports

# Coverage-guided fuzzing (atheris) of every reader for FUZZ_SECONDS each; crashes land in
# build/fuzz/<target>/. Without atheris: the hypothesis fuzz suite, 50 times longer.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := scenario fleet trace openb-nodes openb-pods
fuzz: $(VENV)/.installed-dev
	@if $(BIN)/pip install -q 'atheris>=2.3' && $(BIN)/python -c 'import atheris'; then \
	  for t in $(FUZZ_TARGETS); do mkdir -p build/fuzz/$$t && (cd build/fuzz/$$t && \
	    ../../../$(BIN)/python ../../../tests/fuzz/atheris_readers.py $$t -max_total_time=$(FUZZ_SECONDS) \
	    -rss_limit_mb=4096 corpus) || exit 1; done; \
	else echo "atheris is not installable here: running the hypothesis fuzz suite at 50x"; \
	  GPUFLEET_FUZZ_SCALE=50 $(BIN)/pytest -q -p no:cacheprovider tests/fuzz; fi

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
