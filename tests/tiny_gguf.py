"""Write small GGUF files for tests: random quant blocks, and a tiny random Llama with the embedded tokenizer."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

# Where each type keeps its fp16 scale(s) inside a block, so random blocks get sane, finite scales.
SCALE_OFFSETS = {
    "Q4_0": (0,),
    "Q4_1": (0, 2),
    "Q5_0": (0,),
    "Q5_1": (0, 2),
    "Q8_0": (0,),
    "Q4_K": (0, 2),
    "Q5_K": (0, 2),
    "Q6_K": (208,),
    "Q2_K": (80, 82),
    "Q3_K": (108,),
}
HIDDEN, HEADS, KV_HEADS, FFN, LAYERS = 256, 4, 2, 512, 2


def random_blocks(rows: int, columns: int, qtype: str, rng: np.random.Generator, scale: float = 0.01) -> np.ndarray:
    """Random bytes in qtype's block layout, [rows, row_bytes]: every bit pattern is a valid quant."""
    import gguf

    block_size, block_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[qtype]]
    raw = rng.integers(0, 256, (rows, columns // block_size * block_bytes), dtype=np.uint8)
    blocks = raw.reshape(rows, -1, block_bytes)
    for offset in SCALE_OFFSETS[qtype]:
        halves = rng.uniform(-scale, scale, blocks.shape[:2]).astype(np.float16)
        blocks[..., offset : offset + 2] = halves[..., None].view(np.uint8)
    return raw


def _quantised(rows: int, columns: int, qtype: str, rng: np.random.Generator) -> np.ndarray:
    """gguf's own quantiser where it has one (legacy types), random blocks otherwise (K types)."""
    import gguf
    from gguf.quants import quantize

    try:
        return quantize(rng.normal(0, 0.05, (rows, columns)).astype(np.float32), gguf.GGMLQuantizationType[qtype])
    except NotImplementedError:
        return random_blocks(rows, columns, qtype, rng)


@functools.cache
def _tokenizer_fields() -> dict:
    """The embedded model's tokenizer fields as (value, type, item type), read once per process (seconds each)."""
    import gguf

    from core.model.source import embedded_gguf_path

    source = gguf.GGUFReader(str(embedded_gguf_path()))
    return {
        key: (field.contents(), field.types[0], field.types[-1] if len(field.types) > 1 else None)
        for key, field in source.fields.items()
        if key.startswith("tokenizer.")
    }


def write_tiny_llama(
    path: Path,
    types: dict[str, str] | None = None,
    *,
    architecture: str = "llama",
    tokenizer_model: str | None = None,
    seed: int = 0,
    metadata: dict | None = None,
    shapes: dict[str, tuple[int, ...]] | None = None,
    last: tuple[str, ...] = (),
    chat_template: str | None = None,
    renamed_token: tuple[int, str] | None = None,
    tokenizer_edits: dict | None = None,
) -> Path:
    """A 2-layer random Llama; types maps a tensor role (attn_q, ffn_down, token_embd, ...) to a quant type.

    For crafted files: metadata overrides header fields by their key without the architecture (e.g.
    {"embedding_length": 128}); shapes gives a tensor (by its GGUF name) another shape, rows first, any number
    of dimensions; last names tensors written after all the others, at the end of the file; chat_template
    replaces the embedded tokenizer's template; tokenizer_edits maps a tokenizer key to a function of its value giving
    the value written (None: the key left out).
    """
    import gguf

    types = {"token_embd": "Q8_0", **(types or {})}
    shapes = shapes or {}
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), architecture)
    fields = {
        "block_count": LAYERS,
        "context_length": 256,
        "embedding_length": HIDDEN,
        "feed_forward_length": FFN,
        "attention.head_count": HEADS,
        "attention.head_count_kv": KV_HEADS,
        "rope.dimension_count": HIDDEN // HEADS,
        "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.freq_base": 10000.0,
        **(metadata or {}),
    }
    for key, value in fields.items():
        kind = gguf.GGUFValueType.FLOAT32 if isinstance(value, float) else gguf.GGUFValueType.UINT32
        if isinstance(value, int) and not 0 <= value < 2**32:
            kind = gguf.GGUFValueType.INT64 if value < 0 else gguf.GGUFValueType.UINT64
        writer.add_key_value(key if key.startswith("general.") else f"{architecture}.{key}", value, kind)
    for key, (value, kind, item_kind) in _tokenizer_fields().items():
        if key == "tokenizer.ggml.model" and tokenizer_model is not None:
            value = tokenizer_model
        if key == "tokenizer.chat_template" and chat_template is not None:
            value = chat_template
        if key == "tokenizer.ggml.tokens" and renamed_token is not None:  # another vocabulary, of the same size
            value = [renamed_token[1] if index == renamed_token[0] else token for index, token in enumerate(value)]
        if key in (tokenizer_edits or {}):
            value = tokenizer_edits[key](value)
            if value is None:
                continue
        writer.add_key_value(key, value, kind, item_kind)
    vocab = len(_tokenizer_fields()["tokenizer.ggml.tokens"][0])
    tensor_shapes = {
        "attn_q": (HIDDEN, HIDDEN),
        "attn_k": (HIDDEN * KV_HEADS // HEADS, HIDDEN),
        "attn_v": (HIDDEN * KV_HEADS // HEADS, HIDDEN),
        "attn_output": (HIDDEN, HIDDEN),
        "ffn_gate": (FFN, HIDDEN),
        "ffn_up": (FFN, HIDDEN),
        "ffn_down": (HIDDEN, FFN),
    }

    held: list[tuple[str, np.ndarray, dict]] = []

    def add(name: str, rows: int, columns: int, qtype: str) -> None:
        shape = shapes.get(name, (rows, columns))
        kind = gguf.GGMLQuantizationType[qtype]
        block_size, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        outer = int(np.prod(shape[:-1]))
        empty = np.zeros((0, shape[-1] // block_size * block_bytes), dtype=np.uint8)
        data = _quantised(outer, shape[-1], qtype, rng) if outer else empty
        raw_shape = (*shape[:-1], shape[-1] // block_size * block_bytes)
        held.append((name, data, {"raw_shape": raw_shape, "raw_dtype": kind}))

    def add_vector(name: str, size: int) -> None:
        size = shapes.get(name, (size,))
        held.append((name, rng.uniform(0.5, 1.5, size).astype(np.float32), {}))

    add("token_embd.weight", vocab, HIDDEN, types["token_embd"])
    if "output" in types or "output.weight" in shapes:
        add("output.weight", vocab, HIDDEN, types.get("output", "Q8_0"))
    add_vector("output_norm.weight", HIDDEN)
    for layer in range(LAYERS):
        for role, (rows, columns) in tensor_shapes.items():
            add(f"blk.{layer}.{role}.weight", rows, columns, types.get(role, "Q8_0"))
        for norm in ("attn_norm", "ffn_norm"):
            add_vector(f"blk.{layer}.{norm}.weight", HIDDEN)
    for name, data, options in sorted(held, key=lambda item: item[0] in last):
        writer.add_tensor(name, data, **options)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# What each family's GGUF holds besides a Llama layer, named as llama.cpp names it (src/llama-arch.cpp).
FAMILY_EXTRAS = {
    "llama": {},
    "qwen2": {"biases": True},
    "qwen3": {"head_norms": True},
    "phi3": {"fused": True},
    "gemma2": {"post_norms": True, "softcaps": (50.0, 30.0), "window": 8},
    "gemma3": {"post_norms": True, "head_norms": True, "window": 8},
}


def write_tiny_family(
    path: Path,
    architecture: str,
    qtype: str = "Q8_0",
    *,
    layers: int = LAYERS,
    seed: int = 0,
    vocab: int | None = None,
    heads: int = HEADS,
    kv_heads: int = KV_HEADS,
    head_dim: int | None = None,
) -> Path:
    """A small random model of one family, as llama.cpp's converter lays it out, with the embedded tokenizer.

    Gemma's sliding window is 8 positions, so a short prompt reaches past it; Gemma 3 has 6 layers by
    default here so its pattern (5 sliding, then 1 full) shows. With vocab, a vocabulary of that many
    placeholder tokens instead of the embedded one: a file of a few hundred KB for the kernels alone (fuzz tests).
    heads, kv_heads and head_dim (default: the width over the heads) shape the attention.
    """
    import gguf

    extras = FAMILY_EXTRAS[architecture]
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), architecture)
    head_dim = head_dim or HIDDEN // heads
    q_width = heads * head_dim
    writer.add_block_count(layers)
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(10000.0)
    if "window" in extras:
        writer.add_sliding_window(extras["window"])
    if "softcaps" in extras:
        writer.add_attn_logit_softcapping(extras["softcaps"][0])
        writer.add_final_logit_softcapping(extras["softcaps"][1])
    if vocab is None:
        for key, (value, kind, item_kind) in _tokenizer_fields().items():
            writer.add_key_value(key, value, kind, item_kind)
        vocab = len(_tokenizer_fields()["tokenizer.ggml.tokens"][0])
    else:
        writer.add_token_list([f"t{index}" for index in range(vocab)])  # the vocabulary's size, as llama.cpp reads it
    kv_width = head_dim * kv_heads

    def matrix(name: str, rows: int, columns: int) -> None:
        writer.add_tensor(name, _quantised(rows, columns, qtype, rng), raw_dtype=gguf.GGMLQuantizationType[qtype])

    def vector(name: str, size: int, low: float = 0.5, high: float = 1.5) -> None:
        writer.add_tensor(name, rng.uniform(low, high, size).astype(np.float32))

    matrix("token_embd.weight", vocab, HIDDEN)
    vector("output_norm.weight", HIDDEN)
    for layer in range(layers):
        prefix = f"blk.{layer}."
        vector(prefix + "attn_norm.weight", HIDDEN)
        vector(prefix + "ffn_norm.weight", HIDDEN)
        if extras.get("fused"):
            matrix(prefix + "attn_qkv.weight", q_width + 2 * kv_width, HIDDEN)
            matrix(prefix + "ffn_up.weight", 2 * FFN, HIDDEN)  # gate rows, then up rows
        else:
            matrix(prefix + "attn_q.weight", q_width, HIDDEN)
            matrix(prefix + "attn_k.weight", kv_width, HIDDEN)
            matrix(prefix + "attn_v.weight", kv_width, HIDDEN)
            matrix(prefix + "ffn_gate.weight", FFN, HIDDEN)
            matrix(prefix + "ffn_up.weight", FFN, HIDDEN)
        matrix(prefix + "attn_output.weight", HIDDEN, q_width)
        matrix(prefix + "ffn_down.weight", HIDDEN, FFN)
        if extras.get("biases"):
            vector(prefix + "attn_q.bias", q_width, -0.5, 0.5)
            vector(prefix + "attn_k.bias", kv_width, -0.5, 0.5)
            vector(prefix + "attn_v.bias", kv_width, -0.5, 0.5)
        if extras.get("head_norms"):
            vector(prefix + "attn_q_norm.weight", head_dim)
            vector(prefix + "attn_k_norm.weight", head_dim)
        if extras.get("post_norms"):
            vector(prefix + "post_attention_norm.weight", HIDDEN)
            vector(prefix + "post_ffw_norm.weight", HIDDEN)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
