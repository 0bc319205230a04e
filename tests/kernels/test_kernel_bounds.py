"""The C side checks what it is given: every buffer's size against the configuration, at the API boundary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.kernels.kernel_model import KernelModel, ModelShape

SHAPE = ModelShape(layers=1, width=64, heads=2, kv_heads=1, head_dim=32, ffn=96, vocab=40, norm_eps=1e-5, rope_dims=32)
Q, KV = SHAPE.heads * SHAPE.head_dim, SHAPE.kv_heads * SHAPE.head_dim
# role -> (rows, columns) the configuration implies; rows None for a vector of that many float32 values.
MATRICES = {
    "token_embd": (40, 64),
    "output": (40, 64),
    "attn_q": (Q, 64),
    "attn_k": (KV, 64),
    "attn_v": (KV, 64),
    "attn_qkv": (Q + 2 * KV, 64),
    "attn_output": (64, Q),
    "ffn_gate": (96, 64),
    "ffn_up": (96, 64),
    "ffn_gate_up": (192, 64),
    "ffn_down": (64, 96),
}
VECTORS = {
    "output_norm": 64,
    "attn_norm": 64,
    "ffn_norm": 64,
    "attn_post_norm": 64,
    "ffn_post_norm": 64,
    "attn_q_norm": 32,
    "attn_k_norm": 32,
    "attn_q_bias": Q,
    "attn_k_bias": KV,
    "attn_v_bias": KV,
    "rope_freq_factors": 16,
}


@pytest.fixture(scope="module")
def library():
    from core.kernels.library import kernels

    return kernels()


def complete_model(library) -> KernelModel:
    rng = np.random.default_rng(0)
    model = KernelModel(library, SHAPE)
    for role in ("token_embd", "output", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
        rows, columns = MATRICES[role]
        layer = -1 if role in ("token_embd", "output") else 0
        model.set_tensor(
            layer,
            role,
            rng.normal(0, 0.1, (rows, columns)).astype(np.float32),
            library.kernel_types["F32"],
            rows,
            columns,
        )
    for role in ("output_norm", "attn_norm", "ffn_norm"):
        model.set_tensor(
            -1 if role == "output_norm" else 0, role, np.ones(64, np.float32), library.kernel_types["F32"], 1, 64
        )
    model.set_rope(0, 10000.0)
    return model


@settings(max_examples=200, deadline=None)
@given(
    role=st.sampled_from(list(MATRICES) + list(VECTORS)),
    rows=st.integers(-2, 2),
    columns=st.integers(-2, 2),
    spare=st.integers(-8, 8),
)
def test_only_the_shape_the_configuration_implies_is_taken(library, role, rows, columns, spare):
    """Rows, columns or bytes off by any amount, for every role: refused with a reason; the exact shape taken."""
    model = KernelModel(library, SHAPE)
    try:
        want_rows, want_columns = MATRICES.get(role, (1, VECTORS.get(role)))
        given_rows, given_columns = max(want_rows + rows, 0), max(want_columns + columns, 0)
        buffer = np.zeros(max(given_rows * given_columns + spare, 0), dtype=np.float32)
        layer = -1 if role in ("token_embd", "output", "output_norm") else 0
        exact = rows == columns == spare == 0
        if exact:
            model.set_tensor(layer, role, buffer, library.kernel_types["F32"], given_rows, given_columns)
        else:
            with pytest.raises(RuntimeError, match="does not fit the model's configuration|is not the size its shape"):
                model.set_tensor(layer, role, buffer, library.kernel_types["F32"], given_rows, given_columns)
    finally:
        model.close()


def test_a_quantised_matrix_must_be_whole_blocks_of_its_rows(library):
    model = KernelModel(library, SHAPE)
    try:
        rows, columns = MATRICES["attn_q"]
        q8_rows = np.zeros((rows, columns // 32 * 34), dtype=np.uint8)
        model.set_tensor(0, "attn_q", q8_rows, library.kernel_types["Q8_0"], rows, columns)
        with pytest.raises(RuntimeError, match="not the size its shape and type imply"):
            model.set_tensor(0, "attn_q", q8_rows[:-1], library.kernel_types["Q8_0"], rows, columns)
        with pytest.raises(RuntimeError, match="not the size its shape and type imply"):
            model.set_tensor(0, "attn_q", q8_rows, library.kernel_types["Q4_0"], rows, columns)
    finally:
        model.close()


@pytest.mark.parametrize(
    "field, value",
    [
        ("layers", 0),
        ("layers", 5000),
        ("width", -1),
        ("heads", 0),
        ("vocab", 0),
        ("ffn", 0),
        ("kv_heads", 3),
        ("head_dim", 1024),
        ("rope_dims", 33),
        ("heads", 2**30),
        ("ffn", 2**30 + 1),
    ],
)
def test_a_configuration_the_kernels_cannot_index_is_refused_and_leaves_nothing_behind(library, field, value):
    from dataclasses import replace

    with pytest.raises(ValueError, match="the kernels refused the model's shape: .+") as refused:
        KernelModel(library, replace(SHAPE, **{field: value}))
    assert "\n" not in str(refused.value)


def test_buffers_smaller_than_their_rows_are_refused_at_each_call(library):
    model = complete_model(library)
    try:
        model.reserve(1, 8)
        lib, handle = library, model._handle
        tokens = np.array([1, 2, 3], dtype=np.int32)
        hidden = np.zeros((3, 64), dtype=np.float32)
        positions, sequences = np.arange(3, dtype=np.int32), np.zeros(3, dtype=np.int32)
        logits = np.zeros((3, 40), dtype=np.float32)
        pointer = lambda array: array.ctypes.data  # noqa: E731
        assert lib.ll_embed(handle, pointer(tokens), 3, pointer(hidden), hidden.size) == 0
        assert lib.ll_embed(handle, pointer(tokens), 3, pointer(hidden), hidden.size - 1) != 0
        assert b"hidden buffer is smaller" in lib.ll_last_error()
        assert (
            lib.ll_layers(handle, pointer(hidden), hidden.size - 64, 3, pointer(sequences), pointer(positions), 0, 1, 2)
            != 0
        )
        assert lib.ll_logits(handle, pointer(hidden), hidden.size, 3, pointer(logits), logits.size - 1, 2) != 0
        assert b"logits buffer is smaller" in lib.ll_last_error()
        assert (
            lib.ll_layers(handle, pointer(hidden), hidden.size, 3, pointer(sequences), pointer(positions), 0, 1, 2) == 0
        )
        assert lib.ll_logits(handle, pointer(hidden), hidden.size, 3, pointer(logits), logits.size, 2) == 0
        assert np.isfinite(logits).all() and np.abs(logits).sum() > 0
        assert lib.ll_reserve(handle, 2**16, 2**16, 0) != 0  # 2^32 positions in all: refused, not overflowed
    finally:
        model.close()


def test_the_python_wrapper_checks_its_arrays_before_the_call(library):
    model = complete_model(library)
    try:
        model.reserve(1, 8)
        hidden = model.embed(np.array([1, 2]))
        with pytest.raises(ValueError, match="2 rows need as many sequences and positions"):
            model.layers(hidden, np.zeros(1), np.arange(2), 0, 1, 2)
        with pytest.raises(ValueError, match="C-contiguous float32"):
            model.layers(hidden[:, ::2], np.zeros(2), np.arange(2), 0, 1, 2)
        with pytest.raises(ValueError, match="C-contiguous float32"):
            model.logits(hidden, 2, out=np.zeros((2, 40), dtype=np.float64))
    finally:
        model.close()


def test_a_refused_shape_leaves_no_traceback_behind(library, capfd):
    """KernelModel.__del__ used to fail on a model the kernels refused ('_lock' did not exist yet)."""
    import gc
    from dataclasses import replace

    with pytest.raises(ValueError):
        KernelModel(library, replace(SHAPE, layers=0))
    gc.collect()
    assert "Exception ignored" not in capfd.readouterr().err
