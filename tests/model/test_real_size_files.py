"""Real-size GGUFs made on demand (tools/real_size.py): real shapes and quant mixes, normal scales, and our kernels
agreeing with llama.cpp on the generated files that fit the suite (up to 1 GiB; benchmarks/ measures the rest)."""

from __future__ import annotations

import numpy as np
import pytest
from llama_agreement import judge_against_llama_cpp

from core.model.gguf_kernels import checked_shape
from core.model.loader import load_model
from core.quant.agreement import agreement_text
from core.quant.gguf_blocks import GGUFWeights
from tools import real_size

# The files of at most 1 GiB, one per file type: Llama 3.2 1B's shape, and Qwen2.5 0.5B's (biases, GQA 14:2, rows of
# 896 that are not whole k-quant blocks) for Q8_0, whose 1B file is 1.06 GiB.
SUITE_FILES = {
    "Q3_K_M": "llama-3.2-1b",  # its Q3_K tensors run widened to Q6_K
    "Q4_0": "llama-3.2-1b",
    "Q5_0": "llama-3.2-1b",
    "Q5_1": "llama-3.2-1b",
    "Q4_K_M": "llama-3.2-1b",
    "Q5_K_M": "llama-3.2-1b",
    "Q6_K": "llama-3.2-1b",
    "Q8_0": "qwen2.5-0.5b",
}


@pytest.mark.parametrize("file_type", list(real_size.FILE_TYPES))
@pytest.mark.parametrize("name", list(real_size.FAMILIES))
def test_every_family_and_type_has_the_shape_its_metadata_implies(tmp_path, name, file_type):
    """The header as written (its data a hole of the right size): every tensor checked against the family's table,
    the quant mix as llama.cpp's quantiser makes it."""
    path = tmp_path / f"{name}-{file_type}.gguf"
    real_size.write(path, name, file_type, header_only=True)
    weights = GGUFWeights(path)
    shape, tensors = checked_shape(weights)
    family = real_size.FAMILIES[name]
    assert (shape.layers, shape.width, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn) == (
        family.layers,
        family.width,
        family.heads,
        family.kv_heads,
        family.head_dim,
        family.ffn,
    )
    types = {tensor: weights.tensor_type(tensor) for tensor in weights.names()}
    base = real_size.FILE_TYPES[file_type][1]
    if file_type in ("Q4_K_M", "Q5_K_M") and family.width % 256 == 0 and family.ffn % 256 == 0:
        more_bits = [layer for layer in range(family.layers) if types[f"blk.{layer}.ffn_down.weight"] == "Q6_K"]
        assert 0 < len(more_bits) < family.layers  # about half the layers, as llama.cpp's use_more_bits
        assert types["blk.1.attn_q.weight"] == base
    if file_type == "Q3_K_M" and family.width % 256 == 0 and family.ffn % 256 == 0:  # llama.cpp's Q3_K_M mix
        last = family.layers - 1
        assert types["blk.1.attn_q.weight"] == types["blk.1.ffn_up.weight"] == "Q3_K"
        assert (types["blk.1.attn_v.weight"], types["blk.2.attn_v.weight"]) == ("Q5_K", "Q4_K")
        assert types["blk.0.ffn_down.weight"] == ("Q5_K" if family.layers >= 16 else "Q4_K")
        assert types[f"blk.{last}.ffn_down.weight"] == types[f"blk.{last}.attn_output.weight"] == "Q4_K"
    if not family.tied:
        assert types["output.weight"] == ("Q8_0" if file_type == "Q8_0" else "Q6_K")
    assert set(tensors) <= set(types)


def test_a_files_block_scales_are_normal_float16_numbers():
    """llama.cpp reads a subnormal block scale as zero: every scale of every block stays normal."""
    path = real_size.real_size_file("llama-3.2-1b", "Q4_K_M")
    weights = GGUFWeights(path)
    smallest_normal = np.finfo(np.float16).tiny
    offsets = {"Q4_K": (0, 2), "Q6_K": (208,)}
    checked = 0
    for tensor in ("blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.1.ffn_down.weight", "token_embd.weight"):
        qtype = weights.tensor_type(tensor)
        raw = np.asarray(weights.raw(tensor)).reshape(-1, real_size.TYPES[qtype][2])
        for offset in offsets[qtype]:
            scales = raw[:, offset : offset + 2].copy().view(np.float16).astype(np.float32).ravel()
            assert np.all(np.abs(scales) >= smallest_normal) and np.all(np.isfinite(scales)), (tensor, offset)
            checked += scales.size
    assert checked > 100_000


def test_a_file_is_made_once_and_then_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    first = real_size.real_size_file("qwen2.5-0.5b", "Q4_0")
    stamp = first.stat().st_mtime_ns
    assert real_size.real_size_file("qwen2.5-0.5b", "Q4_0") == first and first.stat().st_mtime_ns == stamp
    assert [path.name for path in first.parent.iterdir()] == [first.name]  # no staging file left behind
    with pytest.raises(ValueError, match="unknown family"):
        real_size.real_size_file("llama-9b", "Q4_0")


@pytest.mark.model
@pytest.mark.parametrize("file_type", list(SUITE_FILES))
def test_greedy_agreement_with_llama_cpp_on_a_real_size_file(llama_cpp, file_type):
    """Teacher-forced over the fixed text, as tests/model/test_quant_files.py judges the 135M model's files."""
    path = real_size.real_size_file(SUITE_FILES[file_type], file_type)
    native = load_model(str(path))
    assert native.describe().runtime.startswith("Latency Lab's C kernels")
    ids = native.tokenizer(agreement_text())["input_ids"]
    judge_against_llama_cpp(native, path, ids, f"{path.name}")
