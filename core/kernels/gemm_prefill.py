"""A prompt's pass with its products on torch's GEMM: each layer's weights unpacked once, then one GEMM per weight.

Decode reads every weight once per token, so it is bound by memory and the block kernels win. A prompt's pass
does the arithmetic of hundreds of tokens per weight read: it is bound by arithmetic, and a GEMM library
(oneDNN, with AMX tiles on CPUs that have them) runs it several times faster than block kernels that unpack
every block again per few tokens. So here each layer's weights are unpacked (in C) to the GEMM's precision,
float32 or bfloat16 as measured fastest on this CPU (core/kernels/gemm_choice.py), and multiplied with all the
prompt's rows at once. Between the products the C stages do what the decode pass does, with its arithmetic:
norms, biases, head norms, rotary angles, the float16 KV cache. Attention reads that cache as llama.cpp does:
queries rounded to float16, scores and softmax in float32.

The loop runs layer by layer over the whole prompt (in row chunks), so a layer's weights are unpacked once per
pass. A pass abandoned between layers leaves the positions before `start` as they were and those after it
unusable, as the block kernels' pass does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:  # kernel_model imports this module when a prompt's pass first needs it
    from core.kernels.kernel_model import KernelModel

# Bytes of the feed-forward's [rows, 2 x ffn] float32 output at most: it bounds the rows per GEMM for long
# prompts of wide models. A prompt in one chunk also gets torch's fused causal attention, which is twice as fast
# as the masked kind a later chunk needs.
SCRATCH_BYTES = 256 << 20
# Bytes of attention scores per chunk of queries at most.
SCORE_BYTES = 64 << 20
UNPACK_FORMAT = {torch.float32: 0, torch.bfloat16: 1}
PRECISIONS = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# The products of a layer, each one GEMM: the roles side by side in one matrix, in the order the C stages read.
GROUPS = {
    "qkv": (("attn_qkv",), ("attn_q", "attn_k", "attn_v")),
    "out": (("attn_output",),),
    "gate_up": (("ffn_gate_up",), ("ffn_gate", "ffn_up")),
    "down": (("ffn_down",),),
}


def matrix_roles(kernel: KernelModel, layer: int, group: str) -> tuple[str, ...]:
    for roles in GROUPS[group]:
        if all((layer, role) in kernel.matrices for role in roles):
            return roles
    raise ValueError(f"layer {layer} has no {group} weights")


class GemmPrefill:
    """Runs KernelModel.pass_over's work for one model at one GEMM precision; reuses its weight buffers."""

    def __init__(self, kernel: KernelModel, precision: str):
        self.kernel = kernel
        self.precision = precision
        self.dtype = PRECISIONS[precision]
        self._weights: dict[str, torch.Tensor] = {}

    def pass_over(
        self,
        tokens: np.ndarray,
        start: int,
        threads: int,
        *,
        before_layer: Callable[[int, int], None] | None = None,
        every_position: bool = False,
    ) -> np.ndarray:
        kernel, shape = self.kernel, self.kernel.shape
        lib, handle = kernel.library, kernel.handle
        count = tokens.size
        hidden = kernel.embed(tokens)
        positions = np.arange(start, start + count, dtype=np.int32)
        sequences = np.zeros(count, dtype=np.int32)
        q_size, kv_size = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
        rows = min(count, max(1, SCRATCH_BYTES // (8 * shape.ffn)))
        normed = np.empty((rows, shape.width), dtype=np.float32)
        projected = np.empty((rows, q_size + 2 * kv_size), dtype=np.float32)
        attended = np.empty((rows, q_size), dtype=np.float32)
        activated = np.empty((rows, shape.ffn), dtype=np.float32)
        for layer in range(shape.layers):
            if before_layer is not None:
                before_layer(layer, shape.layers)
            weights = {group: self._unpack(layer, group, threads) for group in GROUPS}
            for first in range(0, count, rows):
                n = min(rows, count - first)
                x = hidden[first : first + n]
                pos, seq = positions[first : first + n], sequences[first : first + n]
                lib.check(
                    lib.ll_stage_attention_norm(handle, layer, _ptr(x), x.size, n, _ptr(normed), normed.size, threads),
                    "the attention norm",
                )
                self._product(normed[:n], weights["qkv"], projected[:n])
                lib.check(
                    lib.ll_stage_prepare(
                        handle,
                        layer,
                        _ptr(projected),
                        projected.size,
                        n,
                        _ptr(seq),
                        _ptr(pos),
                        min(seq.size, pos.size),
                        threads,
                    ),
                    "the rotary embedding and the KV cache",
                )
                attend(kernel, layer, projected[:n, :q_size], pos, attended[:n])
                output = self._product(attended[:n], weights["out"])
                lib.check(
                    lib.ll_stage_residual(
                        handle,
                        layer,
                        0,
                        _ptr(x),
                        x.size,
                        _ptr(output),
                        output.size,
                        n,
                        _ptr(normed),
                        normed.size,
                        threads,
                    ),
                    "the attention's residual",
                )
                gate_up = self._product(normed[:n], weights["gate_up"])
                lib.check(
                    lib.ll_stage_activate(
                        handle, _ptr(gate_up), gate_up.size, n, _ptr(activated), activated.size, threads
                    ),
                    "the feed-forward's activation",
                )
                down = self._product(activated[:n], weights["down"])
                lib.check(
                    lib.ll_stage_residual(
                        handle, layer, 1, _ptr(x), x.size, _ptr(down), down.size, n, None, 0, threads
                    ),
                    "the feed-forward's residual",
                )
        if before_layer is not None:
            before_layer(shape.layers, shape.layers)
        if every_position:
            return np.concatenate(
                [kernel.logits(hidden[first : first + rows], threads) for first in range(0, count, rows)]
            )
        return kernel.logits(hidden[-1:], threads)

    def _product(self, x: np.ndarray, weight: torch.Tensor, out: np.ndarray | None = None) -> np.ndarray:
        """x @ weight.T in the GEMM's precision, as float32 (into out when given)."""
        result = torch.mm(torch.from_numpy(x).to(self.dtype), weight.t())
        if out is None:
            return result.float().numpy()
        torch.from_numpy(out).copy_(result)
        return out

    def _unpack(self, layer: int, group: str, threads: int) -> torch.Tensor:
        """The group's matrices side by side, unpacked into this precision's buffer for the group (reused)."""
        kernel = self.kernel
        parts = [kernel.matrices[layer, role] for role in matrix_roles(kernel, layer, group)]
        rows, columns = sum(part[2] for part in parts), parts[0][3]
        buffer = self._weights.get(group)
        if buffer is None or buffer.shape[0] < rows * columns:
            buffer = self._weights[group] = torch.empty(rows * columns, dtype=self.dtype)
        matrix = buffer[: rows * columns].view(rows, columns)
        offset = 0
        for data, type_id, part_rows, _ in parts:
            kernel.library.check(
                kernel.library.ll_unpack_rows(
                    type_id,
                    data.ctypes.data,
                    data.nbytes,
                    part_rows,
                    columns,
                    matrix[offset:].data_ptr(),
                    matrix[offset:].numel() * matrix.element_size(),
                    UNPACK_FORMAT[self.dtype],
                    threads,
                ),
                f"unpacking layer {layer}'s {group} weights",
            )
            offset += part_rows
        return matrix


def attend(kernel: KernelModel, layer: int, queries: np.ndarray, positions: np.ndarray, out: np.ndarray) -> None:
    """Causal attention of rows at `positions` (one sequence, consecutive) over the float16 cache, into out.

    As llama.cpp's flash attention over a float16 cache computes it: each query rounded to float16 (after
    Gemma's and Phi-3's query scale), products with the float16 keys summed in float32, a float32 softmax
    taken as it goes, its weights rounded to float16 against the float16 values. torch's fused
    scaled_dot_product_attention does exactly that in float16 on the CPU; soft-capped scores (Gemma 2), which
    it cannot cap, take the unfused way with the same roundings.
    """
    shape, config = kernel.shape, kernel.config
    count, heads, head_dim = queries.shape[0], shape.heads, shape.head_dim
    keys_all, values_all = kernel.cache_views()
    window = shape.windows[layer] if shape.windows else 0
    q = torch.from_numpy(queries).view(count, heads, head_dim)
    if shape.scale_queries:
        q = q * config.attention_scale
    q = q.half().transpose(0, 1)  # [head, row, dim]
    score_scale = 1.0 if shape.scale_queries else config.attention_scale
    per_query = heads * (int(positions[-1]) + 1) * 4
    step = max(1, min(count, SCORE_BYTES // per_query))
    result = torch.from_numpy(out).view(count, heads, head_dim)
    for first in range(0, count, step):
        end = min(count, first + step)
        last = int(positions[end - 1]) + 1
        low = max(0, int(positions[first]) - window + 1) if window else 0
        keys = torch.from_numpy(keys_all[0, layer, :, low:last])  # [kv head, key, dim], float16
        values = torch.from_numpy(values_all[0, layer, :, low:last])
        pos = torch.from_numpy(positions[first:end].astype(np.int64))
        key_pos = torch.arange(low, last)
        visible = key_pos[None, :] <= pos[:, None]
        if window:
            visible &= key_pos[None, :] > pos[:, None] - window
        chunk = q[:, first:end]
        if config.attention_softcap > 0:
            attended = _capped_attention(chunk, keys, values, visible, config.attention_softcap, score_scale)
        else:
            causal = not window and int(positions[first]) == 0 and end - first == last
            attended = torch.nn.functional.scaled_dot_product_attention(
                chunk[None],
                keys[None],
                values[None],
                attn_mask=None if causal else visible,
                is_causal=causal,
                scale=score_scale,
                enable_gqa=True,
            )[0]
        result[first:end] = attended.transpose(0, 1)


def _capped_attention(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, visible: torch.Tensor, cap: float, scale: float
) -> torch.Tensor:
    """Gemma 2's soft-capped scores, unfused: float32 products of the float16 values, weights rounded to float16."""
    group = q.shape[0] // keys.shape[0]
    keys = keys.float().repeat_interleave(group, 0)
    values = values.float().repeat_interleave(group, 0)
    scores = torch.bmm(q.float(), keys.transpose(1, 2))
    scores = torch.tanh(scores * (1.0 / cap)) * cap * scale
    scores.masked_fill_(~visible, float("-inf"))
    return torch.bmm(torch.softmax(scores, dim=-1).half().float(), values)


def _ptr(array: np.ndarray | None) -> int | None:
    return None if array is None else array.ctypes.data
