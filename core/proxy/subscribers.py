"""Who hears of the proxy's requests: callbacks, called on the proxy's own thread, each kept from breaking the rest."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from core.proxy.record import ProxyEvent

Subscriber = Callable[[ProxyEvent], None]


class Subscribers:
    """A callback must return quickly (it runs between the proxy's chunks): a window hands each event to its own
    thread (a queued signal); a log writes one line."""

    def __init__(self) -> None:
        self._callbacks: list[Subscriber] = []
        self._lock = threading.Lock()
        self._failed: set[int] = set()

    def add(self, callback: Subscriber) -> Callable[[], None]:
        """Hear every event from now on; the returned function stops it."""
        with self._lock:
            self._callbacks = [*self._callbacks, callback]

        def remove() -> None:
            with self._lock:
                self._callbacks = [known for known in self._callbacks if known is not callback]

        return remove

    def send(self, event: ProxyEvent) -> None:
        for callback in self._callbacks:  # a copy is swapped in on change: no lock on the hot path
            try:
                callback(event)
            except Exception as error:  # noqa: BLE001 - a listener's bug must not end the proxy's requests
                if id(callback) not in self._failed:
                    self._failed.add(id(callback))
                    print(f"latencylab proxy: a listener failed ({type(error).__name__}: {error})", file=sys.stderr)
