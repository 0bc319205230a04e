"""Open the chat window, or explain clearly why no window can be shown."""

from __future__ import annotations

import argparse
import os
import sys

from core import startup_gc
from core.settings import GenerationSettings


def display_problem() -> str | None:
    """Qt aborts without a display; say so in words instead."""
    if os.environ.get("QT_QPA_PLATFORM", "").startswith(("offscreen", "minimal", "vnc")):
        return None
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return (
            "no display found (neither DISPLAY nor WAYLAND_DISPLAY is set). Run it on a desktop, under "
            'xvfb-run, or use the headless command: latencylab ask "PROMPT".'
        )
    return None


def window_overrides(given: dict) -> dict:
    """The command line's flags as window settings: they win over the saved ones for this launch."""
    names = {
        "model": "model_spec",
        "dtype": "dtype",
        "max_new_tokens": "max_new_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "seed": "seed",
        "decode_loop": "decode_loop",
        "prompt_cache": "prompt_cache",
        "speculation": "speculation",
        "draft_tokens": "draft_tokens",
        "draft_model": "draft_model",
    }
    return {names[key]: value for key, value in given.items() if key in names}


def early_engine_factory():
    """Start the engine process now, before the window's own imports and widgets (about a second here): it
    imports torch and transformers meanwhile. The factory hands out that engine first, then new ones (a
    restart after a crash)."""
    from core.engine.process import EngineProcess

    started = [EngineProcess()]
    return lambda: started.pop() if started else EngineProcess()


def launch_window(args: argparse.Namespace, settings: GenerationSettings) -> int:
    problem = display_problem()
    if problem:
        print(f"latencylab: cannot open the window: {problem}", file=sys.stderr)
        return 1
    from core.model.offline import use_offline_mode_for
    from gui.settings.store import load_window_settings

    # Before the engine starts, which inherits the offline switches, and before anything imports transformers.
    use_offline_mode_for(args.model or load_window_settings().model_spec)
    engine_factory = early_engine_factory()
    from PySide6.QtWidgets import QApplication

    from gui.main_window import MainWindow

    # The window's modules are imported; from here its GUI thread collects on its own timer (gui/gui_thread_gc.py).
    startup_gc.started()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Latency Lab")
    window = MainWindow(
        overrides=window_overrides(getattr(args, "given", {})),
        trust_remote_code=getattr(args, "trust_remote_code", False),
        allow_pickle=getattr(args, "allow_pickle", False),
        engine_factory=engine_factory,
    )
    profile_path = getattr(args, "profile_ui", None) or os.environ.get("LATENCYLAB_PROFILE_UI")
    if profile_path:
        from gui.ui_probe import UiProbe

        window.ui_probe = UiProbe(window, profile_path)
    window.show()
    window.chat_panel.input_box.setFocus()
    # The window is up before the model: loading runs on its own thread behind it.
    window.start_loading()
    from gui.interrupt import CloseOnInterrupt

    interrupt = CloseOnInterrupt(window)
    status = app.exec()
    interrupt.restore()
    return interrupt.exit_status(status)
