"""A chat whose saved cache was evicted, asked again on the real model: its reply is token for token a fresh prefill's
(issue #36 saw one 0.311 logits off on the native path, when prompts ran on a bfloat16 GEMM)."""

from __future__ import annotations

import pytest

from tests.prompt_cache.test_prompt_cache_chat import Chat, same_as_fresh

pytestmark = pytest.mark.model


@pytest.fixture(params=["native", "float32"])
def loaded(request, native_model, embedded_model):
    return embedded_model if request.param == "float32" else native_model


@pytest.fixture
def nothing_kept_aside(loaded):
    """A saved-cache budget of one byte: every chat set aside is evicted at once."""
    from core.compute_thread import compute_thread
    from core.generation.decode.choice import lean_decoder

    cache = compute_thread().call(lambda: lean_decoder(loaded.model).prompt_cache)
    budget, cache.budget_bytes = cache.budget_bytes, 1
    yield
    cache.budget_bytes = budget


def test_returning_to_an_evicted_chat_replies_as_a_fresh_prefill(loaded, nothing_kept_aside):
    one, two = Chat(loaded, "evicted"), Chat(loaded, "evictor")
    one.ask("Name a tree that grows by the sea, and say why it does well there.")
    two.ask("Name a flower.")  # one's cache is set aside, and evicted at once
    back = one.ask("Name a bush that grows there too.")
    assert back.cached_tokens < back.prompt_tokens - 20, back.cache_reason  # the history was prefilled again
    same_as_fresh(loaded, one, back)
