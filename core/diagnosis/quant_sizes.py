"""What a decode step of a model would read in another quantisation: from the model's shape and each GGUF type's
bytes per block (gguf's own table), never guessed."""

from __future__ import annotations

from core.roofline.counts import ArithmeticShape

# Each mix as llama.cpp's quantiser writes it: the type of most weights; the type of attn_v and ffn_down in the
# layers its use_more_bits rule picks; and the head's type.
MIXES = {
    "Q4_0": ("Q4_0", "Q4_0", "Q6_K"),
    "Q4_K_M": ("Q4_K", "Q6_K", "Q6_K"),
    "Q5_K_M": ("Q5_K", "Q6_K", "Q6_K"),
    "Q6_K": ("Q6_K", "Q6_K", "Q6_K"),
    "Q8_0": ("Q8_0", "Q8_0", "Q8_0"),
}


def bytes_per_weight(type_name: str) -> float:
    import gguf

    block_size, block_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[type_name]]
    return block_bytes / block_size


def more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third one between."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def step_weight_bytes(shape: ArithmeticShape, mix: str) -> float:
    """The weights one decode step reads with the model quantised as `mix` (its embedding: one row)."""
    main, more, head = (bytes_per_weight(name) for name in MIXES[mix])
    q_size, kv_size = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    total = 0.0
    for layer in range(shape.layers):
        bigger = more_bits(layer, shape.layers)
        v, down = shape.width * kv_size, shape.ffn * shape.width
        rest = shape.width * (q_size + kv_size) + q_size * shape.width + 2 * shape.width * shape.ffn
        total += rest * main + (v + down) * (more if bigger else main)
    return total + shape.head_parameters() * head + shape.width * main
