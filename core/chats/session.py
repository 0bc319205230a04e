"""Chat history with roles and a system prompt, rendered through the model's own chat template."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.chats.context_fit import check_fits, fits, prompt_budget
from core.chats.prompt_ids import content_token_counts, prompt_ids, template_token_count
from core.errors import MessageTooLongError

# A million tokens, the largest context windows there are, is about 4 million characters: a longer message fits no
# model. Checked before a message is tokenised or sent (a 200 MB line on `chat`'s stdin went to a server whole).
MAX_MESSAGE_CHARS = 4_000_000


def check_message_sizes(system_prompt: str, messages) -> None:
    """MessageTooLongError for the first text longer than MAX_MESSAGE_CHARS."""
    for text in (system_prompt, *(message.content for message in messages)):
        if len(text) > MAX_MESSAGE_CHARS:
            raise MessageTooLongError(len(text), MAX_MESSAGE_CHARS)


@dataclass
class Message:
    role: str
    content: str

    def to_dict(self) -> dict:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class PromptPieces:
    """What a prompt was made from: the system prompt, the messages it holds as (role, content), and how many
    of the chat's oldest messages were left out before them. The prompt cache words its breaks from these."""

    system_prompt: str
    messages: tuple[tuple[str, str], ...]
    dropped: int = 0


@dataclass(frozen=True)
class PromptBuild:
    """The token ids to send, and how many of the oldest messages had to be left out to fit."""

    input_ids: list[int]
    dropped_messages: int
    pieces: PromptPieces | None = None

    @property
    def prompt_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def notice(self) -> str | None:
        if not self.dropped_messages:
            return None
        return (
            f"The chat no longer fits the model's context window: the oldest {self.dropped_messages} "
            f"message(s) were left out of this prompt (they stay in the transcript)."
        )


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
        """Tokenize the history, leaving out the oldest turns until prompt + reply fit the window.

        Each message's content is tokenised once (and cached across prompts), newest first and only as far
        back as could fit; the cut is found by a binary search over turn starts, using the template's own
        tokens plus those counts, and the prompt is rendered once at the end. Re-tokenising the whole
        history per dropped turn was quadratic in the chat's length.
        """
        if not self.messages:
            raise ValueError("there is no message to answer")
        last_user = max(i for i, m in enumerate(self.messages) if m.role == "user")
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        system_count = content_token_counts.counts(tokenizer, [self.system_prompt])[0] if system else 0
        counts, earliest = self._newest_content_counts(
            tokenizer, prompt_budget(max_new_tokens, context_window) - system_count
        )

        def tokens_when_skipping(skip: int) -> int:
            roles = [m["role"] for m in system] + [m.role for m in self.messages[skip:]]
            template_tokens, included = template_token_count(tokenizer, roles)
            content = [system_count] * len(system) + counts[skip:]
            return template_tokens + sum(count for count, kept in zip(content, included) if kept)

        # Messages before `earliest` were never counted: their newer neighbours alone overflow the window.
        starts = [i for i in range(earliest, last_user + 1) if i == 0 or self.messages[i].role == "user"]
        starts = starts or [last_user]
        # Check the smallest prompt first, so a huge paste is refused after one tokenization.
        check_fits(tokens_when_skipping(last_user), max_new_tokens, context_window)
        low, high = 0, len(starts) - 1  # the first start that fits lies in starts[low..high]; starts[high] fits
        while low < high:
            middle = (low + high) // 2
            if fits(tokens_when_skipping(starts[middle]), max_new_tokens, context_window):
                high = middle
            else:
                low = middle + 1
        for skip in starts[low:]:
            # The counts are exact, since the prompt is the same pieces tokenised the same way; verify anyway.
            ids = render_prompt_ids(tokenizer, self.template_messages(skip))
            if fits(len(ids), max_new_tokens, context_window):
                pieces = PromptPieces(
                    self.system_prompt, tuple((m.role, m.content) for m in self.messages[skip:]), skip
                )
                return PromptBuild(ids, skip, pieces)
        check_fits(len(ids), max_new_tokens, context_window)
        raise AssertionError("unreachable: check_fits raised")

    def _newest_content_counts(self, tokenizer: Any, budget: int) -> tuple[list[int], int]:
        """Token counts of the newest messages' contents, going back until they alone exceed the budget.

        Returns the counts (0 for messages never counted) and the index of the oldest message counted, so
        a long chat's older turns are not even tokenised: the work is bounded by the context window.
        """
        counts = [0] * len(self.messages)
        end, total, chunk = len(self.messages), 0, 8
        while end > 0 and total <= budget:
            start = max(0, end - chunk)
            piece = content_token_counts.counts(tokenizer, [m.content for m in self.messages[start:end]])
            counts[start:end] = piece
            total += sum(piece)
            end, chunk = start, min(chunk * 2, 256)
        return counts, end


def render_prompt_ids(tokenizer: Any, messages: list[dict]) -> list[int]:
    """The template's tokens with each content tokenised as plain text (no special tokens from user text)."""
    return prompt_ids(tokenizer, messages)
