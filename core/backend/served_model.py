"""What the engine holds once a model is loaded, local or on a server: one Protocol both kinds meet."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from core.generation.reply import Reply
from core.model.facts import ModelFacts

if TYPE_CHECKING:
    from core.generation.request import ReplyRequest


class PromptFacts(Protocol):
    """What a prepared reply knows of its prompt: a server's count comes later, with its usage (0 until then)."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def notice(self) -> str | None:
        """Why the prompt is not the whole chat (old messages left out), or None."""
        ...


class ServedModel(Protocol):
    """A LocalModel (weights in this process) or a RemoteModel (a server's): what every caller may ask of either.
    Each answers the verbs its own way; is_remote tells them apart, typed, where only one has an ability (a
    tokenizer, EOS ids, the lab's local sweeps)."""

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

    def prepare(
        self, request: ReplyRequest, *, streaming: bool = True, ignore_eos: bool = False
    ) -> tuple[Reply, PromptFacts]:
        """(the reply, not started; its prompt facts: prompt_tokens and notice). Raises LatencyLabError when it
        cannot be asked."""
        ...

    def loop_refusal(self) -> str | None:
        """Why replies do not run on Latency Lab's lean loop, or None where they do."""
        ...

    def set_cache_aside(self) -> None:
        """Let the next reply reuse nothing this process's prompt cache holds (a server's own cannot be emptied)."""
        ...

    def warm(
        self, request: ReplyRequest, *, streaming: bool = True, progress: Callable[[object], None] | None = None
    ) -> str:
        """Put the history before the request's last message in the prompt cache, untimed; says what it did."""
        ...


if TYPE_CHECKING:  # mypy proves both kinds meet the Protocol
    from core.generation.local_model import LocalModel
    from core.remote.connect import RemoteModel

    _KINDS: tuple[type[ServedModel], ...] = (LocalModel, RemoteModel)
