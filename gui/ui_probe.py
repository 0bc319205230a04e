"""An opt-in probe of the window's own responsiveness: launch time, event-loop stalls, token-to-paint delay.

Switched on by `latencylab --profile-ui FILE` (or LATENCYLAB_PROFILE_UI=FILE); it writes a JSON
report to FILE at each milestone, so a benchmark can read it while the app runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer, Slot

from core.timing.metrics import percentile

STALL_PROBE_INTERVAL_MS = 5


def process_age_s() -> float | None:
    """Seconds since this process started, from /proc (Linux); None elsewhere."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return uptime_s - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class UiProbe(QObject):
    def __init__(self, window, report_path: str | Path):
        super().__init__(window)
        self._window = window
        self._path = Path(report_path)
        self._broken = False  # the file could not be written: said once
        self._launch_offset_s = process_age_s() or 0.0
        self._probe_started = time.perf_counter()
        self.report: dict = {"window_shown_s": None, "model_ready_s": None}
        self._gaps_ms: list[float] = []
        self._paint_delays_ms: list[float] = []
        self._pending_stamps: list[int] = []
        self._last_tick = time.perf_counter()
        self._timer = QTimer(self)
        self._timer.setInterval(STALL_PROBE_INTERVAL_MS)
        self._timer.timeout.connect(self._on_tick)
        window.installEventFilter(self)
        window.chat_panel.transcript.viewport().installEventFilter(self)
        window.replies.token_received.connect(self._on_token_received)
        window.model_ready.connect(self._on_model_ready)
        window.reply_finished.connect(self._on_reply_finished)
        window.destroyed.connect(self._timer.stop)
        self._timer.start()

    def since_launch_s(self) -> float:
        return self._launch_offset_s + time.perf_counter() - self._probe_started

    def stop(self) -> None:
        self._timer.stop()
        self.write()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint:
            if self.report["window_shown_s"] is None:
                # The first paint of the window or its transcript: the moment something is on screen.
                self.report["window_shown_s"] = self.since_launch_s()
                self.write()
            if self._pending_stamps and watched is self._window.chat_panel.transcript.viewport():
                now = time.perf_counter_ns()
                self._paint_delays_ms.extend((now - stamp) / 1e6 for stamp in self._pending_stamps)
                self._pending_stamps.clear()
        return False

    @Slot()
    def _on_tick(self) -> None:
        now = time.perf_counter()
        self._gaps_ms.append((now - self._last_tick) * 1000 - STALL_PROBE_INTERVAL_MS)
        self._last_tick = now

    @Slot(object)
    def _on_token_received(self, delivered) -> None:
        event = delivered.event
        if event.text and self._window.chat_panel.streaming_toggle.isChecked():
            self._pending_stamps.append(event.timestamp_ns)

    @Slot(object)
    def _on_model_ready(self, _ready) -> None:
        if self.report["model_ready_s"] is None:
            self.report["model_ready_s"] = self.since_launch_s()
        self.write()

    @Slot(object)
    def _on_reply_finished(self, trace) -> None:
        self.write()

    def reset_measurements(self) -> None:
        self._gaps_ms.clear()
        self._paint_delays_ms.clear()
        self._pending_stamps.clear()
        self._last_tick = time.perf_counter()

    def summary(self) -> dict:
        gaps = [max(gap, 0.0) for gap in self._gaps_ms]
        return {
            **self.report,
            "stall_ms": {
                "count": len(gaps),
                "p50": percentile(gaps, 50),
                "p99": percentile(gaps, 99),
                "max": max(gaps) if gaps else None,
            },
            "put_to_paint_ms": {
                "count": len(self._paint_delays_ms),
                "p50": percentile(self._paint_delays_ms, 50),
                "p95": percentile(self._paint_delays_ms, 95),
                "max": max(self._paint_delays_ms) if self._paint_delays_ms else None,
            },
        }

    def write(self) -> None:
        """The summary to the file; a file that cannot be written is said once on stderr, not at every write
        (LATENCYLAB_PROFILE_UI is not checked at launch as --profile-ui is)."""
        if self._broken:
            return
        temporary = self._path.with_suffix(self._path.suffix + ".tmp")
        try:
            temporary.write_text(json.dumps(self.summary(), indent=1), encoding="utf-8")
            os.replace(temporary, self._path)
        except OSError as error:
            self._broken = True
            print(
                f"latencylab: the UI profile cannot be written to {self._path}: {error.strerror or error}",
                file=sys.stderr,
            )
