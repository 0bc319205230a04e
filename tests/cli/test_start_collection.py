"""The command line's start: no cycle collection walks the imports and the first load, which then stay out of later
ones (core/startup_gc.py). Each check runs in a child process, whose collector it may change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_child(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_ask_reaches_its_model_with_no_full_collection_and_frozen_start():
    """Before: four full collections (0.25 s) and 580 younger ones before the model was ready, and a full walk of
    every object at exit."""
    code = (
        "import gc, sys\n"
        "full = []\n"
        "gc.callbacks.append(lambda phase, info: full.append(1) if phase == 'stop' and info['generation'] == 2 else 0)\n"
        "import core.backend.choice as choice\n"
        "load_any = choice.load_any\n"
        "def watched(*args, **kwargs):\n"
        "    model = load_any(*args, **kwargs)\n"
        "    print('full', len(full), 'frozen', gc.get_freeze_count(), 'collecting', gc.isenabled())\n"
        "    return model\n"
        "choice.load_any = watched\n"
        "sys.argv = ['latencylab', 'ask', 'Hi', '--max-new-tokens', '1']\n"
        "from cli.main import run\n"
        "sys.exit(run())\n"
    )
    words = run_child(code).split("full ", 1)[1].split()
    full, frozen, collecting = int(words[0]), int(words[2]), words[4]
    assert full == 0
    assert frozen > 50_000  # torch's and transformers' modules among them
    assert collecting == "True"  # collected again once the model is there


def test_a_process_that_did_not_hold_the_collector_is_left_as_it_is():
    """A test's process, or the window's (whose GUI thread collects on a timer), must not have it enabled or frozen."""
    code = (
        "import gc\n"
        "from core import startup_gc\n"
        "gc.disable()\n"
        "startup_gc.hold()\n"
        "startup_gc.started()\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
        "gc.enable()\n"
        "startup_gc.hold()\n"
        "held = gc.isenabled()\n"
        "startup_gc.started()\n"
        "startup_gc.started()\n"
        "print(held, gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    first, second = run_child(code).splitlines()
    assert first == "False 0"
    assert second == "False True True"


def test_the_engine_freezes_its_imports_and_not_its_models():
    """The engine loads other models later: a model frozen with the start would never be collected."""
    code = (
        "import gc, sys\n"
        "from core import startup_gc\n"
        "startup_gc.hold()\n"
        "from core.engine.process import _import_the_model_stack\n"
        "_import_the_model_stack()\n"
        "frozen = gc.get_freeze_count()\n"
        "from core.backend.choice import load_any\n"
        "model = load_any(None, dtype='native')\n"
        "print(frozen > 50_000, gc.get_freeze_count() <= frozen, gc.isenabled())\n"
    )
    assert run_child(code).split() == ["True", "True", "True"]
