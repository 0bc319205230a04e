"""How a sweep stops: a cancel event checked between measurements, and the errors a sweep raises."""

from __future__ import annotations

import threading

from core.errors import LatencyLabError


class LabCancelled(Exception):
    """Raised inside a sweep once the cancel event is set; the runner keeps every row finished before it."""


class MeasurementError(LatencyLabError):
    """A measurement could not be taken (the model failed mid-run, or the prompt does not fit)."""


def check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise LabCancelled()
