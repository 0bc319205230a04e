"""A reply of exactly max new tokens: the model's end suppressor scores as transformers' does; greedy is argmax."""

import torch
from transformers import LogitsProcessorList, SuppressTokensLogitsProcessor

from core.generation.decode.decoder import LeanDecoder
from core.generation.decode.greedy import greedy
from core.generation.decode.loop import lean_decode
from core.model.end_suppression import SuppressEnds
from tests.generation.test_lean_decode import chat_prompt, generate_reply


def test_the_end_suppressor_scores_as_transformers_does_and_leaves_the_scores_it_was_given():
    generator = torch.Generator().manual_seed(7)
    scores = torch.randn(3, 500, generator=generator)
    given = scores.clone()
    ids = [2, 0, 499, 2, 731]  # a repeat, both edges, and one past the vocabulary (a file's metadata can say so)
    ours = SuppressEnds(ids)(torch.zeros(3, 4, dtype=torch.long), scores)
    theirs = SuppressTokensLogitsProcessor([token for token in ids if token < 500])(
        torch.zeros(3, 4, dtype=torch.long), scores
    )
    assert torch.equal(ours, theirs)
    assert torch.isinf(ours[:, [0, 2, 499]]).all() and (ours[:, [0, 2, 499]] < 0).all()
    assert torch.equal(scores, given)  # a caller's logits are not written over


def test_the_end_suppressor_follows_a_vocabulary_of_another_size():
    suppress = SuppressEnds([3, 40])
    small = suppress(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 10))
    large = suppress(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 50))
    assert torch.isinf(small[0, 3]) and torch.isfinite(small).sum() == 9
    assert torch.isinf(large[0, 40]) and torch.isfinite(large).sum() == 48


def test_greedy_is_torchs_argmax_the_first_of_equals_too():
    generator = torch.Generator().manual_seed(11)
    for _ in range(20):
        row = torch.randn(1, 4096, generator=generator)
        assert greedy(row) == int(row.argmax(dim=-1))
    tie = torch.zeros(1, 100)
    tie[0, [17, 60, 99]] = 5.0
    assert greedy(tie) == int(tie.argmax(dim=-1)) == 17


def test_a_reply_kept_from_ending_by_the_models_suppressor_is_generates_reply(tiny_model):
    ids = chat_prompt(tiny_model, "Tell me about lighthouses.")
    eos = tiny_model.eos_token_ids
    with torch.inference_mode():
        out = lean_decode(
            LeanDecoder(tiny_model.model),
            ids,
            40,
            eos_token_ids=eos,
            logits_processor=LogitsProcessorList(tiny_model.end_suppressors()),
        )
    reply = out[0, ids.shape[1] :].tolist()
    assert len(reply) == 40 and not set(reply) & set(eos)
    assert reply == generate_reply(tiny_model.model, ids, 40, eos)
