"""Helpers for the window's tests: drive the window like a user, and watch the event loop for stalls."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer

REPLY_TIMEOUT_MS = 120_000


def ask(qtbot, window, text, max_new_tokens=4, typed=False):
    """Put text in the box (typed key by key, or set at once) and press Enter; return reply_finished's argument."""
    window.chat_panel.settings_panel.max_new_tokens.setValue(max_new_tokens)
    window.chat_panel.input_box.setFocus()
    if typed:
        qtbot.keyClicks(window.chat_panel.input_box, text)
    else:
        window.chat_panel.input_box.setPlainText(text)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


class StallProbe:
    """A 5 ms QTimer on the GUI thread: the largest gap between its ticks is the longest freeze."""

    def __init__(self, interval_ms: int = 5):
        self.gaps: list[float] = []
        self._last = 0.0
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def __enter__(self) -> StallProbe:
        self._last = time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.stop()
        self._tick()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self._last)
        self._last = now

    @property
    def max_stall_s(self) -> float:
        return max(self.gaps) if self.gaps else 0.0
