"""Q3_K (Ollama's and LM Studio's Q3_K_M files): its rows widened exactly into Q6_K where they are not packed, packed
in its own layout where they are, the same values and the same canonical dots either way."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_gguf import random_blocks

from tests.kernels.test_dots import BUILDS

COLUMNS = 1024  # four super-blocks


def _library(portable):
    from core.kernels.library import kernels

    return kernels(portable=portable)


def _q3_rows(rng: np.random.Generator, rows: int = 16) -> np.ndarray:
    """Random Q3_K rows, the first four at the ends of each field's range: every 6-bit scale 0 (applied as -32) or 63
    (31), every value -4 (low bits 0, third bit 0) or 3 (low bits 3, third bit 1)."""
    raw = random_blocks(rows, COLUMNS, "Q3_K", rng)
    blocks = raw.reshape(rows, -1, 110)  # hmask 0:32, qs 32:96, scales 96:108, d 108:110
    for row, (scales, bits) in enumerate([(0x00, 0x00), (0xFF, 0xFF), (0x00, 0xFF), (0xFF, 0x00)]):
        blocks[row, :, 96:108] = scales
        blocks[row, :, 0:96] = bits
    return raw


def _widened(library, raw: np.ndarray) -> np.ndarray:
    wide = np.zeros((raw.shape[0], COLUMNS // 256 * 210), np.uint8)
    assert library.ll_widen(library.types["Q3_K"].id, raw.ctypes.data, raw.size // 110, wide.ctypes.data) == 0
    return wide


@pytest.mark.parametrize("portable", BUILDS)
def test_widened_q3_k_rows_hold_ggufs_own_values_bit_for_bit(portable):
    import gguf
    from gguf.quants import dequantize

    library = _library(portable)
    assert library.widened["Q3_K"].name == "Q6_K" and "Q3_K" not in library.kernel_types
    raw = _q3_rows(np.random.default_rng(0))
    expected = dequantize(raw.reshape(-1), gguf.GGMLQuantizationType.Q3_K).reshape(raw.shape[0], COLUMNS)
    assert np.ptp(expected[0]) > 0 and np.ptp(expected[1]) > 0  # the limits are not all zeros
    wide = _widened(library, raw)
    q3, q6 = library.types["Q3_K"].id, library.types["Q6_K"].id
    out = np.zeros(COLUMNS, np.float32)
    for row in range(raw.shape[0]):
        for type_id, data in ((q3, raw[row]), (q6, wide[row])):
            assert library.ll_dequantize_row(type_id, data.ctypes.data, out.ctypes.data, COLUMNS) == 0
            assert np.array_equal(out.view(np.uint32), expected[row].astype(np.float32).view(np.uint32)), row
    # Only the table's widened types widen.
    assert library.ll_widen(library.types["Q4_K"].id, raw.ctypes.data, 1, wide.ctypes.data) == -1


@pytest.mark.parametrize("portable", BUILDS[:2])
def test_packed_q3_k_rows_give_the_canonical_dot_of_their_widened_rows(portable):
    """Packed 16 rows a group and read by this build's own Q3_K kernel: every product the bits of the scalar Q3_K
    reference, which are the bits of Q6_K's reference on the widened rows, at each field's limits and activations
    of magnitude 127."""
    library = _library(portable)
    assert library.types["Q3_K"].packs
    rng = np.random.default_rng(4)
    rows = 32
    raw = _q3_rows(rng, rows)
    wide = _widened(library, raw)
    q3, q6, q8k = library.types["Q3_K"].id, library.types["Q6_K"].id, library.types["Q8_K"].id
    inputs = rng.normal(0, 1, (4, COLUMNS)).astype(np.float32)
    inputs[0] = np.where(rng.random(COLUMNS) < 0.5, -1.0, 1.0)  # every quant +-127
    stride = COLUMNS // 256 * 292
    activations = np.zeros((4, stride), np.uint8)
    for i in range(4):
        assert library.ll_quantize_activation(q8k, inputs[i].ctypes.data, activations[i].ctypes.data, COLUMNS) == 0
    reference = np.array(
        [
            [library.ll_dot_reference(q3, COLUMNS, raw[r].ctypes.data, activations[t].ctypes.data) for t in range(4)]
            for r in range(rows)
        ],
        np.float32,
    )
    widened = np.array(
        [
            [library.ll_dot_reference(q6, COLUMNS, wide[r].ctypes.data, activations[t].ctypes.data) for t in range(4)]
            for r in range(rows)
        ],
        np.float32,
    )
    assert np.array_equal(reference, widened)
    for tokens in (1, 2, 3, 4):
        packed = np.zeros(rows * tokens, np.float32)
        args = (COLUMNS, raw.ctypes.data, rows, activations.ctypes.data, stride, tokens, packed.ctypes.data)
        assert library.ll_packed_dot(q3, *args) == 0
        assert np.array_equal(packed.reshape(rows, tokens), reference[:, :tokens]), tokens
    assert library.ll_packed_dot(q3, COLUMNS, raw.ctypes.data, 24, *args[3:]) == -1  # not whole groups: refused


def test_a_q3_k_file_packs_its_matrices_as_q3_k_and_counts_the_bytes_each_step_reads(tmp_path):
    """Every Q3_K matrix but the embedding packed in Q3_K's own layout; the embedding, read a row at a time, kept as
    the file has it (neither packed nor widened); each at Q3_K's own bytes, and the model's size their sum."""
    from tiny_gguf import write_tiny_llama

    from core.model.gguf_kernels import build_kernel_model
    from core.quant.gguf_blocks import GGUFWeights

    roles = ("token_embd", "attn_q", "attn_k", "ffn_gate", "ffn_up")
    path = write_tiny_llama(tmp_path / "q3k.gguf", dict.fromkeys(roles, "Q3_K") | {"attn_v": "Q4_K"})
    library = _library(False)
    if not library.types["Q3_K"].packs:
        pytest.skip("the scalar build packs nothing")
    weights = GGUFWeights(path)
    build = build_kernel_model(library, weights, lambda fraction, text: None)
    try:
        assert build.widened() == {} and build.fallbacks() == {}
        kernel = build.kernel
        q3 = {key for key, (_, type_id, _, _) in kernel.matrices.items() if type_id == library.types["Q3_K"].id}
        assert {role for _, role in q3} == {*roles, "output"}  # the tiny model's head is its embedding
        assert q3 - kernel.packed == {(-1, "token_embd")}
        for layer, role in q3:
            _, _, rows, columns = kernel.matrices[layer, role]
            assert kernel.held_bytes(layer, role) == rows * columns // 256 * 110
        matrices = [name for name in weights.names() if weights.known_tensor_type(name) != "F32"]
        assert build.weight_bytes == sum(weights.raw(name).nbytes for name in matrices)
    finally:
        build.kernel.close()


def test_q3_k_rows_of_the_wrong_size_are_refused_before_any_is_widened():
    """A hostile file's Q3_K tensor one row short: a clear error, nothing read past or widened."""
    from core.kernels.kernel_model import KernelModel, ModelShape

    library = _library(False)
    shape = ModelShape(
        layers=1, width=256, heads=2, kv_heads=1, head_dim=128, ffn=256, vocab=40, norm_eps=1e-5, rope_dims=128
    )
    model = KernelModel(library, shape)
    try:
        rows = np.zeros((256, 110), np.uint8)
        with pytest.raises(RuntimeError, match="not the size its shape and type imply"):
            model.set_tensor(0, "attn_q", rows[:-1], library.types["Q3_K"].id, 256, 256)
        model.set_tensor(0, "attn_q", rows, library.types["Q3_K"].id, 256, 256)  # the right size is taken
    finally:
        model.close()
