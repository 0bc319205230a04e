"""Why a prompt could reuse only part of what the prompt cache held, in words a chat's user recognises."""

from __future__ import annotations

from core.chats.session import PromptPieces


def break_reason(old: PromptPieces | None, new: PromptPieces | None, at: int) -> str:
    """One line for a reuse that stopped at prompt token `at`, inside what the cache held.

    old: what the cached tokens were made from (their prompt; the reply generated after it follows it in the
    cache); new: this prompt's pieces. Messages are numbered as the chat numbers them, from 1.
    """
    where = f"at token {at:,}"
    if old is None or new is None:
        return f"the prompt differs from the cached one {where}"
    if old.system_prompt != new.system_prompt:
        return f"system prompt changed {where}"
    if new.dropped > old.dropped:
        return f"front trimmed to fit the context {where}"
    if new.dropped < old.dropped:
        return f"older messages came back into the prompt {where}"
    shared = min(len(old.messages), len(new.messages))
    for index in range(shared):
        if old.messages[index] == new.messages[index]:
            continue
        number = new.dropped + index + 1
        for count in range(1, len(old.messages) - index + 1):
            rest = old.messages[index + count :]  # what followed the deleted messages, up to the old prompt's end
            if rest and new.messages[index : index + len(rest)] == rest:
                span = f"message {number}" if count == 1 else f"messages {number}-{number + count - 1}"
                return f"{span} deleted {where}"
        role = "your message" if new.messages[index][0] == "user" else f"{new.messages[index][0]} message"
        return f"{role} {number} edited {where}"
    if len(new.messages) < len(old.messages):
        return f"message {new.dropped + len(new.messages) + 1} deleted {where}"
    # The messages agree: the break lies in the reply the cache holds after the old prompt, whose text
    # tokenises differently from the tokens that were generated (or was edited before this prompt).
    return f"the last reply reads back as other tokens than were generated {where}"
