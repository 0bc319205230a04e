"""What the window knew about a reply, as a saved chat keeps it beside the trace: the "context" of chat_schema.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.chats.chat_schema import CHAT_SETTINGS, REPLY_CONTEXT, check_fields

# Keys whose value may be null: a reply states them once it ends, so they are always written. The others are
# written only once known: null is not a value the schema lets them hold.
NULLABLE = tuple(key for key, kinds in REPLY_CONTEXT.items() if type(None) in kinds)


@dataclass(frozen=True)
class ReplyContext:
    """None means not recorded: a reply cut before its prompt was accepted has no decode loop, and files from
    before a key existed lack it."""

    streaming: bool | None = None
    settings: dict | None = None  # GenerationSettings.to_dict(), as the reply ran
    decode_loop: str | None = None  # stated when the engine accepted the prompt
    notice: str | None = None  # stated with the decode loop: e.g. older turns left out to fit
    interrupted: bool | None = None  # True: the stream was cut mid-reply (kept, marked as such)
    message_index: int | None = None  # the assistant message it wrote; None when it wrote none
    after_message: int | None = None  # the last message before it: what it answered
    model: str | None = None
    extra: dict = field(default_factory=dict)  # keys this version does not know: kept, never read, written back

    @property
    def streamed(self) -> bool:
        """Whether the reply streamed; files from before it was recorded were all streamed."""
        return self.streaming is not False

    def to_dict(self) -> dict:
        """The keys a saved chat has always written (the schema's order), then the unknown ones it was read with."""
        written = {key: getattr(self, key) for key in REPLY_CONTEXT}
        known = {key: value for key, value in written.items() if value is not None or key in NULLABLE}
        return {**known, **self.extra}

    @classmethod
    def from_dict(cls, value: Any, where: str) -> ReplyContext:
        """value checked against REPLY_CONTEXT (and its settings against CHAT_SETTINGS); ChatFileError naming the
        first field that is wrong."""
        context = check_fields(value, REPLY_CONTEXT, where)
        if "settings" in context:
            check_fields(context["settings"], CHAT_SETTINGS, f"{where}.settings")
        known = {key: context[key] for key in REPLY_CONTEXT if key in context}
        return cls(**known, extra={key: item for key, item in context.items() if key not in REPLY_CONTEXT})
