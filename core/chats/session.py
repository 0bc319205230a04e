"""Chat history with roles and a system prompt, rendered through the model's own chat template."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import PromptTooLongError

@dataclass
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class PromptBuild:
    """The token ids to send, and how many of the oldest messages had to be left out to fit."""

    input_ids: list[int]
    dropped_messages: int

    @property
    def prompt_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def notice(self) -> str | None:
        if not self.dropped_messages:
            return None
        return (f"The chat no longer fits the model's context window: the oldest {self.dropped_messages} "
                f"message(s) were left out of this prompt (they stay in the transcript).")


@dataclass
class ChatSession:
    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)

    def add_user(self, text: str) -> None:
        self.messages.append(Message("user", text))

    def add_assistant(self, text: str) -> None:
        self.messages.append(Message("assistant", text))

    def clear(self) -> None:
        self.messages.clear()

    def can_regenerate(self) -> bool:
        return bool(self.messages) and any(m.role == "user" for m in self.messages)

    def drop_last_reply(self) -> str | None:
        """Remove the last assistant reply so the last user message can be answered again."""
        if self.messages and self.messages[-1].role == "assistant":
            return self.messages.pop().content
        return None

    def template_messages(self, skip: int = 0) -> list[dict]:
        rendered = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return rendered + [m.to_dict() for m in self.messages[skip:]]

    def build_prompt(self, tokenizer: Any, context_window: int, max_new_tokens: int) -> PromptBuild:
        """Tokenize the history, leaving out the oldest turns until prompt + reply fit the window."""
        budget = context_window - max_new_tokens
        if not self.messages:
            raise ValueError("there is no message to answer")
        last_user = max(i for i, m in enumerate(self.messages) if m.role == "user")
        # Check the smallest prompt first, so a huge paste is refused after one tokenization.
        shortest = render_prompt_ids(tokenizer, self.template_messages(last_user))
        if len(shortest) > budget:
            raise PromptTooLongError(len(shortest), max(budget, 0))
        skip = 0
        while True:
            ids = render_prompt_ids(tokenizer, self.template_messages(skip))
            if len(ids) <= budget:
                return PromptBuild(ids, skip)
            if skip >= last_user:
                raise PromptTooLongError(len(ids), max(budget, 0))
            skip = self._next_turn_start(skip, last_user)

    def _next_turn_start(self, skip: int, last_user: int) -> int:
        """Skip past the oldest whole turn, so the prompt never starts with an orphaned reply."""
        skip += 1
        while skip < last_user and self.messages[skip].role != "user":
            skip += 1
        return skip


def render_prompt_ids(tokenizer: Any, messages: list[dict]) -> list[int]:
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        # Base models ship no template; a plain transcript is the conventional stand-in.
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
    return tokenizer(text, add_special_tokens=False)["input_ids"]
