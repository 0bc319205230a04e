"""Python's cycle collector, run only on the GUI thread: a Qt object freed on a worker thread deadlocks PySide.

CPython collects cycles on whichever thread happens to allocate. When a cycle held a Qt object and a
worker thread (the engine's, the chat saver's) tripped the collection, the object's C++ destructor
ran there while Shiboken deleted its children on the GUI thread; each waited on the other's lock and
the app froze (seen in the suite: QObject::~QObject on the compute thread against
BindingManager::runDeletionInMainThread). So automatic collection is off while a window lives, and
this timer collects on the GUI thread instead: the young generations every tick, all of them less often.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer, Slot

TICK_MS = 1000
FULL_EVERY_TICKS = 30


class GuiThreadCollector(QObject):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._collect)
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
        gc.collect(2 if self._ticks % FULL_EVERY_TICKS == 0 else 1)
