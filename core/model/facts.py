"""The facts a loaded model states, local or on a server: what the status bar, the meter, exports and the CLI show."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelFacts:
    """Plain, picklable data: it crosses the engine's pipe in ModelReady.

    A server's model leaves the local fields None, and a local one the server's; a server does not say its model's
    size or context window. arithmetic and ceilings stay the plain dicts the roofline reads
    (ArithmeticShape.to_dict(), Ceilings.to_dict()): core.model sits beside core.roofline, not above it.
    """

    model: str
    dtype: str | None = None
    device: str | None = None
    parameters: int | None = None
    weight_bytes: int | None = None
    context_window: int | None = None
    # A local model's.
    precision_note: str | None = None  # a fallback worth knowing, e.g. tensors without a native kernel
    runtime: str | None = None  # what runs the layers when it is not transformers
    arithmetic: dict | None = None  # the shape the roofline counts FLOPs and bytes from (core/model/arithmetic.py)
    ceilings: dict | None = None  # this CPU's ceilings, when a quiet measurement was cached; the engine adds them
    # A server's.
    remote: bool = False
    spec: str | None = None  # the spec that loads this very model again
    server_url: str | None = None
    server_kind: str | None = None
    protocol: str | None = None
    served_model: str | None = None
    served_models: tuple[str, ...] = ()
    timeout_s: float | None = None
    notice: str | None = None  # something the user should read once the server is reached

    def to_dict(self) -> dict:
        """The keys exports, `ask --json` and the Lab's results have always written: a server's model writes all of
        its keys (None included), a local one only what it states."""
        if self.remote:
            return {
                "model": self.model,
                "remote": True,
                "spec": self.spec,
                "server_url": self.server_url,
                "server_kind": self.server_kind,
                "protocol": self.protocol,
                "served_model": self.served_model,
                "served_models": list(self.served_models),
                "dtype": self.dtype,
                "device": self.device,
                "parameters": self.parameters,
                "weight_bytes": self.weight_bytes,
                "context_window": self.context_window,
                "timeout_s": self.timeout_s,
                "notice": self.notice,
            }
        stated = {
            "model": self.model,
            "dtype": self.dtype,
            "device": self.device,
            "parameters": self.parameters,
            "weight_bytes": self.weight_bytes,
            "context_window": self.context_window,
            "precision_note": self.precision_note,
            "runtime": self.runtime,
            "arithmetic": self.arithmetic,
            "ceilings": self.ceilings,
        }
        return {key: value for key, value in stated.items() if value is not None}
