"""Drive the real chat window from a benchmark script: offscreen, one reply at a time, on the app's engine process."""

from __future__ import annotations

import time
from dataclasses import replace

import _common  # noqa: F401
from PySide6.QtCore import QEventLoop, QSize, QTimer
from PySide6.QtWidgets import QApplication

from core.engine.messages import ReplyJob
from core.timing.events import FinishedEvent, TokenEvent
from core.timing.metrics import compute_metrics

WINDOW_SIZE = QSize(1260, 855)


class WindowDriver:
    """loaded: a model already in this process (the in-process engine, for tiny-model benchmarks); otherwise
    the window starts its engine process and loads the embedded model at dtype, as the app does."""

    def __init__(self, loaded=None, streaming: bool = True, dtype: str = "int4", timeout_s: float = 600):
        from gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication([])
        if loaded is not None:
            from core.engine.in_process import InProcessEngine
            from core.generation.local_model import LocalModel

            self.window = MainWindow(engine_factory=InProcessEngine)
            self.window.models.accept_model(LocalModel.of(loaded))  # the loader's model, with its verbs
        else:
            self.window = MainWindow()
            self._wait(self.window.model_ready, lambda: self.window.start_loading("embedded", dtype), timeout_s)
        self.window.chat_panel.streaming_toggle.setChecked(streaming)
        self.window.show()
        # One size on every screen (what a 1400 x 950 one opens it at): the window's painting cost grows with its
        # pixels, and the offscreen screen (800 x 800) would otherwise give it a smaller window than Xvfb's.
        self.window.resize(WINDOW_SIZE)

    def ask(self, text: str, max_new_tokens: int, force_length: bool = True, timeout_s: float = 600):
        window = self.window
        window.chat_panel.settings_panel.max_new_tokens.setValue(max_new_tokens)
        window.replies.ignore_eos = force_length

        def send() -> None:
            window.chat_panel.input_box.setPlainText(text)
            window.send_message()

        return self._wait(window.reply_finished, send, timeout_s)

    def bare_tpot(self, text: str, max_new_tokens: int, loop: str = "lean", timeout_s: float = 600) -> float:
        """TPOT of one reply the engine generates with no window attached: the same engine process and
        model, the same put() stamps, but nobody shows the tokens (the window's reader drops them)."""
        stamps: list[int] = []
        client = self.window.models.client
        reply_id = -1  # the job's, once started

        def on_events(batch) -> None:
            for delivered in batch:
                message = delivered.event
                if message.job_id == reply_id and isinstance(getattr(message, "event", None), TokenEvent):
                    stamps.append(message.event.timestamp_ns)

        def finished_in(batch) -> FinishedEvent | None:
            return next(
                (
                    delivered.event.event
                    for delivered in batch or ()
                    if delivered.event.job_id == reply_id
                    and isinstance(getattr(delivered.event, "event", None), FinishedEvent)
                ),
                None,
            )

        client.reply_events_arrived.connect(on_events)
        try:
            start_ns = time.perf_counter_ns()
            settings = replace(
                self.window.chat_panel.settings_panel.generation_settings(),
                max_new_tokens=max_new_tokens,
                decode_loop=loop,
            )

            def start() -> None:
                nonlocal reply_id
                reply_id = client.start(ReplyJob("", (("user", text),), settings, start_ns, ignore_eos=True))

            finished = finished_in(
                self._wait(
                    client.reply_events_arrived,
                    start,
                    timeout_s,
                    accept=lambda batch: finished_in(batch) is not None,
                )
            )
        finally:
            client.reply_events_arrived.disconnect(on_events)
        assert finished.output_tokens == len(stamps) == max_new_tokens, (finished, len(stamps))
        return compute_metrics(start_ns, stamps, 0).tpot_s

    def _wait(self, signal, action, timeout_s: float, accept=lambda value: True):
        loop = QEventLoop()
        result = {}

        def done(value=None):
            if accept(value):
                result["value"] = value
                loop.quit()

        signal.connect(done)
        QTimer.singleShot(int(timeout_s * 1000), loop.quit)
        action()
        if "value" not in result:
            loop.exec()
        signal.disconnect(done)
        if "value" not in result:
            raise TimeoutError("the window did not answer within the timeout")
        return result["value"]

    def new_chat(self) -> None:
        self.window.new_chat()

    def close(self) -> None:
        self.window.close()
