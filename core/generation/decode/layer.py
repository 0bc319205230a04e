"""One decoder layer's weights and projections, read through its family's spec into one shape for the pass."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from core.generation.decode.families import FamilySpec
from core.generation.decode.projection import fused_projection


class LayerParts:
    """Norm weights, fused projections and the MLP of one layer; norms the family lacks are None."""

    def __init__(self, layer: Any, spec: FamilySpec, heads: int, kv_heads: int, head_dim: int):
        attention, mlp = layer.self_attn, layer.mlp
        self.input_norm = layer.input_layernorm.weight
        if spec.gemma_norms:
            # Gemma names its four norms after where they sit: around the attention, then around the MLP.
            self.post_attention_norm = layer.post_attention_layernorm.weight
            self.pre_mlp_norm = layer.pre_feedforward_layernorm.weight
            self.post_mlp_norm = layer.post_feedforward_layernorm.weight
        else:
            self.post_attention_norm = self.post_mlp_norm = None
            self.pre_mlp_norm = layer.post_attention_layernorm.weight
        # One weight row per query head then per key head, so one norm call covers both (see decoder.py).
        self.head_norm = (
            torch.cat([attention.q_norm.weight.expand(heads, -1), attention.k_norm.weight.expand(kv_heads, -1)])
            if spec.head_norms
            else None
        )
        self._qkv = fused_projection(*(getattr(attention, name) for name in spec.qkv))
        self._o = fused_projection(attention.o_proj)
        self._gate_up = fused_projection(*(getattr(mlp, name) for name in spec.gate_up))
        self._down = fused_projection(mlp.down_proj)
        self._activation = _plain_activation(mlp.act_fn if hasattr(mlp, "act_fn") else mlp.activation_fn)
        self._value_size = kv_heads * head_dim

    def attention_inputs(self, normed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries and keys side by side, values)."""
        projected = self._qkv(normed)
        return projected[:, : -self._value_size], projected[:, -self._value_size :]

    def output(self, attended: torch.Tensor) -> torch.Tensor:
        return self._o(attended)

    def mlp(self, normed: torch.Tensor) -> torch.Tensor:
        gate, up = self._gate_up(normed).chunk(2, dim=-1)
        return self._down(self._activation(gate) * up)


def _plain_activation(module: Any) -> Any:
    """The function behind the MLP's own activation module (SiLU for most, Gemma's tanh GELU), so a decode
    step skips nn.Module's call machinery; any other activation runs as the module itself."""
    # Imported here, not at the top: transformers.activations pulls in torch.distributed (0.7 s), and the C-kernel
    # path imports this module without ever building a torch layer.
    from transformers.activations import GELUTanh, SiLUActivation

    if isinstance(module, (nn.SiLU, SiLUActivation)):
        return F.silu
    if isinstance(module, GELUTanh):
        return module.act
    return module
