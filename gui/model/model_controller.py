"""The window's model: loading and reloading it on a relay thread, and the facts the status bar shows."""

from __future__ import annotations

from PySide6.QtCore import QObject, QThread, Signal, Slot

from core.model.loader import LoadedModel
from core.model.source import EMBEDDED_SPEC
from gui.model.loader_worker import LoadRequest, ModelLoader
from gui.thread_exit import end_thread


class ModelController(QObject):
    """Owns the loaded model. load() is refused while a load runs; a failed load keeps the previous model."""

    load_requested = Signal(object)     # LoadRequest, to the loader's thread
    load_progressed = Signal(float, str)
    model_loaded = Signal(object)       # LoadedModel
    load_failed = Signal(str)

    def __init__(self, trust_remote_code: bool = False, allow_pickle: bool = False, parent=None):
        super().__init__(parent)
        self.trust_remote_code = trust_remote_code
        self.allow_pickle = allow_pickle
        self.loaded: LoadedModel | None = None
        self.loading = False
        self._closing = False
        # It only relays: load_model hops onto core's compute thread, where the model will generate.
        self.load_relay_thread = QThread(self)
        self.load_relay_thread.setObjectName("latencylab-load-relay")
        self.loader = ModelLoader()
        self.loader.moveToThread(self.load_relay_thread)
        self.load_requested.connect(self.loader.load)
        self.loader.progress_changed.connect(self._on_progress)
        self.loader.loaded.connect(self.accept_model)
        self.loader.failed.connect(self._on_failed)
        self.load_relay_thread.start()

    def load(self, spec: str, dtype: str) -> bool:
        if self.loading:
            return False
        self.loading = True
        self.load_requested.emit(LoadRequest(None if spec == EMBEDDED_SPEC else spec, dtype,
                                             trust_remote_code=self.trust_remote_code,
                                             allow_pickle=self.allow_pickle))
        return True

    @Slot(object)
    def accept_model(self, loaded: LoadedModel) -> None:
        """The loader's result; tests hand an already loaded model here too."""
        if self._closing:
            return
        self.loading = False
        self.loaded = loaded
        self.model_loaded.emit(loaded)

    def facts(self, decode_loop: str) -> tuple[str, str]:
        """(status-bar line, its tooltip) for the loaded model with the loop replies will run on."""
        if self.loaded is None:
            return "no model loaded", ""
        from core.generation.decode.choice import loop_for

        facts = self.loaded.describe()
        loop, why_not_lean = loop_for(self.loaded.model, decode_loop)
        line = (f"{facts['model']} · {facts['parameters'] / 1e6:.0f}M params · {facts['dtype']} · "
                f"{facts['weight_bytes'] / 1e6:.0f} MB weights · {facts['device']} · "
                + ("lean decode loop" if loop == "lean" else "generate() loop"))
        return line, f"Falls back to generate(): {why_not_lean}." if why_not_lean else ""

    def shutdown(self, wait_ms: int) -> None:
        """A load cannot be interrupted: a thread still inside one is detached, not joined (gui/thread_exit.py)."""
        self._closing = True
        end_thread(self.load_relay_thread, self.loader, wait_ms)

    @Slot(float, str)
    def _on_progress(self, fraction: float, message: str) -> None:
        if not self._closing:
            self.load_progressed.emit(fraction, message)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        if self._closing:
            return
        self.loading = False
        self.load_failed.emit(message)
