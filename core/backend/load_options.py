"""How a model is loaded, the same for the chat, a lab run, a race and the CLI: what to trust, and a server's access."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoadOptions:
    trust_remote_code: bool = False  # a model folder's own Python code may run
    allow_pickle: bool = False  # pickle checkpoints (.bin) may be read
    # A server's key travels only over the engine's private pipe and is never shown (repr=False keeps it out of logs).
    api_key: str | None = field(default=None, repr=False)
    server_timeout_s: float | None = None  # None: the setting's default

    @classmethod
    def from_args(cls, args) -> LoadOptions:
        """From the CLI's flags (an API key comes from the environment there, read where the server is reached)."""
        return cls(
            trust_remote_code=getattr(args, "trust_remote_code", False),
            allow_pickle=getattr(args, "allow_pickle", False),
            server_timeout_s=getattr(args, "server_timeout", None),
        )


DEFAULT_LOAD_OPTIONS = LoadOptions()  # nothing risky allowed, no key, the default timeout
