"""The C decoder pass on small random GGUFs of every family, against llama.cpp on the same file, and its contract."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

from core.generation.decode.choice import on_kernels
from core.generation.decode.kernel_batch import decode_together
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.decode.loop import lean_decode
from core.generation.stopping import PassInterrupted
from core.model.loader import load_model

PROMPT = list(range(300, 320))  # 20 tokens: past Gemma's 8-position window in these files


def llama_cpp_logits(llama_cpp, path, ids) -> np.ndarray:
    reference = llama_cpp.Llama(str(path), n_ctx=256, logits_all=True, verbose=False, n_threads=2)
    reference.eval(ids)
    return np.asarray(reference.scores[: len(ids)])


@pytest.fixture(scope="module")
def family_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("families")
    return {
        (arch, qtype): write_tiny_family(
            folder / f"{arch}-{qtype}.gguf", arch, qtype, layers=6 if arch == "gemma3" else 2
        )
        for arch in FAMILY_EXTRAS
        for qtype in ("Q8_0", "Q4_K")
    }


@pytest.fixture(scope="module")
def tiny(family_files):
    return load_model(str(family_files["llama", "Q8_0"]))


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_K"])
@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_each_family_runs_on_the_kernels_as_llama_cpp_runs_it(family_files, arch, qtype, llama_cpp):
    path = family_files[arch, qtype]
    loaded = load_model(str(path))
    assert on_kernels(loaded.model) and loaded.describe().runtime.startswith("Latency Lab's C kernels")
    ours = loaded.position_logits(PROMPT).numpy()
    theirs = llama_cpp_logits(llama_cpp, path, PROMPT)
    # llama.cpp's arithmetic (8-bit activations, float16 cache, its rotary angles and GELU), with the blocks' float
    # sums in the kernels' own canonical order (batch-invariant), not llama.cpp's: equal to rounding, until now
    # and then an activation lands on the other side of an 8-bit rounding boundary, which moves that position's
    # logits by up to ~1%, and (through the cache) the later ones.
    error = np.abs(ours - theirs).max(-1) / np.abs(theirs).max()
    assert error[0] < 1e-5 and error.max() < 0.02, np.round(error, 5)
    assert (ours.argmax(-1) == theirs.argmax(-1)).mean() >= 0.95


@pytest.mark.parametrize(
    ("heads", "kv_heads", "head_dim"),
    [
        (8, 1, 32),  # eight query heads a key-value head: two attention jobs of four
        (8, 2, 40),  # four together; 40 dimensions, 32 and then 8 at a time
        (8, 8, 24),  # one a key-value head, 24 dimensions: 8 at a time only (SmolLM2's three a group: its own tests)
        (4, 4, 64),  # one (full multi-head attention, Llama 2's)
        (8, 2, 20),  # dimensions no multiple of 8: no SIMD loop at all
    ],
)
def test_every_head_layout_attends_as_llama_cpp_does(tmp_path, llama_cpp, heads, kv_heads, head_dim):
    """Attention runs query heads that share a key-value head together (rows.c): each head's arithmetic as alone."""
    path = write_tiny_family(tmp_path / "heads.gguf", "llama", heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    loaded = load_model(str(path))
    prompt = PROMPT * 3  # 60 positions: the four-at-a-time loops and the positions left over both run
    ours = loaded.position_logits(prompt).numpy()
    theirs = llama_cpp_logits(llama_cpp, path, prompt)
    error = np.abs(ours - theirs).max(-1) / np.abs(theirs).max()
    assert error[0] < 1e-5 and error.max() < 0.02, np.round(error, 5)
    assert (ours.argmax(-1) == theirs.argmax(-1)).mean() >= 0.95
    decoder = KernelDecoder(loaded.model.kernel)  # a decode step (its own jobs) gives the prompt pass's bits
    decoder.start_sequence(len(prompt))
    decoder.forward(torch.tensor(prompt[:-1]), 0)
    assert np.array_equal(decoder.forward(torch.tensor(prompt[-1:]), len(prompt) - 1).numpy()[-1], ours[-1])


def test_a_decode_step_gives_the_logits_the_prompt_pass_gives_at_that_position(tiny):
    decoder = KernelDecoder(tiny.model.kernel)
    decoder.start_sequence(len(PROMPT))
    whole = decoder.forward(torch.tensor(PROMPT), 0, on_layer=lambda done, total: None)
    decoder.start_sequence(len(PROMPT))
    decoder.forward(torch.tensor(PROMPT[:-1]), 0, on_layer=lambda done, total: None)
    stepped = decoder.forward(torch.tensor(PROMPT[-1:]), len(PROMPT) - 1)
    # Each token row's arithmetic is the same whichever way the rows are grouped: equal, not just close.
    assert torch.equal(whole, stepped)


def test_a_prompt_in_chunks_gives_the_same_logits_as_in_one_pass(tiny, monkeypatch):
    import core.kernels.kernel_model as kernel_model

    kernel = tiny.model.kernel
    kernel.reserve(1, len(PROMPT), keep=False)
    whole = kernel.pass_over(np.array(PROMPT), 0, 2, every_position=True)
    monkeypatch.setattr(kernel_model, "PROMPT_CHUNK", 7)
    kernel.reserve(1, len(PROMPT), keep=False)
    chunked = kernel.pass_over(np.array(PROMPT), 0, 2, every_position=True)
    assert np.array_equal(whole, chunked)


def test_a_cache_that_grows_mid_reply_keeps_what_it_held(tiny):
    decoder = KernelDecoder(tiny.model.kernel)
    roomy = lean_decode(_fresh(decoder, 256), torch.tensor([PROMPT]), 24)
    cramped = lean_decode(_fresh(decoder, len(PROMPT) + 1), torch.tensor([PROMPT]), 24)
    assert torch.equal(roomy, cramped)


def _fresh(decoder: KernelDecoder, capacity: int) -> KernelDecoder:
    decoder.kernel.reserve(1, capacity, keep=False)
    decoder.start_sequence = lambda positions, keep=0: None  # keep the capacity set above
    return decoder


def test_a_long_replys_cache_is_given_back_by_the_next_short_one(tiny):
    decoder = KernelDecoder(tiny.model.kernel)
    decoder.start_sequence(4096)
    assert decoder.capacity == 4096
    decoder.start_sequence(64)
    assert decoder.capacity == 64


def test_sequences_decoded_together_each_get_the_tokens_one_alone_gets(tiny):
    alone = lean_decode(KernelDecoder(tiny.model.kernel), torch.tensor([PROMPT]), 12)[0, len(PROMPT) :]
    stamps = decode_together(tiny.model, PROMPT, 3, 12)
    assert len(stamps) == 12 and stamps == sorted(stamps)
    # The batch's own tokens: the last step's logits for each sequence come from the same weights and cache.
    kernel = tiny.model.kernel
    hidden = kernel.embed(np.array(alone[-1:].tolist() * 3))
    kernel.layers(hidden, np.arange(3), np.full(3, len(PROMPT) + 11), 0, kernel.shape.layers, 2)
    logits = kernel.logits(hidden, 2)
    assert np.array_equal(logits[0], logits[1]) and np.array_equal(logits[1], logits[2])
    decoder = KernelDecoder(kernel)
    decoder.start_sequence(len(PROMPT) + 12)
    single = decoder.forward(torch.tensor(PROMPT + alone.tolist()), 0, on_layer=lambda done, total: None)
    assert np.array_equal(logits[0], single[0].numpy())  # a batch of 3, and a pass of 32 rows: the same bits


def test_a_stop_during_the_prompt_lands_at_the_next_layer_and_progress_ends_at_the_whole(tiny, monkeypatch):
    import core.kernels.kernel_model as kernel_model

    monkeypatch.setattr(kernel_model, "PROMPT_CHUNK", 8)  # 20 tokens: 3 chunks of 2 layers
    decoder = KernelDecoder(tiny.model.kernel)
    decoder.start_sequence(len(PROMPT))
    seen = []
    decoder.forward(torch.tensor(PROMPT), 0, on_layer=lambda done, total: seen.append((done, total)))
    assert seen == [(done, 6) for done in range(7)]
    stop, reported = threading.Event(), []

    def progress(done: int, total: int) -> None:
        reported.append(done)
        if done == 3:
            stop.set()

    decoder.start_sequence(len(PROMPT))
    with pytest.raises(PassInterrupted):
        decoder.forward(torch.tensor(PROMPT), 0, interrupt=stop, on_layer=progress)
    assert reported == [0, 1, 2, 3]  # the layer after the stop never ran


def test_bad_token_ids_and_positions_are_refused_with_a_reason(tiny):
    kernel = tiny.model.kernel
    with pytest.raises(RuntimeError, match="token id outside the vocabulary"):
        kernel.embed(np.array([kernel.shape.vocab]))
    kernel.reserve(1, 4, keep=False)
    hidden = kernel.embed(np.array([1]))
    with pytest.raises(RuntimeError, match="outside the reserved cache"):
        kernel.layers(hidden, np.zeros(1), np.array([4]), 0, 1, 2)


def test_a_closed_model_refuses_every_call_with_a_reason_instead_of_crashing(family_files):
    """The kernels would read a null model (a segfault): a call after close, from any thread, raises instead."""
    from core.kernels.library import kernels
    from core.model.gguf_kernels import build_kernel_model
    from core.progress import no_progress
    from core.quant.gguf_blocks import GGUFWeights

    kernel = build_kernel_model(kernels(), GGUFWeights(family_files["llama", "Q8_0"]), no_progress).kernel
    kernel.reserve(1, 8, keep=False)
    hidden = kernel.embed(np.arange(4))
    keys, values = kernel.copy_cache_out(2)
    kernel.close()
    calls = {
        "embed": lambda: kernel.embed(np.arange(4)),
        "layers": lambda: kernel.layers(hidden, np.zeros(4), np.arange(4), 0, 1, 2),
        "logits": lambda: kernel.logits(hidden, 2),
        "reserve": lambda: kernel.reserve(2, 16),
        "copy out": lambda: kernel.copy_cache_out(2),
        "copy in": lambda: kernel.copy_cache_in(keys, values),
        "pass": lambda: kernel.pass_over(np.arange(3), 0, 2),
        "rope": lambda: kernel.set_rope(0, 10000.0),
        "pack": lambda: kernel.pack(0, "ffn_down", 2),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match="the model is closed"):
            call()
            pytest.fail(f"{name} ran on a closed model")
    kernel.close()  # twice is harmless


def test_a_file_missing_a_layer_tensor_is_refused_in_one_line(tmp_path):
    import gguf

    from core.errors import ModelLoadError

    complete = write_tiny_family(tmp_path / "complete.gguf", "qwen2")
    reader = gguf.GGUFReader(str(complete))
    writer = gguf.GGUFWriter(str(tmp_path / "broken.gguf"), "qwen2")
    for key, field in reader.fields.items():
        if not key.startswith("GGUF.") and key != "general.architecture":
            writer.add_key_value(
                key, field.contents(), field.types[0], field.types[-1] if len(field.types) > 1 else None
            )
    for tensor in reader.tensors:
        if tensor.name != "blk.1.ffn_down.weight":
            writer.add_tensor(tensor.name, np.asarray(tensor.data), raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelLoadError, match="has no tensor 'blk.1.ffn_down.weight', which a qwen2 model needs"):
        load_model(str(tmp_path / "broken.gguf"))


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_K"])
def test_the_avx2_build_runs_a_model_as_the_native_build_does(family_files, qtype):
    """AVX2-only CPUs run the AVX2 kernels: built for Haswell here, they give the native (AVX-512) build's logits."""
    from core.kernels.build import fast_here
    from core.kernels.library import kernels
    from core.model.gguf_kernels import build_kernel_model
    from core.progress import no_progress
    from core.quant.gguf_blocks import GGUFWeights

    if not fast_here():
        pytest.skip("no AVX2 here")
    logits = {}
    for variant in (False, "avx2"):
        build = build_kernel_model(kernels(variant), GGUFWeights(family_files["llama", qtype]), no_progress)
        build.kernel.reserve(1, len(PROMPT), keep=False)
        logits[variant] = build.kernel.pass_over(np.array(PROMPT), 0, 2, every_position=True)
        build.kernel.close()
    # The same integer products; only the order of float sums differs (and, now and then, an 8-bit rounding).
    error = np.abs(logits["avx2"] - logits[False]).max(-1) / np.abs(logits[False]).max()
    assert np.median(error) < 1e-5 and error.max() < 0.02
