"""A type without kernels of its own (Q3_K) widened exactly into one with them (Q6_K): same values, same products."""

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


@pytest.mark.parametrize("portable", BUILDS)
def test_widened_q3_k_rows_hold_ggufs_own_values_bit_for_bit(portable):
    import gguf
    from gguf.quants import dequantize

    library = _library(portable)
    assert library.widened["Q3_K"].name == "Q6_K" and "Q3_K" not in library.kernel_types
    raw = _q3_rows(np.random.default_rng(0))
    expected = dequantize(raw.reshape(-1), gguf.GGMLQuantizationType.Q3_K).reshape(raw.shape[0], COLUMNS)
    assert np.ptp(expected[0]) > 0 and np.ptp(expected[1]) > 0  # the limits are not all zeros
    wide = np.zeros((raw.shape[0], COLUMNS // 256 * 210), np.uint8)
    q3, q6 = library.types["Q3_K"].id, library.types["Q6_K"].id
    assert library.ll_widen(q3, raw.ctypes.data, raw.size // 110, wide.ctypes.data) == 0
    out = np.zeros(COLUMNS, np.float32)
    for row in range(raw.shape[0]):
        for type_id, data in ((q3, raw[row]), (q6, wide[row])):
            assert library.ll_dequantize_row(type_id, data.ctypes.data, out.ctypes.data, COLUMNS) == 0
            assert np.array_equal(out.view(np.uint32), expected[row].astype(np.float32).view(np.uint32)), row
    # Only the table's widened types widen.
    assert library.ll_widen(library.types["Q4_K"].id, raw.ctypes.data, 1, wide.ctypes.data) == -1


def test_a_q3_k_file_loads_widened_counts_the_bytes_it_reads_and_packs(tmp_path):
    """Every Q3_K matrix is set widened, counted in the model's size at Q6_K's bytes, and packed as Q6_K is."""
    from tiny_gguf import write_tiny_llama

    from core.kernels.library import kernels
    from core.model.gguf_kernels import build_kernel_model
    from core.quant.gguf_blocks import GGUFWeights
    from tests.support.packed_types import PACKED_TYPES

    roles = ("token_embd", "attn_q", "attn_k", "ffn_gate", "ffn_up")
    path = write_tiny_llama(tmp_path / "q3k.gguf", dict.fromkeys(roles, "Q3_K") | {"attn_v": "Q4_K"})
    library = kernels()
    weights = GGUFWeights(path)
    build = build_kernel_model(library, weights, lambda fraction, text: None)
    try:
        assert build.widened() == {"Q3_K": "Q6_K"} and build.fallbacks() == {}
        kernel = build.kernel
        q3 = [key for key, (_, type_id, _, _) in kernel.matrices.items() if type_id == library.types["Q3_K"].id]
        assert {role for _, role in q3} == {*roles, "output"}  # the tiny model's head is its embedding
        for layer, role in q3:
            _, _, rows, columns = kernel.matrices[layer, role]
            assert kernel.held_bytes(layer, role) == rows * columns // 256 * 210
        # The model's size is what the products read: Q3_K's tensors at Q6_K's bytes, the others at their own.
        expected = 0
        for name in {name for name in weights.names() if weights.known_tensor_type(name) not in ("F32",)}:
            data = weights.raw(name)
            is_q3 = weights.known_tensor_type(name) == "Q3_K"
            expected += data.shape[0] * data.shape[1] // 110 * 210 if is_q3 else data.nbytes
        assert build.weight_bytes == expected
        if "Q6_K" in PACKED_TYPES.get(library.isa, ()):
            assert {key for key in q3 if key[1] != "token_embd"} <= kernel.packed
    finally:
        build.kernel.close()
