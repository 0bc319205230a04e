"""The metered requests running through the proxy now; each learns the most others that ran beside it."""

from __future__ import annotations

from core.proxy.exchange import Exchange


class InFlight:
    def __init__(self) -> None:
        self._running: dict[int, Exchange] = {}

    def enter(self, exchange: Exchange) -> None:
        others = len(self._running)
        exchange.in_flight_at_start = exchange.max_in_flight = others
        for running in self._running.values():
            # Each running one now has `others` beside it: the ones before and this new one, less itself.
            running.max_in_flight = max(running.max_in_flight, others)
        self._running[exchange.id] = exchange

    def leave(self, exchange: Exchange) -> None:
        self._running.pop(exchange.id, None)

    def __len__(self) -> int:
        return len(self._running)
