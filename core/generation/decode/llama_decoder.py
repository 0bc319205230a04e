"""One forward pass of a Llama-family model over a static KV cache, written as plain torch ops.

transformers' generate() spends about two thirds of an int4 decode step in Python bookkeeping
around the matrix products (cache objects, masks, position ids, module hooks). This pass calls
the model's own modules and weights with none of that; tests check it against the model's forward.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch
import torch.nn.functional as F

from core.generation.stopping import PassInterrupted
from core.quant.groupwise import GROUP_SIZE
from core.quant.int4_linear import KERNEL_DTYPE, Int4Linear

# A new sequence reallocates the cache when it holds more than this many times the room it needs.
SHRINK_FACTOR = 4


def unsupported_reason(model: Any) -> str | None:
    """Why this model cannot use the lean pass, or None when it can."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) != "llama":
        return f"the lean loop covers Llama-family models; this is {getattr(config, 'model_type', 'unknown')!r}"
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        return f"rope type {rope.get('rope_type')!r} is not covered"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r} is not covered"
    if next(model.parameters()).device.type != "cpu":
        return "the lean loop runs on the CPU"
    return None


class LlamaDecoder:
    """forward(token_ids, start) returns the logits of the last position and extends the cache."""

    def __init__(self, model: Any):
        reason = unsupported_reason(model)
        if reason:
            raise ValueError(reason)
        config = model.config
        # Parts of the model, never the model itself: choice.py caches decoders by a weak reference
        # to the model, which must be free to go when the app drops it.
        self._embed, self._final_norm, self._head = model.model.embed_tokens, model.model.norm, model.lm_head
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        self.dtype = model.model.embed_tokens.weight.dtype if hasattr(model.model.embed_tokens, "weight") \
            else torch.float32
        rope = getattr(config, "rope_parameters", None) or {}
        self.rope_theta = float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
        self.layers = [_Layer(layer) for layer in model.model.layers]
        self.capacity = 0
        self._keys = self._values = self._cos = self._signed_sin = None

    def start_sequence(self, positions: int) -> None:
        """Room for a new sequence of about this many positions; what the cache holds is not needed.

        A cache far larger than that, left by a long reply, is given back here instead of being
        held for as long as the model is loaded.
        """
        if self.capacity > SHRINK_FACTOR * positions:
            self._allocate(positions, keep=False)
        else:
            self.reserve(positions)

    def reserve(self, positions: int) -> None:
        """Make room for this many positions, keeping what the cache holds.

        Callers start a sequence with the prompt plus a little; forward() doubles the room as a reply
        grows, so a generous max-new-tokens does not allocate a full-context cache for a short reply.
        """
        if positions > self.capacity:
            self._allocate(max(positions, 2 * self.capacity), keep=True)

    def _allocate(self, capacity: int, keep: bool) -> None:
        shape = (len(self.layers), 1, self.kv_heads, capacity, self.head_dim)
        keys, values = torch.zeros(shape, dtype=self.dtype), torch.zeros(shape, dtype=self.dtype)
        if keep and self.capacity:
            keys[:, :, :, : self.capacity] = self._keys
            values[:, :, :, : self.capacity] = self._values
        self._keys, self._values = keys, values
        half = torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim
        angles = torch.outer(torch.arange(capacity, dtype=torch.float32), 1.0 / (self.rope_theta ** half))
        angles = torch.cat([angles, angles], dim=-1)
        # rotate_half(x) * sin == roll(x, half) * sin with its first half negated: one op, not four.
        signed_sin = angles.sin()
        signed_sin[:, : self.head_dim // 2] *= -1
        self._cos, self._signed_sin = angles.cos().to(self.dtype), signed_sin.to(self.dtype)
        self.capacity = capacity

    def forward(self, token_ids: torch.Tensor, start: int,
                interrupt: threading.Event | None = None,
                on_layer: Callable[[int, int], None] | None = None) -> torch.Tensor:
        """token_ids: 1-D, at positions start, start+1, ...; a prompt starts at 0. Returns [1, vocab].

        When interrupt is set between two layers, raises PassInterrupted, as generate()'s pre-hooks do:
        the pass is abandoned (the cache then holds a partial pass, which the next sequence overwrites).
        A long prompt's one pass takes seconds, and a stop should not have to wait for it.

        on_layer(layers_done, layers_total) is called at the same points, after the stop check, and once
        more after the last layer; callers pass it for the prompt's pass only, so decode steps pay nothing.
        """
        count = token_ids.shape[0]
        end = start + count
        self.reserve(end)
        if count > 1 and start != 0:
            raise ValueError("several tokens at once are only supported for a prompt at position 0")
        hidden = self._embed(token_ids.view(1, count)).view(count, -1).to(self.dtype)
        cos, signed_sin = self._cos[start:end], self._signed_sin[start:end]
        for index, layer in enumerate(self.layers):
            if interrupt is not None and interrupt.is_set():
                raise PassInterrupted()
            if on_layer is not None:
                on_layer(index, len(self.layers))
            normed = _rms_norm(hidden, layer.input_norm, self.eps)
            query_key, value = layer.attention_inputs(normed)
            # Queries and keys rotate as one tensor: half the small ops of rotating each.
            rotated = _rotate(query_key.view(count, self.heads + self.kv_heads, self.head_dim).transpose(0, 1),
                              cos, signed_sin)
            query, key = rotated[:self.heads], rotated[self.heads:]
            self._keys[index, 0, :, start:end] = key
            self._values[index, 0, :, start:end] = value.view(count, self.kv_heads, self.head_dim).transpose(0, 1)
            keys, values = self._keys[index, 0, :, :end], self._values[index, 0, :, :end]
            # SDPA, as the model's own attention uses: two bmm were 0.3 ms a token faster but round
            # differently, and greedy replies then parted from generate()'s after a few tokens.
            attended = F.scaled_dot_product_attention(
                query.unsqueeze(0), keys.unsqueeze(0), values.unsqueeze(0), is_causal=count > 1,
                enable_gqa=self.heads != self.kv_heads)[0].transpose(0, 1).reshape(count, -1)
            hidden = hidden + layer.output(attended)
            hidden = hidden + layer.mlp(_rms_norm(hidden, layer.post_norm, self.eps))
        if on_layer is not None:
            on_layer(len(self.layers), len(self.layers))
        return self._head(self._final_norm(hidden[-1:]))


class _Layer:
    """One decoder layer's norms and projections, with q/k/v read from a single input."""

    def __init__(self, layer: Any):
        attention, mlp = layer.self_attn, layer.mlp
        self.input_norm = layer.input_layernorm.weight
        self.post_norm = layer.post_attention_layernorm.weight
        self._qkv = _projection(attention.q_proj, attention.k_proj, attention.v_proj)
        self._value_size = attention.v_proj.out_features
        self._o = _projection(attention.o_proj)
        self._gate_up = _projection(mlp.gate_proj, mlp.up_proj)
        self._down = _projection(mlp.down_proj)

    def attention_inputs(self, normed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries and keys side by side, values)."""
        projected = self._qkv(normed)
        return projected[:, :-self._value_size], projected[:, -self._value_size:]

    def output(self, attended: torch.Tensor) -> torch.Tensor:
        return self._o(attended)

    def mlp(self, normed: torch.Tensor) -> torch.Tensor:
        gate, up = self._gate_up(normed).chunk(2, dim=-1)
        return self._down(F.silu(gate) * up)


def _projection(*modules: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """Several projections of one input, their outputs side by side. Bias-free int4 layers run as one
    fused product, since each kernel call costs about as much in overhead as in arithmetic at one token."""
    if not all(isinstance(module, Int4Linear) and module.bias is None for module in modules):
        if len(modules) == 1:
            return modules[0]
        return lambda x: torch.cat([module(x) for module in modules], dim=-1)
    weight = torch.cat([module.packed_weight for module in modules], dim=0)
    scales = torch.cat([module.scales_and_zeros for module in modules], dim=1)
    matmul = torch.ops.aten._weight_int4pack_mm_for_cpu

    def project(x: torch.Tensor) -> torch.Tensor:
        return matmul(x.to(KERNEL_DTYPE), weight, GROUP_SIZE, scales).to(x.dtype)

    return project


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """LlamaRMSNorm's own op sequence, so it equals the model's norm by construction; side by side it was
    no slower than torch's fused rms_norm (11.19 vs 11.32 ms per int4 decode step)."""
    scaled = x.float()
    scaled = scaled * torch.rsqrt(scaled.pow(2).mean(-1, keepdim=True) + eps)
    return weight * scaled.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding, x * cos + rotate_half(x) * sin, with the same rounding."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin
