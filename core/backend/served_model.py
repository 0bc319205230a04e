"""What the engine holds once a model is loaded, local or on a server: one Protocol both kinds meet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.model.facts import ModelFacts


class ServedModel(Protocol):
    """A LoadedModel (weights in this process) or a RemoteModel (a server's): what every caller may ask of either.
    is_remote tells them apart, typed, where their abilities differ (a tokenizer, EOS ids, a decode loop)."""

    @property
    def is_remote(self) -> bool: ...

    @property
    def name(self) -> str: ...

    @property
    def dtype(self) -> str: ...

    @property
    def notice(self) -> str | None:
        """A line to say once the model is ready, or None."""
        ...

    def describe(self) -> ModelFacts: ...

    @property
    def device(self) -> str:
        """Where the weights are: "cpu", "cuda", or "remote"."""
        ...

    def serves(self, spec: str | None, dtype: str, device: str) -> bool:
        """Whether loading spec at dtype on device would give this model (a race reuses the chat's)."""
        ...

    def close(self) -> None:
        """Let go of what the model holds open (a server's connections) once it is replaced."""
        ...

    def end_suppressors(self) -> tuple:
        """Logits processors that keep a reply from ending before max new tokens (benchmarks compare equal lengths)."""
        ...


if TYPE_CHECKING:  # mypy proves both kinds meet the Protocol
    from core.model.loader import LoadedModel
    from core.remote.connect import RemoteModel

    _KINDS: tuple[type[ServedModel], ...] = (LoadedModel, RemoteModel)
