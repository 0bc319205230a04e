"""Speculative decoding on the kernels is exact: every family's greedy reply with prompt lookup drafts checked in one
pass is token for token its reply without them, and the drafts a pass rejects leave nothing behind."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

from core.generation.decode.drafting import LONGEST_REST, Drafts, prompt_lookup
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.decode.loop import lean_decode
from core.kernels.library import kernels
from core.model.gguf_kernels import build_kernel_model
from core.quant.gguf_blocks import GGUFWeights

VOCAB = 512


class EveryStepDrafts(Drafts):
    """Drafts at every step where any match is found, at full length: exactness must hold for whatever is drafted,
    and on a tiny random model the app's own drafter rests after its misses, leaving few passes to check."""

    def propose(self, tokens: np.ndarray, room: int) -> list[int]:
        return prompt_lookup(tokens, min(self.most, room), 1)


def reply(decoder: KernelDecoder, prompt: torch.Tensor, new: int, drafts: Drafts | None = None) -> list[int]:
    decoder.prompt_cache.set_aside()
    with torch.inference_mode():
        out = lean_decode(decoder, prompt, new, drafts=drafts)
    return out[0, prompt.shape[1] :].tolist()


@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_a_greedy_reply_with_drafts_is_the_reply_without(tmp_path, arch):
    path = write_tiny_family(tmp_path / f"{arch}.gguf", arch, "Q4_K", vocab=VOCAB)
    kernel = build_kernel_model(kernels(), GGUFWeights(path), lambda fraction, text: None).kernel
    try:
        decoder = KernelDecoder(kernel)
        start = torch.tensor([np.random.default_rng(5).integers(0, VOCAB, 24).tolist()])
        plain = reply(decoder, start, 24)
        # The start again after its own reply: a context the reply copies, so drafts are found and some kept.
        prompt = torch.cat([start, torch.tensor([plain]), start], dim=1)
        expected = reply(decoder, prompt, 40)
        for most in (1, 4, 16):
            drafts = EveryStepDrafts(most, decoder.verify, decoder.keep)
            assert reply(decoder, prompt, 40, drafts) == expected, most
            assert drafts.passes > 0 and drafts.drafted >= drafts.accepted > 0
    finally:
        kernel.close()


def test_drafts_follow_the_latest_match_of_the_longest_suffix():
    tokens = np.array([7, 1, 2, 3, 4, 5, 9, 8, 1, 2, 3, 6, 0, 1, 2, 3])
    assert prompt_lookup(tokens, 2) == [6, 0]  # "1 2 3" last seen before 6 0, not before 4 5
    assert prompt_lookup(np.array([1, 2, 9, 2]), 3) == [9, 2]  # no 2- or 3-token match: the 1-token one
    assert prompt_lookup(np.array([1, 2, 9, 2]), 3, shortest=2) == []  # unless 2 tokens must match
    assert prompt_lookup(np.array([1, 2, 3]), 3) == [] and prompt_lookup(np.array([4]), 3) == []
    assert prompt_lookup(tokens, 0) == []


class Account:
    """The decoder's side of a Drafts, for the drafting policy alone: no pass is run."""

    def __init__(self):
        self.kept: list[int] = []

    def verify(self, tokens, start):
        raise AssertionError("the policy tests run no pass")

    def keep(self, positions: int) -> None:
        self.kept.append(positions)


COPY = np.array([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 5, 6, 7])  # "5 6 7" again: what followed it follows


def test_the_first_pass_drafts_two_and_passes_kept_whole_double_it_up_to_the_most():
    drafts = Drafts(8, Account().verify, Account().keep)
    assert drafts.propose(COPY, 100) == [8, 9]
    drafts.checked(2, 2, 20)
    assert len(drafts.propose(COPY, 100)) == 4
    drafts.checked(4, 4, 25)
    assert len(drafts.propose(COPY, 100)) == 8
    drafts.checked(8, 8, 34)
    assert len(drafts.propose(COPY, 100)) == 8  # the user's most
    assert len(drafts.propose(COPY, 3)) == 3  # and never past the reply's room


def test_a_pass_that_misses_shortens_the_next_and_rests_the_drafter_longer_each_time():
    drafts = Drafts(8, Account().verify, Account().keep)
    drafts.checked(2, 2, 20)
    drafts.checked(4, 1, 22)  # kept 1 of 4: a miss
    assert drafts.length == 2  # what it kept, plus one
    rests = []
    for _ in range(4):
        steps = 0
        while not drafts.propose(COPY, 100):
            steps += 1
        rests.append(steps)
        drafts.checked(2, 0, 23)
    assert rests == [1, 2, 4, 8]  # after each miss in a row: 1, 2, 4, 8 ordinary steps
    for _ in range(10):
        drafts.checked(2, 0, 23)
    assert drafts.rest == LONGEST_REST
    drafts.rest = 0
    drafts.checked(2, 1, 24)  # half kept: no longer a miss, the rest ends
    assert drafts.rest == 0 and drafts.propose(COPY, 100)


def test_a_one_token_match_is_drafted_only_while_a_copy_is_being_kept():
    one_token_match = np.array([1, 2, 9, 2])
    drafts = Drafts(8, Account().verify, Account().keep)
    assert drafts.propose(one_token_match, 100) == []  # free writing matches its common tokens: not drafted
    drafts.checked(2, 2, 10)
    assert drafts.propose(one_token_match, 100) == [9, 2]
