"""Drive the real chat window from a benchmark script: offscreen, one reply at a time."""

from __future__ import annotations

import _common  # noqa: F401

from PySide6.QtCore import QEventLoop, QObject, QTimer, Signal, Slot
from PySide6.QtWidgets import QApplication
from transformers import LogitsProcessor


class SuppressEos(LogitsProcessor):
    """Forces replies of exactly max-new-tokens, as min_new_tokens does for bare generate."""

    def __init__(self, eos_ids):
        self.eos_ids = list(eos_ids)

    def __call__(self, input_ids, scores):
        scores[:, self.eos_ids] = float("-inf")
        return scores


class ThreadBoundCall(QObject):
    """Runs a function on the window's generation thread, so torch uses the same OpenMP team there.

    Two OS threads alternating torch work each keep a spinning thread pool, and on two cores they
    slow each other down many times over; the app itself only ever runs torch on that one thread.
    """

    requested = Signal(object)
    completed = Signal(object)

    def __init__(self, thread):
        super().__init__()
        self.moveToThread(thread)
        self.requested.connect(self.run)

    @Slot(object)
    def run(self, function) -> None:
        self.completed.emit(function())


class WindowDriver:
    def __init__(self, loaded, streaming: bool = True, window_class=None):
        from gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication([])
        self.window = (window_class or MainWindow)()
        self.window._on_model_loaded(loaded)
        self.window.streaming_toggle.setChecked(streaming)
        self.window.show()

    def ask(self, text: str, max_new_tokens: int, force_length: bool = True, timeout_s: float = 600):
        window = self.window
        window.settings_panel.max_new_tokens.setValue(max_new_tokens)
        window.extra_logits_processors = (SuppressEos(window.loaded.eos_token_ids),) if force_length else ()
        loop = QEventLoop()
        result = {}

        def done(trace):
            result["trace"] = trace
            loop.quit()

        window.reply_finished.connect(done)
        QTimer.singleShot(int(timeout_s * 1000), loop.quit)
        window.input_box.setPlainText(text)
        window.send_message()
        loop.exec()
        window.reply_finished.disconnect(done)
        if "trace" not in result:
            raise TimeoutError("no reply within the timeout")
        return result["trace"]

    def call_on_generation_thread(self, function, timeout_s: float = 600):
        caller = ThreadBoundCall(self.window.generation_thread)
        loop = QEventLoop()
        result = {}

        def done(value):
            result["value"] = value
            loop.quit()

        caller.completed.connect(done)
        QTimer.singleShot(int(timeout_s * 1000), loop.quit)
        caller.requested.emit(function)
        loop.exec()
        caller.completed.disconnect(done)
        return result["value"]

    def new_chat(self) -> None:
        self.window.new_chat()

    def close(self) -> None:
        self.window.close()
