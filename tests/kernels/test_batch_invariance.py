"""A token's logits do not depend on how many tokens share its pass: every family and quant type, passes of 1, 7, 32,
50 and 512 tokens, the whole decoder (norms, attention, the float16 cache) included."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

import core.kernels.kernel_model as kernel_model
from core.kernels.library import kernels
from core.model.gguf_kernels import build_kernel_model
from core.quant.gguf_blocks import GGUFWeights
from tests.support.packed_types import PACKED_TYPES

QTYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
PASS_SIZES = (1, 7, 32, 50, 512)  # 50: the GEMM on 48, the tiles on the last 2
TOKENS = 512
VOCAB = 512


def _has_avx2() -> bool:
    from core.kernels.build import fast_here

    return fast_here()


# Each family as llama.cpp lays it out (two query heads to a key-value head), and Llama 2's attention without grouped
# heads, whose prompt rows share their attention four at a time.
SHAPES = {arch: (arch, {}) for arch in FAMILY_EXTRAS} | {"llama-ungrouped": ("llama", {"heads": 4, "kv_heads": 4})}
# This CPU's own build, and (on an AVX-512 machine) the AVX2 kernels that AVX2-only CPUs run, on fewer types.
CASES = [pytest.param(False, shape, qtype, id=f"native-{shape}-{qtype}") for shape in SHAPES for qtype in QTYPES]
CASES += [
    pytest.param(
        "avx2", shape, qtype, id=f"avx2-{shape}-{qtype}", marks=pytest.mark.skipif(not _has_avx2(), reason="no AVX2")
    )
    for shape in SHAPES
    for qtype in QTYPES
]


@pytest.mark.parametrize(("build", "shape", "qtype"), CASES)
def test_a_tokens_logits_are_the_same_bits_whatever_the_size_of_its_pass(tmp_path, monkeypatch, build, shape, qtype):
    monkeypatch.setattr(kernel_model, "PROMPT_CHUNK", TOKENS)  # a pass of 512 is one call of the kernels
    arch, attention = SHAPES[shape]
    path = write_tiny_family(tmp_path / f"{shape}-{qtype}.gguf", arch, qtype, vocab=VOCAB, **attention)
    library = kernels(portable=build)
    kernel = build_kernel_model(library, GGUFWeights(path), lambda fraction, text: None).kernel
    tokens = np.random.default_rng(3).integers(0, VOCAB, TOKENS)
    # The packed layout ran where the build has one, on every matrix but the embedding; elsewhere the file's.
    packed = set(kernel.matrices) - {(-1, "token_embd")} if qtype in PACKED_TYPES.get(library.isa, ()) else set()
    assert kernel.packed == packed
    logits, reads = {}, {}
    try:
        for size in PASS_SIZES:
            kernel.reserve(1, TOKENS, keep=False)
            before = library.ll_weight_row_reads()
            logits[size] = np.concatenate(
                [
                    kernel.pass_over(tokens[start : start + size], start, 2, every_position=True)
                    for start in range(0, TOKENS, size)
                ]
            )
            reads[size] = library.ll_weight_row_reads() - before
    finally:
        kernel.close()
    for size in PASS_SIZES[1:]:
        differ = np.nonzero((logits[size] != logits[1]).any(-1))[0]
        assert differ.size == 0, f"passes of {size}: positions {differ[:5]} differ from token-by-token decoding"
    # The long pass really ran as one: it read each weight row once per 32 tokens (the GEMM's two registers of 16,
    # or four of 8), not once per token as decoding does.
    assert reads[TOKENS] * 16 <= reads[1], reads
