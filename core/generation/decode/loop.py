"""Greedy or sampled decoding over LeanDecoder, with generate()'s processors; each token handed on as it is chosen."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

from core.generation.decode.decoder import LeanDecoder
from core.generation.decode.drafting import Drafts
from core.generation.decode.greedy import greedy
from core.generation.decode.prompt_cache import CacheRequest, CacheUse

# generate() applies what a model's generation_config asks for; the lean loop knows only these
# neutral values, so a model that sets any other runs through generate() instead.
NEUTRAL_GENERATION_CONFIG = {
    "repetition_penalty": (None, 1.0),
    "encoder_repetition_penalty": (None, 1.0),
    "no_repeat_ngram_size": (None, 0),
    "bad_words_ids": (None,),
    "min_length": (None, 0),
    "min_new_tokens": (None, 0),
    "forced_bos_token_id": (None,),
    "forced_eos_token_id": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "sequence_bias": (None,),
    "exponential_decay_length_penalty": (None,),
    "epsilon_cutoff": (None, 0.0),
    "eta_cutoff": (None, 0.0),
    "typical_p": (None, 1.0),
    "min_p": (None,),
}

# Room reserved for the reply up front; the cache doubles beyond it (see LeanDecoder.start_sequence).
INITIAL_REPLY_ROOM = 256


def generation_config_blocks_lean_loop(model: Any) -> str | None:
    config = getattr(model, "generation_config", None)
    for field, neutral in NEUTRAL_GENERATION_CONFIG.items():
        value = getattr(config, field, None)
        if value not in neutral:
            return f"its generation_config sets {field}={value!r}, which only generate() applies"
    return None


def lean_decode(
    decoder: LeanDecoder,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    *,
    eos_token_ids: Iterable[int] = (),
    on_token: Callable[[int, bool], None] | None = None,
    logits_processor: LogitsProcessorList | None = None,
    temperature: float | None = None,
    top_p: float = 1.0,
    stop_event: threading.Event | None = None,
    prefill_progress: Callable[[int, int], None] | None = None,
    cache: CacheRequest | None = None,
    cache_used: Callable[[CacheUse], None] | None = None,
    drafts: Drafts | None = None,
) -> torch.Tensor:
    """Like model.generate for one sequence; temperature None means greedy. Returns prompt plus reply ids.

    stop_event is the one way to stop: set during prefill, the prompt's pass is abandoned at the next
    layer with PassInterrupted (as in generate()'s pre-hooks) and no reply token; set during decode,
    the reply ends after the current token, as generate()'s stopping criteria would end it.
    prefill_progress(layers_done, layers_total) is called before each layer of the prompt's pass and
    after its last one; decode steps do not report.

    cache: how this reply may use the decoder's prompt cache; None (the lab, benchmarks) uses none and sets
    the chat's cache aside first. Only the prompt's tokens after the cached part are prefilled, and
    cache_used(use) says how many came from the cache before the pass starts. A stop or failure mid-pass
    leaves the cache holding what every layer finished.

    on_token(token_id, drafted) gets each reply token as it is chosen; drafted is True for an accepted draft.
    drafts: speculative decoding (on a decoder that can verify): each step's drafts are checked in one pass with the
    step's token and the longest run the model agrees with is kept. Greedy, the reply is token for token the one
    without it (the kernels give a position the same bits in a pass of any size); sampled, each draft is kept with
    the model's probability of it and replaced otherwise (keep_or_resample), so the tokens' distribution is the
    model's.
    """
    if input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ValueError("the lean loop decodes one sequence (input_ids of shape [1, n])")
    prompt_length = input_ids.shape[1]
    sequence = torch.empty((1, prompt_length + max_new_tokens), dtype=torch.long)
    sequence[:, :prompt_length] = input_ids
    processors = LogitsProcessorList(logits_processor or [])
    if temperature is not None:
        processors.append(TemperatureLogitsWarper(temperature))
        if top_p < 1.0:
            processors.append(TopPLogitsWarper(top_p))
    eos = torch.tensor(sorted(set(eos_token_ids)), dtype=torch.long)
    prompt = input_ids[0].tolist()
    cache = cache or CacheRequest(enabled=False)
    prompt_cache = decoder.prompt_cache
    use = prompt_cache.begin(cache.chat, prompt, cache.label, cache.enabled)
    if cache_used is not None:
        cache_used(use)
    decoder.start_sequence(prompt_length + min(max_new_tokens, INITIAL_REPLY_ROOM), keep=use.reused)
    try:
        logits = decoder.forward(
            input_ids[0, use.reused :], use.reused, interrupt=stop_event, on_layer=prefill_progress
        )
    finally:
        prompt_cache.extend(prompt[use.reused : decoder.completed])
    length = prompt_length
    end = prompt_length + max_new_tokens

    def scores_for(logits: torch.Tensor) -> torch.Tensor:
        # transformers declares torch.LongTensor, a legacy tensor type that no torch op is typed to return.
        return processors(sequence[:, :length], logits.float())  # type: ignore[arg-type]

    def choose(logits: torch.Tensor) -> int:
        scores = scores_for(logits)
        if temperature is None:
            return greedy(scores)
        return int(torch.multinomial(scores.softmax(dim=-1), num_samples=1))

    def check(logits: torch.Tensor, guess: int) -> tuple[int, bool]:
        """The model's token where a draft stands, and whether it is the draft."""
        if temperature is None:
            chosen = greedy(scores_for(logits))
            return chosen, chosen == guess
        return keep_or_resample(scores_for(logits).softmax(dim=-1)[0], guess)

    def ends_here(token: int) -> bool:
        return token in eos_ids or (stop_event is not None and stop_event.is_set())

    def take(token: int, drafted: bool) -> None:
        nonlocal length
        sequence[0, length] = token
        length += 1
        if on_token is not None:
            on_token(token, drafted)

    eos_ids = set(eos.tolist())
    if drafts is not None:
        drafts.prime(sequence[0, :length].numpy(), max_new_tokens)
    pending = choose(logits)  # chosen and handed on; its keys and values are not in the cache yet
    take(pending, False)
    while not ends_here(pending) and length < end:
        step_started_ns = time.perf_counter_ns()
        guesses = drafts.propose(sequence[0, :length].numpy(), end - length) if drafts is not None else []
        if not guesses:
            logits = decoder.forward(torch.tensor([pending]), length - 1)
            prompt_cache.extend([pending])
            pending = choose(logits)
            if drafts is not None:  # an ordinary step's cost, against which the verify passes are weighed
                drafts.stepped(time.perf_counter_ns() - step_started_ns)
            take(pending, False)
            continue
        # One pass over the weights checks the pending token and every draft: row i's logits decide the token
        # after draft i - 1. The first draft the model disagrees with is replaced by the model's own token.
        assert drafts is not None
        checked = drafts.verify(torch.tensor([pending, *guesses]), length - 1)
        first_token = length - prompt_length  # the pass's time lands on the first token it gives
        kept, own, ended = 0, None, False
        for guess in guesses:
            token, agreed = check(checked[kept : kept + 1], guess)
            if not agreed:
                own = token
                break
            take(guess, True)
            kept += 1
            if ends_here(guess):
                ended = True
                break
        # Drafts past the end of the reply were never weighed: they are neither accepted nor rejected.
        weighed = kept if ended else len(guesses)
        drafts.checked(weighed, kept, length, time.perf_counter_ns() - step_started_ns, first_token)
        prompt_cache.extend(sequence[0, length - kept - 1 : length].tolist())
        if (kept and ends_here(int(sequence[0, length - 1]))) or length == end:
            break
        pending = own if own is not None else choose(checked[kept : kept + 1])
        take(pending, False)
    return sequence[:, :length]


def keep_or_resample(probabilities: torch.Tensor, draft: int) -> tuple[int, bool]:
    """Speculative sampling's rule (Leviathan et al., 2023) for a draft proposed with certainty, as prompt lookup's
    are: keep it with probability p(draft), else sample from p with the draft taken out. Either way a token comes out
    with probability p(token): p(draft) for the draft, (1 - p(draft)) * p(x) / (1 - p(draft)) for any other x."""
    if float(torch.rand(())) < float(probabilities[draft]):
        return draft, True
    rest = probabilities.clone()
    rest[draft] = 0.0
    total = float(rest.sum())
    if total <= 0.0:  # the model gives the draft all its mass: it cannot be anything else
        return draft, True
    return int(torch.multinomial(rest / total, num_samples=1)), False
