"""A transformers model's shape as the roofline counts it (core/roofline/counts.py), as plain data for describe()."""

from __future__ import annotations

from typing import Any

# The precision a prompt's products run in, per dtype that runs them as torch GEMMs.
GEMM_PRECISION = {"float32": "float32", "bfloat16": "bfloat16"}


def arithmetic_facts(model: Any, weight_bytes: int, dtype: str) -> dict | None:
    """layers, width, heads, ..., weight_bytes and windows of a transformers model; None when its config does not say
    (a model whose shape is not a decoder's). A model on the C kernels says its own (KernelCausalLM.arithmetic)."""
    try:
        return _transformers_facts(model, weight_bytes, dtype)
    except (AttributeError, TypeError, ValueError):
        return None


def _transformers_facts(model: Any, weight_bytes: int, dtype: str) -> dict:
    config = getattr(model.config, "text_config", None) or model.config
    heads = int(config.num_attention_heads)
    width = int(config.hidden_size)
    layers = int(config.num_hidden_layers)
    head_dim = int(getattr(config, "head_dim", None) or width // heads)
    window = int(getattr(config, "sliding_window", None) or 0)
    layer_types = getattr(config, "layer_types", None)
    if layer_types:
        windows = [window if kind == "sliding_attention" else 0 for kind in layer_types]
    else:
        windows = [window if getattr(config, "use_sliding_window", True) else 0] * layers
    embedding = model.get_input_embeddings().weight
    tied = bool(getattr(config, "tie_word_embeddings", False))
    return {
        "layers": layers,
        "width": width,
        "heads": heads,
        "kv_heads": int(getattr(config, "num_key_value_heads", None) or heads),
        "head_dim": head_dim,
        "ffn": int(config.intermediate_size),
        "vocab": int(config.vocab_size),
        "weight_bytes": weight_bytes,
        "embedding_bytes": 0 if tied else int(embedding.numel() * embedding.element_size()),
        "windows": windows,
        "cache_value_bytes": 4 if dtype in ("float32", "int8") else 2,
        "prefill_precision": GEMM_PRECISION.get(dtype),
    }
