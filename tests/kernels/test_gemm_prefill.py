"""A prompt's pass on torch's GEMM: the same model as the block kernels, llama.cpp's arithmetic between products."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

import core.kernels.gemm_prefill as gemm_prefill
import core.kernels.kernel_model as kernel_model
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.stopping import PassInterrupted
from core.kernels.gemm_choice import GemmChoice, gemm_choice, measure_choice
from core.model.loader import load_model

PROMPT = list(range(300, 340))  # 40 tokens: past Gemma's 8-position window in these files


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gemm-families")
    return {
        arch: load_model(
            str(write_tiny_family(folder / f"{arch}.gguf", arch, "Q8_0", layers=6 if arch == "gemma3" else 2))
        )
        for arch in FAMILY_EXTRAS
    }


def _logits(kernel, precision, tokens=PROMPT, start=0, monkeypatch=None):
    kernel.prefill_precision = precision
    kernel.reserve(1, start + len(tokens), keep=start > 0)
    return kernel.pass_over(np.array(tokens), start, 2, every_position=True)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_each_family_on_the_gemm_gives_the_block_kernels_logits_to_within_rounding(family_models, arch, precision):
    kernel = family_models[arch].model.kernel
    blocks = _logits(kernel, None)
    gemm = _logits(kernel, precision)
    # The block kernels round activations to 8 bits per block of 32; the GEMM keeps float32 (or rounds to
    # bfloat16's 8-bit mantissa). They are within a few hundredths of the largest logit of each other; a wrong
    # rotary angle, mask, norm or cache write moves them by most of it (attention without its causal mask: 0.8).
    error = np.abs(gemm - blocks).max(-1) / np.abs(blocks).max()
    assert np.median(error) < 0.03 and error.max() < 0.06, np.round(error, 4)
    assert (gemm.argmax(-1) == blocks.argmax(-1)).mean() >= 0.8


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_float32_products_come_closer_to_the_files_exact_float32_than_8_bit_activations(family_models, arch, tmp_path):
    exact_model = load_model(str(write_tiny_family(tmp_path / f"{arch}.gguf", arch, "Q8_0")), dtype="float32")
    with torch.inference_mode():
        exact = exact_model.model(torch.tensor([PROMPT])).logits[0].numpy()
    kernel = family_models[arch].model.kernel
    distance = {
        precision: np.median(np.abs(_logits(kernel, precision) - exact).max(-1)) / np.abs(exact).max()
        for precision in (None, "bfloat16", "float32")
    }
    # Measured: 8-bit activations 1.4-1.6% of the largest logit, bfloat16 0.9%, float32 0.5% (the head's own
    # 8-bit activations and the float16 cache).
    assert distance["float32"] < distance["bfloat16"] < distance[None], distance


@pytest.mark.parametrize("arch", ["llama", "gemma2", "gemma3"])
def test_a_prompt_that_continues_a_cached_one_gets_the_logits_of_the_whole(family_models, arch, monkeypatch):
    monkeypatch.setattr(kernel_model, "GEMM_MIN_TOKENS", 1)  # the 7 tokens of the continuation on the GEMM too
    kernel = family_models[arch].model.kernel
    whole = _logits(kernel, "float32")
    _logits(kernel, "float32", PROMPT[:33])
    rest = _logits(kernel, "float32", PROMPT[33:], start=33)
    # Positions 33.. attend to 0..32 in the cache the first pass left: masked with the offset and (Gemma) window.
    # A GEMM of 7 rows may sum in another order than one of 40, and the head's 8-bit activations turn such a
    # last-bit difference into up to 0.2% of the largest logit now and then (measured); a wrong mask, 50%.
    assert_close(rest, whole[33:])


def test_queries_in_several_chunks_give_what_one_chunk_gives(family_models, monkeypatch):
    kernel = family_models["gemma3"].model.kernel
    whole = _logits(kernel, "float32")
    monkeypatch.setattr(gemm_prefill, "SCORE_BYTES", 1)  # one query per chunk
    monkeypatch.setattr(gemm_prefill, "SCRATCH_BYTES", 16 * 8 * kernel.shape.ffn)  # and 16 rows per product
    chunked = _logits(kernel, "float32")
    assert_close(chunked, whole)


def assert_close(logits: np.ndarray, expected: np.ndarray) -> None:
    error = np.abs(logits - expected).max(-1) / np.abs(expected).max()
    assert error.max() < 0.01 and np.median(error) < 0.003, np.round(error, 5)


def test_decode_after_a_gemm_prompt_continues_from_its_cache(family_models):
    kernel = family_models["qwen2"].model.kernel
    kernel.prefill_precision = "float32"
    decoder = KernelDecoder(kernel)
    decoder.start_sequence(len(PROMPT))
    decoder.forward(torch.tensor(PROMPT[:-1]), 0, on_layer=lambda done, total: None)
    stepped = decoder.forward(torch.tensor(PROMPT[-1:]), len(PROMPT) - 1)[0].numpy()
    whole = _logits(kernel, "float32")[-1]
    # The step's own 8-bit activations against the GEMM's float32: a few hundredths, as between the two passes.
    assert np.abs(stepped - whole).max() < 0.04 * np.abs(whole).max()


def test_a_stop_during_a_gemm_prompt_lands_at_the_next_layer(family_models):
    kernel = family_models["gemma3"].model.kernel  # 6 layers
    kernel.prefill_precision = "bfloat16"
    decoder = KernelDecoder(kernel)
    decoder.start_sequence(len(PROMPT))
    seen = []
    decoder.forward(torch.tensor(PROMPT), 0, on_layer=lambda done, total: seen.append((done, total)))
    assert seen == [(done, 6) for done in range(7)]
    stop, reported = threading.Event(), []

    def progress(done: int, total: int) -> None:
        reported.append(done)
        if done == 2:
            stop.set()

    decoder.start_sequence(len(PROMPT))
    with pytest.raises(PassInterrupted):
        decoder.forward(torch.tensor(PROMPT), 0, interrupt=stop, on_layer=progress)
    assert reported == [0, 1, 2]


def test_short_prompts_stay_on_the_block_kernels(family_models, monkeypatch):
    kernel = family_models["llama"].model.kernel
    kernel.prefill_precision = "bfloat16"
    used = []
    monkeypatch.setattr(gemm_prefill.GemmPrefill, "pass_over", lambda self, *a, **k: used.append(1))
    kernel.reserve(1, 64, keep=False)
    kernel.pass_over(np.array(PROMPT[: kernel_model.GEMM_MIN_TOKENS - 1]), 0, 2)
    assert not used
    kernel.pass_over(np.array(PROMPT[: kernel_model.GEMM_MIN_TOKENS]), 0, 2)
    assert used == [1]


def test_the_faster_precision_is_chosen_and_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    seconds = {"float32": 0.004, "bfloat16": 0.001}
    timed = []

    def fake_gemm(precision, shape):
        timed.append(precision)
        return seconds[precision]

    choice = measure_choice(2, time_gemm=fake_gemm, shape=(4, 8, 16), rounds=3)
    # Interleaved: a busy moment hits both precisions alike.
    assert timed == ["bfloat16", "float32"] * 3
    assert choice.precision == "bfloat16" and choice.flops_per_s["float32"] == 2 * 4 * 8 * 16 / 0.004
    seconds.update(float32=0.001, bfloat16=0.003)  # an AVX2-only CPU: bfloat16 converted, slower
    assert measure_choice(2, time_gemm=fake_gemm, shape=(4, 8, 16)).precision == "float32"

    import core.kernels.gemm_choice as module

    monkeypatch.setattr(
        module, "measure_choice", lambda threads: GemmChoice("float32", {"float32": 1.0}, (1, 1, 1), threads)
    )
    assert gemm_choice(2).precision == "float32"
    monkeypatch.setattr(module, "measure_choice", lambda threads: pytest.fail("measured again despite the cache"))
    assert gemm_choice(2).precision == "float32"


def test_the_vectorised_silu_is_float_precise_across_its_range(family_models):
    kernel = family_models["llama"].model.kernel
    ffn = kernel.shape.ffn
    rng = np.random.default_rng(5)
    gate = np.concatenate([np.linspace(-100, 100, ffn // 2), rng.normal(0, 4, ffn - ffn // 2)]).astype(np.float32)
    up = rng.normal(0, 1, ffn).astype(np.float32)
    gate_up = np.concatenate([gate, up])[None].copy()
    out = np.empty((1, ffn), dtype=np.float32)
    kernel.library.check(
        kernel.library.ll_stage_activate(
            kernel.handle, gate_up.ctypes.data, gate_up.size, 1, out.ctypes.data, out.size, 2
        ),
        "activating",
    )
    g = gate.astype(np.float64)
    exact = g / (1 + np.exp(-g)) * up
    assert np.all(np.abs(out[0] - exact) <= 4e-7 * np.abs(exact) + 1e-30), np.abs(out[0] - exact).max()
