"""Fixtures for the proxy's tests: a proxy started in this process and a recorder of what it reports."""

from __future__ import annotations

import threading

import pytest

from core.proxy.proxy_thread import ProxyThread
from core.proxy.record import ProxyEvent, ProxyRecord, RequestFinished


class Recorder:
    """Every event the proxy sends; finished() waits (on a condition, not a sleep) until n requests have ended."""

    def __init__(self) -> None:
        self.events: list[ProxyEvent] = []
        self._changed = threading.Condition()

    def __call__(self, event: ProxyEvent) -> None:
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def finished(self, count: int = 1, timeout_s: float = 20.0) -> list[ProxyRecord]:
        with self._changed:
            done = self._changed.wait_for(lambda: len(self._records()) >= count, timeout_s)
            records = self._records()
        assert done, f"the proxy reported {len(records)} finished requests, not {count}"
        return sorted(records, key=lambda record: record.id)

    def _records(self) -> list[ProxyRecord]:
        return [event.record for event in self.events if isinstance(event, RequestFinished)]


@pytest.fixture
def proxy_to():
    """proxy_to(upstream_url, **options) -> (a listening ProxyThread, its Recorder); stopped after the test."""
    started: list[ProxyThread] = []

    def start(upstream: str, **options) -> tuple[ProxyThread, Recorder]:
        proxy = ProxyThread(upstream, **options)
        recorder = Recorder()
        proxy.subscribe(recorder)
        started.append(proxy.start())
        return proxy, recorder

    yield start
    for proxy in started:
        proxy.stop()
