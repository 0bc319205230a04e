"""The prompt cache keeps a chat's keys between turns: a greedy reply with it is token for token the reply a
fresh full prefill gives, whatever happened in between (on the tiny families, torch's lean loop and the C kernels)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

from core.generation.decode import prompt_cache as pc
from core.generation.decode.kernel_batch import decode_together
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.decode.loop import lean_decode
from core.generation.decode.prompt_cache import CacheRequest, PromptCache
from core.generation.stopping import PassInterrupted
from core.model.loader import load_model
from tests.generation.test_lean_families import FAMILY_CONFIGS, tiny_model

NEW_TOKENS = 12
SYSTEM = list(range(30, 42))  # a "system prompt" the chats share


class ListStore:
    """A store whose cache is a list of tokens, standing in for keys and values."""

    def __init__(self):
        self.cache: list[int] = []
        self.copied_in = 0

    def position_bytes(self) -> int:
        return 10

    def copy_cache_out(self, positions: int):
        return list(self.cache[:positions])

    def copy_cache_in(self, saved, positions: int) -> None:
        self.copied_in += 1
        self.cache[:positions] = saved


def run(cache: PromptCache, store: ListStore, chat, tokens, enabled=True):
    """What a reply does: begin, prefill the rest into the store, report it."""
    use = cache.begin(chat, tokens, label=tuple(tokens), enabled=enabled)
    assert store.cache[: use.reused] == tokens[: use.reused]  # what is reused is really there
    store.cache[use.reused :] = tokens[use.reused :]
    cache.extend(tokens[use.reused :])
    return use


def test_a_continued_chat_reuses_its_history_and_prefills_only_the_new_tokens():
    store = ListStore()
    cache = PromptCache(store)
    first = run(cache, store, "a", SYSTEM + [1, 2, 3])
    assert (first.reused, first.status) == (0, pc.EMPTY)
    second = run(cache, store, "a", SYSTEM + [1, 2, 3, 4, 5])
    assert (second.reused, second.prefilled, second.status) == (15, 2, pc.HIT)


def test_the_last_prompt_token_is_always_computed_again():
    store = ListStore()
    cache = PromptCache(store)
    run(cache, store, "a", [5, 6, 7, 8])
    again = run(cache, store, "a", [5, 6, 7, 8])  # regenerate: the same prompt
    assert (again.reused, again.prefilled) == (3, 1)


def test_switching_chats_sets_one_aside_and_brings_it_back():
    store = ListStore()
    cache = PromptCache(store)
    run(cache, store, "a", SYSTEM + [1, 2, 3])
    other = run(cache, store, "b", SYSTEM + [9, 9])
    assert other.status == pc.OTHER_CHAT and other.reused == len(SYSTEM)  # the shared system prompt
    back = run(cache, store, "a", SYSTEM + [1, 2, 3, 4])
    assert (back.status, back.reused, store.copied_in) == (pc.HIT, 15, 1)
    assert cache.saved_bytes == (len(SYSTEM) + 2) * 10  # b's, set aside in turn


def test_saved_caches_stay_within_their_bound_oldest_out_first():
    store = ListStore()
    cache = PromptCache(store, budget_bytes=250)
    for chat in "abcd":
        run(cache, store, chat, [ord(chat)] * 10)  # 100 bytes each once set aside
    run(cache, store, "e", [1] * 5)
    assert cache.saved_bytes <= 250 and list(cache.saved) == ["c", "d"]
    evicted = run(cache, store, "a", [ord("a")] * 11)
    assert evicted.status == pc.EVICTED and evicted.reused == 0


def test_a_cache_larger_than_the_bound_is_not_kept():
    store = ListStore()
    cache = PromptCache(store, budget_bytes=50)
    run(cache, store, "a", [1] * 10)
    run(cache, store, "b", [2] * 3)
    assert cache.saved_bytes == 0 and run(cache, store, "a", [1] * 11).status == pc.EVICTED


def test_off_reuses_nothing_and_keeps_the_chat_for_later():
    store = ListStore()
    cache = PromptCache(store)
    run(cache, store, "a", [1, 2, 3, 4])
    off = run(cache, store, "a", [1, 2, 3, 4, 5], enabled=False)
    assert (off.reused, off.status) == (0, pc.OFF)
    on = run(cache, store, "a", [1, 2, 3, 4, 5, 6])
    assert on.reused == 4  # the turn before the cache-off one, set aside and brought back


def test_an_abandoned_pass_keeps_only_the_positions_it_finished():
    store = ListStore()
    cache = PromptCache(store)
    use = cache.begin("a", [1, 2, 3, 4, 5, 6])
    cache.extend([1, 2, 3][use.reused :])  # the pass finished three positions in every layer, then stopped
    assert cache.live.tokens == [1, 2, 3]
    assert cache.begin("a", [1, 2, 3, 4, 5, 6]).reused == 3


# -- the real decode loops on the tiny families ----------------------------------------------------------------


def greedy(decoder, tokens, chat="chat", enabled=True, stop_at_layer=None):
    """A greedy reply; stop_at_layer: press Stop when the prompt's pass reaches that layer."""
    uses, stop = [], threading.Event()

    def progress(done, total):
        if done == stop_at_layer:
            stop.set()

    with torch.inference_mode():
        out = lean_decode(
            decoder,
            torch.tensor([tokens]),
            NEW_TOKENS,
            cache=CacheRequest(chat, None, enabled),
            cache_used=uses.append,
            stop_event=stop,
            prefill_progress=progress,
        )[0].tolist()
    return out[len(tokens) :], uses[0]


def fresh_reply(make_decoder, tokens):
    """The reference: a decoder that has never seen anything, prefilling the whole prompt."""
    return greedy(make_decoder(), tokens, enabled=False)[0]


def chat_cases(make_decoder, other_work, vocab: int):
    """Every way a chat's next prompt can meet the cache; each reply against a fresh full prefill."""
    decoder = make_decoder()
    rng = np.random.default_rng(1)
    words = lambda count: rng.integers(50, vocab, count).tolist()  # noqa: E731
    first = SYSTEM + words(20)
    reply, use = greedy(decoder, first)
    history = first + reply
    checks = []

    def turn(prompt, chat="chat", expect=None):
        got, use = greedy(decoder, prompt, chat)
        checks.append((got, fresh_reply(make_decoder, prompt), use, expect))
        return got, use

    follow_up = history + words(15)
    reply2, _ = turn(follow_up, expect=lambda use: use.reused == len(history) - 1)  # up to the last reply token
    turn(follow_up, expect=lambda use: use.reused == len(follow_up) - 1)  # regenerate
    edited = list(follow_up)
    edited[len(SYSTEM) + 5] += 1
    turn(edited, expect=lambda use: use.reused == len(SYSTEM) + 5)  # an edited message
    trimmed = SYSTEM + edited[len(SYSTEM) + 12 :]
    turn(trimmed, expect=lambda use: use.reused == len(SYSTEM))  # the front trimmed to fit
    turn(
        SYSTEM + words(25),
        chat="other",  # another chat: it shares the system prompt only
        expect=lambda use: use.status == pc.OTHER_CHAT and use.reused >= len(SYSTEM),
    )
    back = trimmed + words(5)
    turn(back, expect=lambda use: use.status == pc.HIT and use.reused >= len(trimmed))  # and back
    other_work(decoder)  # a lab run between turns
    turn(back + words(7), expect=lambda use: use.status == pc.HIT and use.reused >= len(back))
    changed = [SYSTEM[0] + 1] + back[1:]
    turn(changed, expect=lambda use: use.reused == 0)  # a changed system prompt
    long_prompt = changed + words(40)
    with pytest.raises(PassInterrupted):
        greedy(decoder, long_prompt, stop_at_layer=0)  # Stop during prefill, in its first layer
    turn(long_prompt, expect=lambda use: use.status == pc.HIT and use.reused >= len(changed))
    for got, expected, use, expect in checks:
        assert got == expected, use
        assert expect(use), use
    return checks


@pytest.mark.parametrize("precision", ["float32", "int4"])
@pytest.mark.parametrize("family", list(FAMILY_CONFIGS))
def test_every_case_replies_as_a_fresh_prefill_on_the_torch_loop(family, precision):
    from core.generation.decode.decoder import LeanDecoder

    model = tiny_model(family, precision)

    def cache_off_reply(decoder):
        greedy(decoder, list(range(50, 90)), chat=None, enabled=False)

    chat_cases(lambda: LeanDecoder(model), cache_off_reply, model.config.vocab_size)


def test_bfloat16_continues_within_its_rounding():
    """bfloat16's GEMM rounds a row differently with the number of rows beside it (oneDNN's blocking): keys
    computed one token at a time differ from a whole prompt's by about one bfloat16 step, so a near tie
    can go the other way. The logits after the cache stay within that rounding of a fresh prefill's."""
    from core.generation.decode.decoder import LeanDecoder

    model = tiny_model("llama", "bfloat16")
    prompt = SYSTEM + list(range(100, 140))
    with torch.inference_mode():
        cached = LeanDecoder(model)
        reply, _ = greedy(cached, prompt)
        follow_up = prompt + reply + list(range(150, 160))
        use = cached.prompt_cache.begin("chat", follow_up)
        cached.start_sequence(len(follow_up) + 1, keep=use.reused)
        continued = cached.forward(torch.tensor(follow_up[use.reused :]), use.reused)
        fresh = LeanDecoder(model)
        fresh.start_sequence(len(follow_up) + 1)
        whole = fresh.forward(torch.tensor(follow_up), 0)
    assert use.reused == len(prompt + reply) - 1
    assert (continued - whole).abs().max() <= 0.02 * whole.abs().max()


@pytest.fixture(scope="module")
def kernel_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cache-families")
    return {arch: write_tiny_family(folder / f"{arch}.gguf", arch, "Q4_K", layers=2) for arch in FAMILY_EXTRAS}


@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_every_case_replies_as_a_fresh_prefill_on_the_kernels(kernel_files, arch):
    """On the kernels, which compute each position alike whatever the size of its pass: token for token."""
    loaded = load_model(str(kernel_files[arch]))
    reference = load_model(str(kernel_files[arch]))  # its own C model: the reference's cache is apart

    def batch_sweep(decoder):
        decode_together(loaded.model, list(range(50, 70)), 3, 4)

    decoders = {}

    def make_decoder():
        if not decoders:
            decoders["chat"] = KernelDecoder(loaded.model.kernel)
            return decoders["chat"]
        return KernelDecoder(reference.model.kernel)

    checks = chat_cases(make_decoder, batch_sweep, 1000)
    assert any(use.reused > 0 for _, _, use, _ in checks)


def test_a_follow_up_on_the_gemm_continues_to_the_bits_of_a_fresh_prefill(kernel_files):
    """A follow-up of 40 new tokens (the GEMM's pass) over the cached keys of the reply (decoded one at a time): its
    logits are the bits of a fresh whole prefill's, which runs every position on the GEMM, the reply's included."""
    chat = load_model(str(kernel_files["llama"]))
    reference = load_model(str(kernel_files["llama"]))
    prompt = SYSTEM + list(range(100, 140))
    with torch.inference_mode():
        cached = KernelDecoder(chat.model.kernel)
        reply, _ = greedy(cached, prompt)
        follow_up = prompt + reply + list(range(150, 190))
        use = cached.prompt_cache.begin("chat", follow_up)
        cached.start_sequence(len(follow_up) + 1, keep=use.reused)
        continued = cached.forward(torch.tensor(follow_up[use.reused :]), use.reused)
        fresh = KernelDecoder(reference.model.kernel)
        fresh.start_sequence(len(follow_up) + 1)
        whole = fresh.forward(torch.tensor(follow_up), 0)
    assert use.reused == len(prompt + reply) - 1 and len(follow_up) - use.reused >= 32
    assert torch.equal(continued, whole)


def test_the_saved_caches_bound_scales_with_the_model_and_the_free_memory():
    from core.settings import PROMPT_CACHE_SAVED_POSITIONS, prompt_cache_budget

    small, large = 23_040, 524_288  # a position of SmolLM2-135M, of Llama-2-7B (32 KV heads of 128, 32 layers)
    plenty = 64 * 2**30
    assert prompt_cache_budget(small, plenty) == PROMPT_CACHE_SAVED_POSITIONS * small
    assert prompt_cache_budget(large, plenty) == PROMPT_CACHE_SAVED_POSITIONS * large
    # 8 GiB for Llama-2-7B's 16,384 positions, but a quarter of the free 20 GiB is 5 GiB: 10,240 positions.
    assert prompt_cache_budget(large, 20 * 2**30) == 5 * 2**30
    assert prompt_cache_budget(large, 1024) == large  # always room for one position

    class Store:
        def position_bytes(self) -> int:
            return small

    cache = PromptCache(Store())
    assert cache.budget_positions >= 1 and cache.budget_bytes == cache.budget_positions * small
