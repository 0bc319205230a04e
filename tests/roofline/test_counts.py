"""FLOPs and bytes per phase, from each family's tiny model as loaded, against counts made by hand."""

from __future__ import annotations

import pytest
from tiny_gguf import FAMILY_EXTRAS, FFN, HEADS, HIDDEN, KV_HEADS, write_tiny_family

from core.model.loader import load_model
from core.roofline.counts import ArithmeticShape, decode_counts, prefill_counts, reply_decode_counts

VOCAB = 49152  # the embedded tokenizer's
HEAD_DIM = HIDDEN // HEADS  # 64
# One layer's products by hand: q 256x256, k and v 256x128 each, output 256x256, gate, up and down 256x512 each.
LAYER_WEIGHTS = 256 * 256 + 2 * 256 * 128 + 256 * 256 + 3 * 256 * 512  # 589,824
Q8_0_BYTES = 34 / 32  # a Q8_0 block: 32 weights in 34 bytes


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("count-families")
    found = {}
    for arch in FAMILY_EXTRAS:
        loaded = load_model(
            str(write_tiny_family(folder / f"{arch}.gguf", arch, "Q8_0", layers=6 if arch == "gemma3" else 2))
        )
        found[arch] = ArithmeticShape.from_dict(loaded.describe().arithmetic)
        loaded.model.close()
    return found


@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_each_familys_shape_is_read_as_its_file_says(shapes, arch):
    shape = shapes[arch]
    layers = 6 if arch == "gemma3" else 2
    assert (shape.layers, shape.width, shape.heads, shape.kv_heads, shape.head_dim, shape.ffn, shape.vocab) == (
        layers,
        HIDDEN,
        HEADS,
        KV_HEADS,
        HEAD_DIM,
        FFN,
        VOCAB,
    )
    assert shape.layer_parameters() == LAYER_WEIGHTS
    # Every matrix in Q8_0, the head tied to the embedding (counted once, and read whole by every step).
    assert shape.weight_bytes == (layers * LAYER_WEIGHTS + VOCAB * HIDDEN) * Q8_0_BYTES
    assert shape.embedding_bytes == 0 and shape.step_weight_bytes() == shape.weight_bytes
    expected_windows = {"gemma2": [8, 0], "gemma3": [8, 8, 8, 8, 8, 0]}.get(arch, [0] * layers)
    assert list(shape.windows) == expected_windows


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "phi3"])
def test_full_attention_families_prefill_and_decode_by_hand(shapes, arch):
    shape = shapes[arch]
    # 40 prompt tokens: 2 x weights x tokens per layer, the head once, and attention 4 x 64 per head and pair,
    # the causal pairs of 40 rows being 40 x 41 / 2 = 820.
    flops = 2 * LAYER_WEIGHTS * 2 * 40 + 2 * HIDDEN * VOCAB + 2 * 4 * HEAD_DIM * HEADS * 820
    cache_per_position = 2 * KV_HEADS * HEAD_DIM * 2 * 2  # keys and values, float16, 2 layers
    prefill = prefill_counts(shape, 40)
    assert prefill.flops == flops
    assert prefill.bytes == shape.weight_bytes + cache_per_position * 40 * 2
    # The step feeding position 40 sees 41 positions in each layer.
    step = decode_counts(shape, 40)
    assert step.flops == 2 * (2 * LAYER_WEIGHTS + HIDDEN * VOCAB) + 2 * 4 * HEAD_DIM * HEADS * 41
    assert step.bytes == shape.weight_bytes + cache_per_position * 41
    batch = decode_counts(shape, 40, batch=4)
    assert batch.flops == 4 * step.flops and batch.bytes == shape.weight_bytes + 4 * cache_per_position * 41
    # A reply of 3 tokens after a 40-token prompt: two steps, at positions 40 and 41.
    reply = reply_decode_counts(shape, 40, 3)
    assert reply.flops == (decode_counts(shape, 40).flops + decode_counts(shape, 41).flops) / 2


def test_sliding_windows_cap_what_each_position_sees(shapes):
    shape = shapes["gemma2"]  # layer 0 slides over 8 positions, layer 1 attends to all
    # 20 rows: layer 0 sees 1..8, then 8 for the 12 rows after (36 + 96 = 132 pairs); layer 1, 20 x 21 / 2 = 210.
    attention = 4 * HEAD_DIM * HEADS * (132 + 210)
    assert prefill_counts(shape, 20).flops == 2 * LAYER_WEIGHTS * 2 * 20 + 2 * HIDDEN * VOCAB + attention
    # A continuation: rows 20..29 after 20 cached. Layer 0: 8 each (80); layer 1: 21..30 (255).
    continued = prefill_counts(shape, 10, start=20)
    assert continued.flops == 2 * LAYER_WEIGHTS * 2 * 10 + 2 * HIDDEN * VOCAB + 4 * HEAD_DIM * HEADS * (80 + 255)
    step = decode_counts(shape, 100)
    assert step.bytes == shape.weight_bytes + 2 * KV_HEADS * HEAD_DIM * 2 * (8 + 101)


def test_an_untied_embedding_is_read_a_row_at_a_time():
    shape = ArithmeticShape(
        layers=1, width=4, heads=1, kv_heads=1, head_dim=4, ffn=8, vocab=100, weight_bytes=10_000, embedding_bytes=1_600
    )
    assert shape.step_weight_bytes() == 10_000 - 1_600 + 16
    assert decode_counts(shape, 0).bytes == 10_000 - 1_600 + 16 + 2 * 4 * 2


def test_the_embedded_models_long_prompt_is_the_issues_316_gflop():
    # SmolLM2-135M: 30 layers 576 wide, 9 heads (3 for keys and values) of 64, 1,536 feed-forward.
    shape = ArithmeticShape(
        layers=30, width=576, heads=9, kv_heads=3, head_dim=64, ffn=1536, vocab=49152, weight_bytes=98_000_000
    )
    assert shape.layer_parameters() * 30 == pytest.approx(106.2e6, rel=1e-3)
    assert prefill_counts(shape, 1240).flops == pytest.approx(316.5e9, rel=1e-3)


@pytest.mark.parametrize("family", ["llama", "gemma2"])
@pytest.mark.parametrize(("prompt_tokens", "output_tokens"), [(0, 1), (40, 3), (5, 30), (100, 257)])
def test_a_replys_average_step_is_the_mean_of_its_steps(shapes, family, prompt_tokens, output_tokens):
    shape = shapes[family]
    steps = [decode_counts(shape, prompt_tokens + k - 1) for k in range(1, max(output_tokens, 2))]
    reply = reply_decode_counts(shape, prompt_tokens, output_tokens)
    assert reply.flops == pytest.approx(sum(step.flops for step in steps) / len(steps), rel=1e-12)
    assert reply.bytes == pytest.approx(sum(step.bytes for step in steps) / len(steps), rel=1e-12)
