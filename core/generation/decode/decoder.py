"""One forward pass of a decoder-only model over a static KV cache, written as plain torch ops.

transformers' generate() spends about two thirds of an int4 decode step in Python bookkeeping
around the matrix products (cache objects, masks, position ids, module hooks). This pass calls
the model's own modules and weights with none of that; tests check it against the model's forward.
Llama is the template; each covered family's differences come from its spec (families.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from core.generation.decode.attention import attend
from core.generation.decode.families import family_spec, layer_window, lean_pass_refusal
from core.generation.decode.layer import LayerParts
from core.generation.decode.prompt_cache import PromptCache
from core.generation.stopping import PassInterrupted

# A new sequence reallocates the cache when it holds more than this many times the room it needs.
SHRINK_FACTOR = 4


class LeanDecoder:
    """forward(token_ids, start) returns the logits of the last position and extends the cache."""

    _keys: torch.Tensor  # [layer, 1, kv head, position, dim], room for `capacity` positions
    _values: torch.Tensor

    def __init__(self, model: Any):
        reason = lean_pass_refusal(model)
        if reason:
            raise ValueError(reason)
        config, spec = model.config, family_spec(model)
        # Parts of the model, never the model itself: choice.py caches decoders by a weak reference
        # to the model, which must be free to go when the app drops it.
        self._embed, self._final_norm, self._head = model.model.embed_tokens, model.model.norm, model.lm_head
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        self._norm = _gemma_rms_norm if spec.gemma_norms else _rms_norm
        # Gemma scales queries by query_pre_attn_scalar, not the head size, and soft-caps scores and logits.
        self.scale = (getattr(config, "query_pre_attn_scalar", None) or self.head_dim) ** -0.5
        self.attention_softcap = getattr(config, "attn_logit_softcapping", None)
        self.final_softcap = getattr(config, "final_logit_softcapping", None)
        self.dtype = (
            model.model.embed_tokens.weight.dtype if hasattr(model.model.embed_tokens, "weight") else torch.float32
        )
        self.layers = [
            LayerParts(layer, spec, self.heads, self.kv_heads, self.head_dim) for layer in model.model.layers
        ]
        self.windows = [layer_window(config, index) for index in range(len(self.layers))]
        # The rotary frequencies and scaling the model itself holds (per layer type in Gemma 3), not ones
        # recomputed from the config: they cover scaled ropes (Llama 3's, YaRN's) as they are, and a model
        # cast to bfloat16 holds them rounded, as its rotations then are.
        rotary = model.model.rotary_emb
        layer_types = getattr(config, "layer_types", None) or [""] * len(self.layers)
        self.rotary_kinds = [kind if hasattr(rotary, f"{kind}_inv_freq") else "" for kind in layer_types]
        self._rotary = {
            kind: (
                getattr(rotary, f"{kind}_inv_freq" if kind else "inv_freq").float().clone(),
                getattr(rotary, f"{kind}_attention_scaling" if kind else "attention_scaling", 1.0),
            )
            for kind in set(self.rotary_kinds)
        }
        self.capacity = 0
        self._rotations: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._allocate(0, keep=False)  # an empty cache until a sequence makes room
        self.completed = 0  # positions whole in every layer after the last pass, even an abandoned one
        self.prompt_cache = PromptCache(self)

    def start_sequence(self, positions: int, keep: int = 0) -> None:
        """Room for a sequence of about this many positions, whose first `keep` the cache already holds.

        With nothing to keep, a cache far larger than that, left by a long reply, is given back here
        instead of being held for as long as the model is loaded.
        """
        if not keep and self.capacity > SHRINK_FACTOR * positions:
            self._allocate(positions, keep=False)
        else:
            self.reserve(max(positions, keep))

    # -- the prompt cache's store (core/generation/decode/prompt_cache.py) --------------------------

    def position_bytes(self) -> int:
        return 2 * len(self.layers) * self.kv_heads * self.head_dim * torch.finfo(self.dtype).bits // 8

    def copy_cache_out(self, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (self._keys[:, :, :, :positions].clone(), self._values[:, :, :, :positions].clone())

    def copy_cache_in(self, saved: tuple[torch.Tensor, torch.Tensor], positions: int) -> None:
        self.reserve(positions)
        self._keys[:, :, :, :positions] = saved[0]
        self._values[:, :, :, :positions] = saved[1]

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
        self._rotations = {
            kind: self._rotation_table(frequencies, scaling, capacity)
            for kind, (frequencies, scaling) in self._rotary.items()
        }
        self.capacity = capacity

    def _rotation_table(
        self, inverse_frequencies: torch.Tensor, scaling: float, capacity: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, signed sin) for positions 0..capacity, as the model's rotary embedding computes them."""
        angles = torch.outer(torch.arange(capacity, dtype=torch.float32), inverse_frequencies)
        angles = torch.cat([angles, angles], dim=-1)
        # rotate_half(x) * sin == roll(x, half) * sin with its first half negated: one op, not four.
        signed_sin = angles.sin() * scaling
        signed_sin[:, : self.head_dim // 2] *= -1
        return (angles.cos() * scaling).to(self.dtype), signed_sin.to(self.dtype)

    def forward(
        self,
        token_ids: torch.Tensor,
        start: int,
        interrupt: threading.Event | None = None,
        on_layer: Callable[[int, int], None] | None = None,
    ) -> torch.Tensor:
        """token_ids: 1-D, at positions start, start+1, ...; a prompt starts at 0, or where the prompt cache's
        part of it ends. Returns [1, vocab].

        When interrupt is set between two layers, raises PassInterrupted, as generate()'s pre-hooks do:
        the pass is abandoned (the cache then holds a partial pass, which the next sequence overwrites).
        A long prompt's one pass takes seconds, and a stop should not have to wait for it.

        on_layer(layers_done, layers_total) is called at the same points, after the stop check, and once
        more after the last layer; callers pass it for the prompt's pass only, so decode steps pay nothing.
        """
        count = token_ids.shape[0]
        end = start + count
        self.reserve(end)
        self.completed = start
        hidden = self._embed(token_ids.view(1, count)).view(count, -1).to(self.dtype)
        rotations = {
            kind: (cos[start:end], signed_sin[start:end]) for kind, (cos, signed_sin) in self._rotations.items()
        }
        norm = self._norm
        for index, layer in enumerate(self.layers):
            if interrupt is not None and interrupt.is_set():
                raise PassInterrupted()
            if on_layer is not None:
                on_layer(index, len(self.layers))
            query_key, value = layer.attention_inputs(norm(hidden, layer.input_norm, self.eps))
            query_key = query_key.view(count, self.heads + self.kv_heads, self.head_dim)
            if layer.head_norm is not None:
                query_key = norm(query_key, layer.head_norm, self.eps)
            # Queries and keys rotate as one tensor: half the small ops of rotating each.
            rotated = _rotate(query_key.transpose(0, 1), *rotations[self.rotary_kinds[index]])
            query, key = rotated[: self.heads], rotated[self.heads :]
            self._keys[index, 0, :, start:end] = key
            self._values[index, 0, :, start:end] = value.view(count, self.kv_heads, self.head_dim).transpose(0, 1)
            attended = attend(
                query,
                self._keys[index, 0, :, :end],
                self._values[index, 0, :, :end],
                start=start,
                window=self.windows[index],
                scale=self.scale,
                softcap=self.attention_softcap,
            )
            attention_out = layer.output(attended)
            if layer.post_attention_norm is not None:  # Gemma normalises each sublayer's output too
                attention_out = norm(attention_out, layer.post_attention_norm, self.eps)
            hidden = hidden + attention_out
            mlp_out = layer.mlp(norm(hidden, layer.pre_mlp_norm, self.eps))
            if layer.post_mlp_norm is not None:
                mlp_out = norm(mlp_out, layer.post_mlp_norm, self.eps)
            hidden = hidden + mlp_out
        if on_layer is not None:
            on_layer(len(self.layers), len(self.layers))
        self.completed = end
        logits = self._head(self._final_norm(hidden[-1:]))
        if self.final_softcap is not None:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """LlamaRMSNorm's own op sequence, so it equals the model's norm by construction; side by side it was
    no slower than torch's fused rms_norm (11.19 vs 11.32 ms per int4 decode step)."""
    scaled = x.float()
    scaled = scaled * torch.rsqrt(scaled.pow(2).mean(-1, keepdim=True) + eps)
    return weight * scaled.to(x.dtype)


def _gemma_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Gemma's RMSNorm op for op: it scales by (1 + weight) in float32 and rounds once at the end."""
    scaled = x.float()
    scaled = scaled * torch.rsqrt(scaled.pow(2).mean(-1, keepdim=True) + eps)
    return (scaled * (1.0 + weight.float())).type_as(x)


def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding, x * cos + rotate_half(x) * sin, with the same rounding."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin
