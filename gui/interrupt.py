"""Ctrl+C in the terminal that started the window closes it as its close button does.

Qt's event loop runs in C++, so Python's own SIGINT handler (KeyboardInterrupt) waits until some Python code runs,
and then raises inside whichever slot that is: the window went on with a traceback. Python writes each signal's
number to a wakeup socket instead, whose notifier wakes the loop; the handler then closes the window, and the
close stops the engine, threads and timers in the usual order.
"""

from __future__ import annotations

import contextlib
import signal
import socket

from PySide6.QtCore import QObject, QSocketNotifier, Slot
from PySide6.QtWidgets import QWidget


class CloseOnInterrupt(QObject):
    """Installed for the window's life; interrupted says whether Ctrl+C closed it."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._window = window
        self.interrupted = False
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._previous_handler = signal.signal(signal.SIGINT, self._on_interrupt)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_wakeup)

    @Slot()
    def _on_wakeup(self) -> None:
        # Reading the signal's byte is all: the interpreter runs the pending handler on its way back from here.
        with contextlib.suppress(OSError):
            self._reader.recv(64)

    def exit_status(self, status: int) -> int:
        """The loop's status, or the shell's for a process ended by Ctrl+C (128 + SIGINT, as `ask` exits)."""
        return 128 + signal.SIGINT if self.interrupted else status

    def _on_interrupt(self, signum, frame) -> None:
        self.interrupted = True
        self._window.close()

    def restore(self) -> None:
        """The process's signal handling as it was, once the loop has ended."""
        self._notifier.setEnabled(False)
        signal.signal(signal.SIGINT, self._previous_handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()
