"""Where each family's parts live in transformers' modules, for the lean decode pass; the families themselves are
core/model/families.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.model.families import BY_MODEL_TYPE, Family


@dataclass(frozen=True)
class FamilySpec:
    """How one family's decoder layer differs from Llama's; the shared pass (decoder.py) reads nothing else."""

    # Projections whose outputs, side by side, are the queries, keys and values (Phi-3 fuses them).
    qkv: tuple[str, ...] = ("q_proj", "k_proj", "v_proj")
    # Projections whose outputs, side by side, are the MLP's gate and up halves (Phi-3 fuses them).
    gate_up: tuple[str, ...] = ("gate_proj", "up_proj")
    # An RMS norm over each query and key head before the rotation (q_norm and k_norm).
    head_norms: bool = False
    # Gemma: every norm scales by (1 + weight), and norms wrap both sides of the attention and the MLP.
    gemma_norms: bool = False


def _spec(family: Family) -> FamilySpec:
    """A family's parts as transformers names them: Qwen2's biases are in its projections, and Mistral's sliding
    window is handled per layer by the pass."""
    if family.fused:
        return FamilySpec(qkv=("qkv_proj",), gate_up=("gate_up_proj",), head_norms=family.head_norms)
    return FamilySpec(head_norms=family.head_norms, gemma_norms=family.gemma)


FAMILIES: dict[str, FamilySpec] = {model_type: _spec(family) for model_type, family in BY_MODEL_TYPE.items()}


# Rotary embeddings whose frequencies and scaling are fixed at load: the pass takes them from the model
# as they are. transformers recomputes others (dynamic NTK, Phi-3's longrope) as a sequence grows.
ROPE_TYPES_FIXED_AT_LOAD = ("default", "linear", "llama3", "yarn")


def family_spec(model: Any) -> FamilySpec:
    return FAMILIES[model.config.model_type]


def layer_window(config: Any, index: int) -> int | None:
    """How many positions layer `index` attends to (its own included), or None for the whole sequence."""
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return window if layer_types[index] == "sliding_attention" else None
    return window


def layer_rope(config: Any, index: int) -> dict:
    """The rotary parameters of layer `index`: Gemma 3 keeps one set per layer type, the others one in all."""
    rope = getattr(config, "rope_parameters", None) or {}
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None and layer_types[index] in rope:
        return rope[layer_types[index]] or {}
    return rope


def lean_pass_refusal(model: Any) -> str | None:
    """Why this model cannot use the lean pass, or None when it can."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", "unknown")
    if config is None or model_type not in FAMILIES:  # no config: model_type is 'unknown'
        covered = ", ".join(sorted(FAMILIES))
        return f"the lean loop covers {covered}; this model is {model_type!r}"
    for index in range(config.num_hidden_layers):
        rope = layer_rope(config, index)
        if rope.get("rope_type", "default") not in ROPE_TYPES_FIXED_AT_LOAD:
            return f"rope type {rope.get('rope_type')!r} is not covered"
        if rope.get("partial_rotary_factor", 1.0) != 1.0:
            return f"a partial rotary factor ({rope['partial_rotary_factor']}) is not covered"
    if getattr(config, "use_bidirectional_attention", False):
        return "bidirectional attention is not covered"
    if next(model.parameters()).device.type != "cpu":
        return "the lean loop runs on the CPU"
    return None
