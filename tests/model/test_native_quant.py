"""Native precision: each GGUF quant type runs on its own blocks, equal to gguf's dequantisation up to rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_gguf import random_blocks, write_tiny_llama

from core.model.loader import load_model
from core.quant.gguf_decode import NATIVE_TYPES, decode
from core.quant.split_int4_linear import native_linear

# Every type of a Q4_K_M or Q5_K_M file, and the legacy ones.
MIXED_TYPES = {
    "attn_q": "Q4_K",
    "attn_k": "Q5_K",
    "attn_v": "Q5_0",
    "attn_output": "Q4_1",
    "ffn_gate": "Q4_0",
    "ffn_up": "Q5_1",
    "ffn_down": "Q6_K",
    "token_embd": "Q8_0",
}


def gguf_dequantized(raw: np.ndarray, qtype: str) -> torch.Tensor:
    import gguf

    return torch.from_numpy(gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[qtype]).astype(np.float32))


@pytest.mark.parametrize("qtype", NATIVE_TYPES)
def test_blocks_decode_to_exactly_what_gguf_dequantises(qtype):
    raw = random_blocks(32, 512, qtype, np.random.default_rng(1))
    torch.testing.assert_close(decode(raw, qtype).dequantize(), gguf_dequantized(raw, qtype), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("qtype", NATIVE_TYPES)
def test_a_native_layer_multiplies_by_the_files_weights(qtype):
    raw = random_blocks(64, 512, qtype, np.random.default_rng(2))
    weight = gguf_dequantized(raw, qtype)
    layer = native_linear(decode(raw, qtype))
    # Identity rows are exact in bfloat16, so the layer's output is its weight (transposed) as it
    # computes with it: only the group scales' rounding to bfloat16 (8 bits) and the output's remain.
    columns = layer(torch.eye(512)).t()
    assert (columns - weight).abs().max() <= 2**-7 * weight.abs().max()
    x = torch.randn(3, 512)
    expected = x @ weight.t()
    assert (layer(x) - expected).abs().max() < 0.01 * expected.abs().max()


def test_a_weight_packed_in_row_chunks_multiplies_like_the_weight_packed_whole(monkeypatch):
    import core.quant.split_int4_linear as split

    raw = random_blocks(320, 256, "Q6_K", np.random.default_rng(3))
    weight = gguf_dequantized(raw, "Q6_K")
    whole = native_linear(decode(raw, "Q6_K"), plane_count=4)
    monkeypatch.setattr(split, "CHUNK_ROWS", 128)  # 3 chunks, the last one short
    chunked = native_linear(decode(raw, "Q6_K"), plane_count=4)
    assert chunked.packed_weight.shape == whole.packed_weight.shape
    # Each chunk centres its own digits, so the bytes differ; the weight the kernel applies does not.
    eye = torch.eye(256)
    assert (chunked(eye) - whole(eye)).abs().max() <= 2**-7 * weight.abs().max()


@pytest.mark.parametrize("rows", [80, 16])  # not whole 64-row packing tiles: each plane is padded
def test_a_multi_plane_layer_with_odd_rows_still_multiplies_by_the_files_weights(rows):
    raw = random_blocks(rows, 256, "Q8_0", np.random.default_rng(4))
    weight = gguf_dequantized(raw, "Q8_0")
    layer = native_linear(decode(raw, "Q8_0"))
    assert layer(torch.randn(2, 256)).shape == (2, rows)
    assert (layer(torch.eye(256)).t() - weight).abs().max() <= 2**-7 * weight.abs().max()


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("gguf") / "mixed.gguf", MIXED_TYPES)


@pytest.fixture(scope="module")
def float32_reference(mixed_file):
    """transformers' own dequantisation of the mixed file: the reference both native paths are held to. Module-scoped
    (made before a test's fixtures change the cache folder), so its converted cache is kept between runs."""
    return load_model(str(mixed_file), dtype="float32")


@pytest.fixture
def without_a_compiler(monkeypatch, tmp_path):
    """A machine with no C compiler and no kernels built before: native GGUFs fall back to torch's int4 kernel."""
    import core.kernels.build as build
    import core.kernels.library as library

    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "compiler", lambda: None)
    monkeypatch.setattr(library, "_loaded", {})


def llama_cpp_logits(llama_cpp, path, ids) -> torch.Tensor:
    reference = llama_cpp.Llama(str(path), n_ctx=256, logits_all=True, verbose=False, n_threads=2)
    reference.eval(ids)
    return torch.from_numpy(np.asarray(reference.scores[: len(ids)]))


def test_a_mixed_quant_file_runs_on_the_kernels_as_llama_cpp_runs_it(mixed_file, float32_reference, llama_cpp):
    native = load_model(str(mixed_file))
    reference = float32_reference
    assert native.dtype == "native" and native.describe().dtype.startswith("native")
    assert native.describe().runtime.startswith("Latency Lab's C kernels")
    # The weights are the file's blocks themselves, mapped, not copied; the tied head shares the embedding's.
    assert native.weight_bytes < mixed_file.stat().st_size < reference.weight_bytes
    ids = native.tokenizer("The sea is wide and the sky is blue, said the old sailor.")["input_ids"]
    got, exact = native.position_logits(ids), reference.position_logits(ids)
    theirs = llama_cpp_logits(llama_cpp, mixed_file, ids)
    # llama.cpp's own arithmetic (8-bit activations, a float16 cache): on two layers the same to rounding.
    assert (got - theirs).abs().max() < 1e-3 * theirs.abs().max()
    # Against exact float32 weights and activations, the 8-bit activations cost a few percent, as llama.cpp's do.
    assert (got - exact).abs().max() < 0.05 * exact.abs().max()
    assert (theirs - exact).abs().max() < 0.05 * exact.abs().max()


def test_without_a_compiler_a_mixed_file_runs_on_torchs_int4_kernel_and_says_so(
    mixed_file, float32_reference, without_a_compiler
):
    native = load_model(str(mixed_file))
    reference = float32_reference
    facts = native.describe()
    assert facts.dtype.startswith("native") and facts.runtime is None
    assert "no C compiler" in facts.precision_note and "torch's int4 kernel" in facts.precision_note
    # Packed from the blocks, near the file's own size (the tied head adds its packed copy).
    assert native.weight_bytes < 2 * mixed_file.stat().st_size < reference.weight_bytes
    ids = native.tokenizer("The sea is wide and the sky is blue, said the old sailor.")["input_ids"]
    got, expected = native.position_logits(ids), reference.position_logits(ids)
    assert (got - expected).abs().max() < 0.03 * expected.abs().max()
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


def test_a_type_without_a_kernel_runs_in_float16_and_says_so(tmp_path, llama_cpp):
    path = write_tiny_llama(tmp_path / "q2k.gguf", {"ffn_down": "Q2_K"})
    loaded = load_model(str(path))
    assert "Q2_K tensors run in float16" in loaded.describe().precision_note
    ids = [1, 2, 3]
    logits = loaded.position_logits(ids)
    assert torch.isfinite(logits).all()
    theirs = llama_cpp_logits(
        llama_cpp, path, ids
    )  # llama.cpp multiplies Q2_K itself: float16 weights are near, not equal
    assert (logits - theirs).abs().max() < 0.05 * theirs.abs().max()


def test_a_q3_k_m_file_runs_on_the_kernels_as_llama_cpp_runs_it(tmp_path, llama_cpp):
    """Q3_K_M's types (llama.cpp's mix: Q3_K, with Q4_K and Q5_K where it gives more bits) on the kernels, the Q3_K
    matrices packed in their own layout (the embedding widened to Q6_K): llama.cpp's own Q3_K arithmetic gives the
    same logits to rounding, and no note says a type ran another way."""
    roles = ("token_embd", "attn_q", "attn_k", "ffn_gate", "ffn_up")
    types = dict.fromkeys(roles, "Q3_K") | {"attn_v": "Q5_K", "attn_output": "Q4_K", "ffn_down": "Q4_K"}
    path = write_tiny_llama(tmp_path / "q3_k_m.gguf", types)
    loaded = load_model(str(path))
    note = loaded.describe().precision_note or ""
    assert "Q3_K" not in note and "float16" not in note
    ids = loaded.tokenizer("The sea is wide and the sky is blue, said the old sailor.")["input_ids"]
    got, theirs = loaded.position_logits(ids), llama_cpp_logits(llama_cpp, path, ids)
    assert (got - theirs).abs().max() < 1e-3 * theirs.abs().max()
    assert torch.equal(got.argmax(-1), theirs.argmax(-1))


def test_without_a_compiler_a_type_without_a_kernel_runs_in_bfloat16(tmp_path, without_a_compiler):
    path = write_tiny_llama(tmp_path / "q2k.gguf", {"ffn_down": "Q2_K"})
    loaded = load_model(str(path))
    assert "Q2_K tensors run in bfloat16" in loaded.describe().precision_note
    logits = loaded.position_logits([1, 2, 3])
    assert torch.isfinite(logits).all()


def test_a_later_load_comes_from_the_verified_tokenizer_cache(mixed_file, monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    reports = []
    load_model(str(mixed_file), progress=lambda fraction, message: reports.append((fraction, message)))
    fractions, messages = [fraction for fraction, _ in reports], [message for _, message in reports]
    # The hash on its helper thread overlaps the kernels' compile: the bar still only moves forward.
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("first launch" in message for message in messages)
    assert any("mapping" in message for message in messages)  # progress while the tensors are mapped
    again = []
    load_model(str(mixed_file), progress=lambda fraction, message: again.append(message))
    assert "cache verified" in again and not any("first launch" in message for message in again)


def test_overlapping_load_steps_never_move_the_progress_back():
    from core.progress import never_backwards

    shown = []
    report = never_backwards(lambda fraction, message: shown.append((fraction, message)))
    for fraction, message in [(0.0, "checking"), (0.2, "compiling"), (0.01, "verifying"), (0.5, "mapping")]:
        report(fraction, message)
    assert shown == [(0.0, "checking"), (0.2, "compiling"), (0.2, "verifying"), (0.5, "mapping")]
