"""Free a finished model's cycles between a sweep's models, but never run Qt's destructors off the GUI thread."""

from __future__ import annotations

import gc
import sys
import threading


def collect_between_models() -> None:
    """A full collection, except on a worker thread of a process that has Qt's widgets (the tests' in-process
    engine): there it could free a Qt object left by a window and deadlock PySide against the GUI thread, as
    gui/gui_thread_gc.py describes (seen in CI: the size sweep's collection on the compute thread). The GUI thread
    collects in such a process; the app's engine process has no Qt."""
    if "PySide6.QtWidgets" in sys.modules and threading.current_thread() is not threading.main_thread():
        return
    gc.collect()
