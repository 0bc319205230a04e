"""Load a model on a worker thread and report progress, the loaded model, or a clear failure."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from core.errors import LatencyLabError
from core.model.loader import load_model


@dataclass(frozen=True)
class LoadRequest:
    spec: str | None
    dtype: str
    device: str = "cpu"
    trust_remote_code: bool = False
    allow_pickle: bool = False


class ModelLoader(QObject):
    progress_changed = Signal(float, str)
    loaded = Signal(object)   # core.model.loader.LoadedModel
    failed = Signal(str)

    @Slot(object)
    def load(self, request: LoadRequest) -> None:
        try:
            model = load_model(request.spec, dtype=request.dtype, device=request.device,
                               progress=self.progress_changed.emit, trust_remote_code=request.trust_remote_code,
                               allow_pickle=request.allow_pickle)
        except LatencyLabError as error:
            self.failed.emit(str(error))
            return
        except Exception as error:  # noqa: BLE001 - the window must stay usable whatever went wrong
            self.failed.emit(f"{type(error).__name__}: {error}")
            return
        self.loaded.emit(model)
