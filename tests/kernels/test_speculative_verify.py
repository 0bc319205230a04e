"""Speculative decoding on the kernels is exact: every family's greedy reply with prompt lookup drafts checked in one
pass is token for token its reply without them, and the drafts a pass rejects leave nothing behind."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

from core.generation.decode.drafting import Drafts
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.decode.loop import lean_decode
from core.kernels.library import kernels
from core.model.gguf_kernels import build_kernel_model
from core.quant.gguf_blocks import GGUFWeights

VOCAB = 512


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
            drafts = Drafts(most, decoder.verify, decoder.keep)
            assert reply(decoder, prompt, 40, drafts) == expected, most
            assert drafts.passes > 0 and drafts.drafted >= drafts.accepted > 0
    finally:
        kernel.close()


def test_drafts_follow_the_latest_match_of_the_longest_suffix():
    from core.generation.decode.drafting import prompt_lookup

    tokens = np.array([7, 1, 2, 3, 4, 5, 9, 8, 1, 2, 3, 6, 0, 1, 2, 3])
    assert prompt_lookup(tokens, 2) == [6, 0]  # "1 2 3" last seen before 6 0, not before 4 5
    assert prompt_lookup(np.array([1, 2, 9, 2]), 3) == [9, 2]  # no 2- or 3-token match: the 1-token one
    assert prompt_lookup(np.array([1, 2, 3]), 3) == [] and prompt_lookup(np.array([4]), 3) == []
    assert prompt_lookup(tokens, 0) == []
