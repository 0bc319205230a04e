"""The prompt cache: a chat's keys and values kept between turns, so a reply prefills only what is new.

A decoder holds one live KV cache. Its PromptCache remembers which tokens that cache holds, and for which
chat. A new prompt reuses the live cache up to the first token where the two differ; only the rest is
prefilled (as llama.cpp's server does with cache_prompt, and vLLM with automatic prefix caching). The last
prompt token is always computed again, since its logits start the reply.

Switching chats does not throw a chat's cache away: the live cache is first set aside, copied into a store
of saved caches (least recently used first out, bounded in bytes), and a chat that comes back is copied in
again. Work that overwrites the live cache for its own ends (a lab run, a batch of sequences) sets it aside
the same way, so a chat never sees another's keys.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from core.settings import prompt_cache_budget

ANONYMOUS = ""  # the chat of callers that name none (`ask`, one `latencylab chat`)


_Saved = TypeVar("_Saved")  # a decoder's own copy of its cache: tensors, or numpy arrays for the C kernels


class KeyValueStore(Protocol[_Saved]):
    """What a decoder offers its prompt cache: the size of a position, and copies of the live cache."""

    def position_bytes(self) -> int: ...

    def copy_cache_out(self, positions: int) -> _Saved: ...

    def copy_cache_in(self, saved: _Saved, positions: int) -> None: ...


@dataclass(frozen=True)
class CacheRequest:
    """What a reply tells the cache: whose chat this is, what the prompt was made from, and whether to use it."""

    chat: str | None = None
    label: object = None
    enabled: bool = True


@dataclass
class CachedState:
    """Keys and values for tokens[0:n], and what those tokens were made from (the prompt's pieces)."""

    tokens: list[int]
    label: object = None
    saved: object = None  # the decoder's copy, for a state set aside; None for the live one
    nbytes: int = 0


@dataclass(frozen=True)
class CacheUse:
    """How a prompt met the cache: reused tokens come from it, the rest is prefilled.

    held: how many tokens the chat's cached state held before this prompt (0 when it had none); label: what
    that state was made from, to word why reuse stopped where it did. status says why nothing was there.
    """

    prompt_tokens: int
    reused: int
    held: int
    label: object
    status: str  # HIT, EMPTY, OTHER_CHAT, EVICTED, OFF
    memory_bytes: int = 0  # the prompt cache's memory as this prompt begins (live allocation and saved chats)

    @property
    def prefilled(self) -> int:
        return self.prompt_tokens - self.reused


HIT = "hit"  # the chat's own cache was there (maybe only partly usable)
EMPTY = "empty"  # nothing cached since the model was loaded
OTHER_CHAT = "other"  # the live cache held another chat, and this one had none saved
EVICTED = "evicted"  # this chat's saved cache was dropped to stay within the bound
OFF = "off"  # the prompt cache is switched off for this reply


def common_prefix(first: list[int], second: list[int]) -> int:
    """How many tokens at the start the two prompts share: what a cache holding one can reuse for the other."""
    length = min(len(first), len(second))
    for index in range(length):
        if first[index] != second[index]:
            return index
    return length


@dataclass
class PromptCache:
    store: KeyValueStore[Any]
    budget_bytes: int = 0  # 0: the loaded model's bound (core/settings.py prompt_cache_budget), set on creation
    live: CachedState = field(default_factory=lambda: CachedState([]))
    live_chat: str | None = None  # None: the live cache holds nothing reusable
    saved: OrderedDict[str, CachedState] = field(default_factory=OrderedDict)
    evicted: set = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.budget_bytes:
            from core.model.memory_check import available_memory_bytes

            self.budget_bytes = prompt_cache_budget(self.store.position_bytes(), available_memory_bytes())

    @property
    def budget_positions(self) -> int:
        """The bound in positions of this model: how long a history (or how many chats' together) is kept."""
        return self.budget_bytes // max(1, self.store.position_bytes())

    # -- a reply's prompt ---------------------------------------------------------------------------

    def begin(self, chat: str | None, tokens: list[int], label: object = None, enabled: bool = True) -> CacheUse:
        """Arrange the live cache for this prompt and say how many of its tokens it already holds.

        After this, the live cache holds exactly tokens[:reused]; the caller prefills the rest from there
        and reports each extension (extend) or an abandoned pass (cut).
        """
        chat = ANONYMOUS if chat is None else chat
        if not enabled:
            self.set_aside()
            self.live = CachedState([], label)
            return CacheUse(len(tokens), 0, 0, None, OFF, self.memory_bytes)
        if self.live_chat != chat:
            other = self.live if self.live_chat is not None else CachedState([])
            self.set_aside()
            status = EVICTED if chat in self.evicted else (OTHER_CHAT if other.tokens else EMPTY)
            held, previous = 0, None
            saved = self.saved.pop(chat, None)
            if saved is not None:
                self.store.copy_cache_in(saved.saved, len(saved.tokens))
                self.live = CachedState(saved.tokens, saved.label)
                status, held, previous = HIT, len(saved.tokens), saved.label
            else:
                # The live cache still holds the other chat's tokens (saved now as well): a shared start,
                # such as the same system prompt, is reused from it.
                self.live = CachedState(list(other.tokens))
        else:
            status, held, previous = (HIT if self.live.tokens else EMPTY), len(self.live.tokens), self.live.label
        self.evicted.discard(chat)
        reused = min(common_prefix(self.live.tokens, tokens), max(len(tokens) - 1, 0))
        self.live = CachedState(self.live.tokens[:reused], label)
        self.live_chat = chat
        return CacheUse(len(tokens), reused, held, previous, status, self.memory_bytes)

    def extend(self, tokens: list[int]) -> None:
        """These tokens' keys and values are now in the live cache, after the ones it held."""
        self.live.tokens.extend(tokens)

    def cut(self, length: int) -> None:
        """A pass was abandoned: only the first `length` positions are whole in every layer."""
        del self.live.tokens[length:]

    # -- other work on the same cache -------------------------------------------------------------

    def set_aside(self) -> None:
        """Save the live cache under its chat before something else overwrites it; the live one is then empty."""
        chat, state = self.live_chat, self.live
        self.live_chat, self.live = None, CachedState([])
        if chat is None or not state.tokens:
            return
        copy = self.store.copy_cache_out(len(state.tokens))
        state = CachedState(list(state.tokens), state.label, copy, len(state.tokens) * self.store.position_bytes())
        if state.nbytes > self.budget_bytes:
            self.evicted.add(chat)
            return
        self.saved.pop(chat, None)
        self.saved[chat] = state
        self.evicted.discard(chat)
        while self.saved_bytes > self.budget_bytes:
            oldest, _ = self.saved.popitem(last=False)
            self.evicted.add(oldest)

    def clear(self) -> None:
        self.live, self.live_chat = CachedState([]), None
        self.saved.clear()
        self.evicted.clear()

    @property
    def saved_bytes(self) -> int:
        return sum(state.nbytes for state in self.saved.values())

    @property
    def live_bytes(self) -> int:
        return len(self.live.tokens) * self.store.position_bytes()

    @property
    def memory_bytes(self) -> int:
        """What the cache holds in memory: the live KV cache as allocated (its capacity), plus the saved ones."""
        return getattr(self.store, "capacity", 0) * self.store.position_bytes() + self.saved_bytes
