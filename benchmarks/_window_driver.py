"""Drive the real chat window from a benchmark script: offscreen, one reply at a time."""

from __future__ import annotations

import _common  # noqa: F401

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication
from transformers import SuppressTokensLogitsProcessor

from core.compute_thread import on_compute_thread


def suppress_eos(eos_ids) -> SuppressTokensLogitsProcessor:
    """Forces replies of exactly max-new-tokens, as min_new_tokens does for bare generate."""
    return SuppressTokensLogitsProcessor(sorted(eos_ids))


class WindowDriver:
    def __init__(self, loaded, streaming: bool = True, window_class=None):
        from gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication([])
        self.window = (window_class or MainWindow)()
        self.window.models.accept_model(loaded)
        self.window.streaming_toggle.setChecked(streaming)
        self.window.show()

    def ask(self, text: str, max_new_tokens: int, force_length: bool = True, timeout_s: float = 600):
        window = self.window
        window.settings_panel.max_new_tokens.setValue(max_new_tokens)
        window.replies.logits_processors = (suppress_eos(window.loaded.eos_token_ids),) if force_length else ()
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
        """Run function on core's compute thread, where the window's replies run, so bare and app runs share
        one OpenMP pool (core/compute_thread.py). Only the benchmarks need this."""
        return on_compute_thread(function, timeout_s)

    def new_chat(self) -> None:
        self.window.new_chat()

    def close(self) -> None:
        self.window.close()
