"""The window's engine and its model: starting the engine, loading and reloading, restarting after a crash, status facts."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot

from core.backend.load_options import LoadOptions
from core.engine.messages import EngineStopped, LoadModel, ModelFailed, ModelProgress, ModelReady
from core.engine.protocol import Engine
from core.model.source import EMBEDDED_SPEC
from gui.engine_client import EngineClient


def default_engine() -> Engine:
    """The window's engine: its own process, so the window's painting cannot slow the model loop."""
    from core.engine.process import EngineProcess

    return EngineProcess()


class ModelController(QObject):
    """Owns the engine client and what is loaded. A failed load keeps the previous model; a stopped engine is
    restarted, with the same model, by restart() (the next message, or the Restart action, calls it)."""

    load_progressed = Signal(float, str)
    model_ready = Signal(object)  # messages.ModelReady
    load_failed = Signal(str)
    engine_stopped = Signal(str)  # why, in words

    def __init__(
        self,
        engine_factory: Callable[[], Engine] | None = None,
        trust_remote_code: bool = False,
        allow_pickle: bool = False,
        parent=None,
    ):
        super().__init__(parent)
        self._engine_factory = engine_factory or (lambda: default_engine())
        self.trust_remote_code = trust_remote_code
        self.allow_pickle = allow_pickle
        self.ready: ModelReady | None = None
        self.loading = False
        self.stopped_reason: str | None = None  # set while the engine is down
        self._last_load: LoadModel | None = None
        self._closing = False
        self.client = EngineClient(self._engine_factory(), self)
        self.client.model_progressed.connect(self._on_progress)
        self.client.model_ready.connect(self._on_model_ready)
        self.client.model_failed.connect(self._on_failed)
        self.client.engine_stopped.connect(self._on_engine_stopped)

    @property
    def engine(self):
        return self.client.engine

    def load(self, spec: str, dtype: str, api_key: str | None = None, server_timeout_s: float | None = None) -> bool:
        """api_key: a server's key, held only in memory and sent only over the engine's private pipe."""
        if self.loading:
            return False
        request = LoadModel(
            None if spec == EMBEDDED_SPEC else spec,
            dtype,
            options=LoadOptions(self.trust_remote_code, self.allow_pickle, api_key, server_timeout_s),
        )
        if self.stopped_reason is not None:
            self._start_engine()
        self._last_load = request
        self.loading = True
        self.client.send(request)
        return True

    def restart(self, force: bool = False) -> bool:
        """A new engine with the last model, when the engine has stopped; False when there is nothing to do.

        With force (Chat → Restart engine) in any state: an engine still running, stuck, busy or idle, is ended
        first, which reaches the window as EngineStopped (a running reply is kept, marked interrupted)."""
        if force:
            self.client.end_engine("the engine was restarted (Chat → Restart engine)")
        if self.stopped_reason is None or self.loading or (self._last_load is None and not force):
            return False
        self._start_engine()
        if self._last_load is not None:
            self.loading = True
            self.client.send(self._last_load)
        return True

    def accept_model(self, loaded) -> None:
        """Tests: use a model already loaded in this process (in-process engines only)."""
        self.engine.adopt(loaded)
        self.client.drain()

    def facts(self, decode_loop: str) -> tuple[str, str]:
        """(status-bar line, its tooltip) for the loaded model with the loop replies will run on."""
        if self.ready is None:
            return ("engine stopped: " + self.stopped_reason if self.stopped_reason else "no model loaded"), ""
        facts, refusal = self.ready.facts, self.ready.lean_refusal
        if facts.remote:
            return (
                f"{facts.served_model} · {facts.server_kind} server ({facts.protocol}) · {facts.server_url}",
                f"The server serves: {', '.join(facts.served_models)}. Timings over the wire: a "
                "chunk is not a token; tokens are counted from the server's usage.",
            )
        lean = decode_loop == "lean" and refusal is None
        runtime = facts.runtime
        line = (
            f"{facts.model} · {(facts.parameters or 0) / 1e6:.0f}M params · {facts.dtype} · "
            f"{(facts.weight_bytes or 0) / 1e6:.0f} MB weights · {facts.device} · "
            + (runtime or ("lean decode loop" if lean else "generate() loop"))
            + (f" · {facts.precision_note}" if facts.precision_note else "")
        )
        if runtime:
            return line, (
                f"Every decode step runs in {runtime}, straight from the GGUF's own blocks. "
                + (
                    "generate() needs transformers' layers: pick float32, bfloat16, int8 or int4 for it."
                    if decode_loop != "lean"
                    else ""
                )
            )
        return line, f"Falls back to generate(): {refusal}." if decode_loop == "lean" and refusal else ""

    def shutdown(self, wait_ms: int) -> bool:
        """Stop the engine within wait_ms (killed if it does not exit); True when nothing is left running."""
        self._closing = True
        return self.client.close(wait_ms / 1000)

    def _start_engine(self) -> None:
        self.stopped_reason = None
        stopped = self.client.engine
        self.client.attach(self._engine_factory())
        stopped.close(0.1)  # gone already (ended or dead): this closes its socket and reaps it

    @Slot(object)
    def _on_progress(self, progress: ModelProgress) -> None:
        if not self._closing:
            self.load_progressed.emit(progress.fraction, progress.message)

    @Slot(object)
    def _on_model_ready(self, ready: ModelReady) -> None:
        if self._closing:
            return
        self.loading = False
        self.ready = ready
        self.model_ready.emit(ready)

    @Slot(object)
    def _on_failed(self, failed: ModelFailed) -> None:
        if self._closing:
            return
        self.loading = False
        self.load_failed.emit(failed.message)

    @Slot(object)
    def _on_engine_stopped(self, stopped: EngineStopped) -> None:
        if self._closing or stopped.expected:
            return
        self.stopped_reason = stopped.description
        self.ready = None
        was_loading, self.loading = self.loading, False
        self.engine_stopped.emit(stopped.description)
        if was_loading:
            self.load_failed.emit(stopped.description)
