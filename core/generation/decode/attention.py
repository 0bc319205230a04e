"""Attention of new queries over the cached keys and values, dispatched as transformers dispatches it.

transformers picks among SDPA calls (grouped heads, packed heads, repeated heads; with or without a mask)
and, where scores are soft-capped, an eager sum. Each rounds a little differently, and in int4 a
one-ulp difference can flip a bf16 rounding and part the greedy replies, so this follows the same choice.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def attend(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    *,
    start: int,
    window: int | None,
    scale: float,
    softcap: float | None,
) -> torch.Tensor:
    """query [heads, count, dim] at positions start..; keys and values [kv_heads, end, dim] for positions 0..end.

    Returns [count, heads * dim]. A layer with a sliding window sees only the last `window` positions
    up to each query's own, as transformers' sliding-window mask allows (kv > q - window).
    """
    count, end = query.shape[1], keys.shape[1]
    first = 0 if window is None else max(0, start + 1 - window)  # the earliest key the first query sees
    if first:
        keys, values = keys[:, first:], values[:, first:]
    if softcap is not None:
        mask = _mask(start, count, first, end, window) if count > 1 else None
        attended = _eager_softcapped(query, keys, values, mask, scale, softcap)
    else:
        # transformers drops the mask (for SDPA's is_causal) unless a window is in play: once the keys
        # reach the window's length it keeps one, even where it hides nothing. Several queries after cached
        # positions (a prompt continuing the prompt cache's part) need one too: is_causal aligns them to key 0.
        masked = (window is not None and end >= window) or (count > 1 and start > 0)
        attended = _sdpa(query, keys, values, _mask(start, count, first, end, window) if masked else None, scale)
    return attended.transpose(0, 1).reshape(count, -1)


def _mask(start: int, count: int, first: int, end: int, window: int | None) -> torch.Tensor:
    """[count, keys] True where a query may see a key: causal, and within the window when there is one."""
    query_positions = torch.arange(start, start + count).unsqueeze(1)
    key_positions = torch.arange(first, end).unsqueeze(0)
    allowed = key_positions <= query_positions
    if window is not None:
        allowed &= key_positions > query_positions - window
    return allowed


def _sdpa(
    query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """SDPA, as the models' own attention uses (two bmm were 0.3 ms a token faster but round differently,
    and greedy replies then parted from generate()'s after a few tokens), in transformers' variant."""
    heads, count, dim = query.shape
    groups = heads // keys.shape[0]
    if mask is None:
        return F.scaled_dot_product_attention(
            query[None], keys[None], values[None], is_causal=count > 1, scale=scale, enable_gqa=groups > 1
        )[0]
    if count == 1 and groups > 1:
        # One query: its heads stack onto the key head they share, as transformers' pack_gqa does.
        packed = query.reshape(keys.shape[0], groups, dim)
        attended = F.scaled_dot_product_attention(packed[None], keys[None], values[None], attn_mask=mask, scale=scale)[
            0
        ]
        return attended.reshape(heads, 1, dim)
    keys, values = keys.repeat_interleave(groups, dim=0), values.repeat_interleave(groups, dim=0)
    return F.scaled_dot_product_attention(query[None], keys[None], values[None], attn_mask=mask, scale=scale)[0]


def _eager_softcapped(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    softcap: float,
) -> torch.Tensor:
    """Gemma 2's attention: scores squashed by cap * tanh(score / cap), which SDPA cannot do; the same op
    order as transformers' eager_attention_forward, so the rounding matches."""
    groups = query.shape[0] // keys.shape[0]
    keys, values = keys.repeat_interleave(groups, dim=0), values.repeat_interleave(groups, dim=0)
    scores = torch.matmul(query, keys.transpose(1, 2)) * scale
    scores = torch.tanh(scores / softcap) * softcap
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(weights, values)
