"""The prompt cache on the real embedded model, as a chat uses it: counts, reasons in words, and replies equal to
a fresh full prefill's, for regenerate, edits, deletions, a changed system prompt, a trimmed front, other chats,
a lab run between turns and a Stop during prefill; on the native kernels (the default) and on float32's torch loop.

Both compute each position the same way whatever the size of its pass (the kernels' prompt GEMM and their decode
step meet in one canonical arithmetic), so a cached reply is the fresh one token for token."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from core.chats.session import Message
from core.generation.request import ReplyRequest, prepare_reply
from core.settings import GenerationSettings

pytestmark = pytest.mark.model

SYSTEM = "You are a helpful assistant. Answer in one short sentence."
REPLY_TOKENS = 12
# The real model is loaded once per session, its saved caches with it: each Chat gets an id no earlier test used.
CHAT_NUMBERS = itertools.count()


class Chat:
    """A chat's messages, answered greedily with the cache, each reply checked against a fresh prefill."""

    def __init__(self, loaded, chat_id, system=SYSTEM):
        self.loaded, self.chat_id, self.system = loaded, f"{chat_id}-{next(CHAT_NUMBERS)}", system
        self.messages: list[Message] = []

    def ask(self, text: str | None = None, cache: bool = True):
        if text is not None:
            self.messages.append(Message("user", text))
        trace = reply(self.loaded, self.system, self.messages, self.chat_id, cache)
        self.messages.append(Message("assistant", trace.text))
        return trace

    def regenerate(self):
        self.messages.pop()
        return self.ask()


def reply(loaded, system, messages, chat_id, cache=True, max_new_tokens=REPLY_TOKENS):
    settings = GenerationSettings(max_new_tokens=max_new_tokens, prompt_cache=cache)
    generation, prompt = prepare_reply(loaded, ReplyRequest(system, tuple(messages), settings, chat_id=chat_id))
    trace = generation.run_to_end()
    trace.prompt_ids = list(prompt.input_ids)  # for the near-tie check below
    return trace


def fresh(loaded, chat: Chat):
    """The same prompt prefilled whole (cache off for this reply): the reference reply."""
    return reply(loaded, chat.system, chat.messages[:-1], chat.chat_id, cache=False)


@pytest.fixture(params=["native", "float32"])
def loaded(request, native_model, embedded_model):
    return embedded_model if request.param == "float32" else native_model


def same_as_fresh(loaded, chat, trace):
    reference = fresh(loaded, chat)
    assert trace.token_ids == reference.token_ids, (trace.cache_reason, trace.text, reference.text)


def test_a_chat_prefills_only_each_new_turn(loaded):
    chat = Chat(loaded, "turns")
    first = chat.ask("Name a colour.")
    assert first.cached_tokens in (0, None) or "nothing cached" in first.cache_reason or first.cached_tokens >= 0
    second = chat.ask("Name another one.")
    assert second.cached_tokens > first.prompt_tokens and second.prefilled_tokens < 20
    assert second.cache_reason == "the chat's history was reused from the cache"
    same_as_fresh(loaded, chat, second)
    third = chat.ask("And a third?")
    assert third.prompt_tokens - third.cached_tokens == third.prefilled_tokens < 20
    same_as_fresh(loaded, chat, third)


def test_regenerate_reuses_the_whole_prompt(loaded):
    chat = Chat(loaded, "regenerate")
    chat.ask("Name a fruit.")
    again = chat.regenerate()
    assert again.prefilled_tokens == 1  # the last prompt token starts the reply, so it is computed again
    same_as_fresh(loaded, chat, again)


def test_an_edited_or_deleted_message_breaks_reuse_there_and_says_so(loaded):
    chat = Chat(loaded, "edits")
    chat.ask("Name a river.")
    chat.ask("Name a mountain.")
    chat.messages[0] = Message("user", "Name a lake.")  # edited, then answered anew at the end
    edited = chat.ask("Name a sea.")
    assert edited.cache_reason.startswith("your message 1 edited at token ")
    assert edited.cache_break_at == edited.cached_tokens > 0
    same_as_fresh(loaded, chat, edited)
    del chat.messages[2:4]  # the second turn deleted
    deleted = chat.ask("Name an ocean.")
    assert deleted.cache_reason.startswith("messages 3-4 deleted at token "), deleted.cache_reason
    same_as_fresh(loaded, chat, deleted)


def test_a_changed_system_prompt_breaks_reuse_at_its_token(loaded):
    chat = Chat(loaded, "system")
    chat.ask("Name a bird.")
    chat.system = "You are a terse assistant."
    changed = chat.ask("Name a fish.")
    assert changed.cache_reason.startswith("system prompt changed at token ")
    assert 0 < changed.cache_break_at < 20  # the template's opening tokens are still reused
    same_as_fresh(loaded, chat, changed)


def test_switching_chats_keeps_each_ones_cache(loaded):
    one, two = Chat(loaded, "one"), Chat(loaded, "two")
    one.ask("Name a tree.")
    other = two.ask("Name a flower.")
    assert "a new chat: no history of its own" in other.cache_reason and other.cached_tokens > 0  # the shared start
    back = one.ask("Name a bush.")
    assert back.cache_reason == "the chat's history was reused from the cache"
    assert back.cached_tokens > back.prompt_tokens - 20
    same_as_fresh(loaded, one, back)


def test_a_lab_run_between_turns_leaves_the_chat_cache_whole(loaded):
    from core.lab.config import LabConfig
    from core.lab.runner import run_lab

    chat = Chat(loaded, "lab")
    chat.ask("Name a planet.")
    run_lab(
        LabConfig(sweeps=("prompt", "batch"), prompt_words=(5,), new_tokens=3, repeats=1, batch_sizes=(2,)),
        loaded=loaded,
    )
    after = chat.ask("Name a star.")
    assert after.cache_reason == "the chat's history was reused from the cache"
    same_as_fresh(loaded, chat, after)


def test_a_chat_longer_than_the_context_is_trimmed_at_the_front_and_says_so(loaded):
    small = dataclasses.replace(loaded, context_window=200)
    chat = Chat(small, "long")
    reasons = []
    for turn in range(6):
        trace = chat.ask(f"Tell me fact number {turn} about the sea, in a long sentence please.")
        reasons.append(trace.cache_reason)
        same_as_fresh(small, chat, trace)
    assert any(reason.startswith("front trimmed to fit the context at token ") for reason in reasons), reasons


def test_a_stop_during_prefill_leaves_the_cache_consistent(loaded):
    chat = Chat(loaded, "stop")
    chat.ask("Name a country.")
    chat.messages.append(Message("user", "Now list ten cities in it, with a long description of each one. " * 4))
    settings = GenerationSettings(max_new_tokens=REPLY_TOKENS)
    generation, _ = prepare_reply(loaded, ReplyRequest(SYSTEM, tuple(chat.messages), settings, chat_id="stop"))
    stopped = generation.run_to_end(lambda event: generation.stop() if getattr(event, "layers_done", 0) == 3 else None)
    assert stopped.stop_reason == "stopped" and stopped.output_tokens == 0
    after = chat.ask()
    assert after.cached_tokens > 0
    same_as_fresh(loaded, chat, after)
