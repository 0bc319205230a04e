"""Python's cycle collector, run only on the GUI thread: a Qt object freed on a worker thread deadlocks PySide.

CPython collects cycles on whichever thread happens to allocate. When a cycle held a Qt object and a
worker thread (the engine's, the chat saver's) tripped the collection, the object's C++ destructor
ran there while Shiboken deleted its children on the GUI thread; each waited on the other's lock and
the app froze (seen in the suite: QObject::~QObject on the compute thread against
BindingManager::runDeletionInMainThread). So automatic collection is off while a window lives, and
this timer collects on the GUI thread instead: the young generations every tick, all of them less often.

A full collection walks every object the window holds (35 ms with no model running, 81,000 objects),
so it waits while a reply streams: it would stall the stream's frames and take that CPU from decode.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer, Slot

TICK_MS = 1000
FULL_EVERY_TICKS = 30


class GuiThreadCollector(QObject):
    """busy: whether a full collection should wait (a reply is streaming); asked when one is due."""

    def __init__(
        self, parent=None, busy=lambda: False, tick_ms: int = TICK_MS, full_every_ticks: int = FULL_EVERY_TICKS
    ):
        super().__init__(parent)
        self.busy = busy
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self._collect)
        self._full_every_ticks = full_every_ticks
        self._ticks = 0
        self._was_enabled = False

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Collect once more here, then hand collection back as it was."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    @Slot()
    def _collect(self) -> None:
        self._ticks += 1
        full_due = self._ticks >= self._full_every_ticks
        if full_due and not self.busy():
            self._ticks = 0
            gc.collect(2)
        else:
            gc.collect(1)
