"""Runs lab sweeps on its own QThread and reports progress, each finished row, and the final results."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal, Slot

from core.lab.config import LabConfig
from core.model.loader import LoadedModel, load_model
from core.progress import ProgressCallback


@dataclass(frozen=True)
class LabRequest:
    """What to run, and the event that cancels it: made per run by the GUI thread, so a cancel sent before
    the worker even starts the run still counts."""

    config: LabConfig
    cancel: threading.Event = field(default_factory=threading.Event)


class LabWorker(QObject):
    """Lives on a QThread; run() blocks that thread for the whole lab run. Cancel by setting the request's event."""

    progress_changed = Signal(float, str)
    row_measured = Signal(str, object)  # sweep name, row dict
    finished = Signal(object)           # core.lab.results.LabResults, also when cancelled or stopped by an error
    failed = Signal(str)                # the run broke in a way the runner could not record

    def __init__(self) -> None:
        super().__init__()
        # The model the prompt and batch sweeps used last, so that running again does not load it again.
        self._model: LoadedModel | None = None
        self._model_key: tuple | None = None
        self._wanted_key: tuple | None = None

    @Slot(object)
    def run(self, request: LabRequest) -> None:
        config = request.config
        self._wanted_key = (config.model, config.dtype, config.device)
        reusable = self._model if self._model_key == self._wanted_key else None
        # Imported here, on the lab's thread: the sweeps pull in torch and transformers, which would
        # otherwise delay the window's first paint by seconds.
        from core.lab.runner import LabObserver, run_lab

        observer = LabObserver(progress=self.progress_changed.emit, row_measured=self._emit_row)
        try:
            results = run_lab(config, loaded=reusable, observer=observer, cancel=request.cancel, loader=self._load)
        except Exception as error:  # noqa: BLE001 - the tab must stay usable whatever went wrong
            self.failed.emit(f"{type(error).__name__}: {error}")
            return
        self.finished.emit(results)

    def _emit_row(self, sweep: str, row: dict) -> None:
        self.row_measured.emit(sweep, dict(row))

    def _load(self, spec: str | None, *, device: str, dtype: str, progress: ProgressCallback) -> LoadedModel:
        loaded = load_model(spec, device=device, dtype=dtype, progress=progress)
        if (spec, dtype, device) == self._wanted_key:
            self._model, self._model_key = loaded, self._wanted_key
        return loaded
