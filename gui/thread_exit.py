"""Let a window close at once even when a worker thread is stuck in a call that cannot be interrupted.

A model load inside from_pretrained cannot be cancelled, nor can one forward pass of a model whose decoder
layers are not found (a reply's prefill otherwise stops at the next layer). Joining it would keep the
window open for seconds; destroying its QThread while it runs makes Qt warn and can crash. Instead a
thread that does not end within the close budget is detached: it leaves the window (so it is not
destroyed with it), and this module keeps it and its worker alive. When the app's event loop ends,
exit_code_after_threads() ends the process without waiting for a detached thread still running.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QObject, QThread

_detached: list[tuple[QThread, QObject]] = []


def end_thread(thread: QThread, worker: QObject, timeout_ms: int) -> bool:
    """Ask the thread's event loop to quit and wait up to timeout_ms; detach it if it is still busy."""
    thread.quit()
    if thread.wait(max(timeout_ms, 0)):
        return True
    thread.setParent(None)
    _detached.append((thread, worker))
    return False


def running_detached() -> list[QThread]:
    """Detached threads still running; finished ones are released."""
    _detached[:] = [(thread, worker) for thread, worker in _detached if thread.isRunning()]
    return [thread for thread, _ in _detached]


def exit_code_after_threads(code: int) -> int:
    """Call when the event loop has returned. Never returns while a detached thread still runs."""
    if running_detached():
        # Python's shutdown would destroy the running QThread (a Qt warning, maybe a crash) or wait on it.
        # Everything the user made is already saved by the window's closeEvent.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
