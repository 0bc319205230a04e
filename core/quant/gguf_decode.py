"""Decode GGUF quant blocks (Q4_0 … Q8_0, Q4_K, Q5_K, Q6_K) into IntGroups, exactly, following ggml-quants.c."""

from __future__ import annotations

import numpy as np
import torch

from core.quant.int_groups import IntGroups

# Bytes per block and weights per block of each type decoded here.
BLOCK_LAYOUT = {
    "Q4_0": (18, 32),
    "Q4_1": (20, 32),
    "Q5_0": (22, 32),
    "Q5_1": (24, 32),
    "Q8_0": (34, 32),
    "Q4_K": (144, 256),
    "Q5_K": (176, 256),
    "Q6_K": (210, 256),
}
NATIVE_TYPES = tuple(BLOCK_LAYOUT)
# Base-16 planes each type's whole numbers need (core/quant/int_groups.py): Q8_0's -128..127 spans
# 255 = 15 * 17, two planes; Q6_K folds its int8 sub-block scales into n, up to about +-4096, four.
PLANE_COUNT = {"Q4_0": 1, "Q4_1": 1, "Q4_K": 1, "Q5_0": 2, "Q5_1": 2, "Q5_K": 2, "Q8_0": 2, "Q6_K": 4}


def decode(raw: np.ndarray, qtype: str) -> IntGroups:
    """raw: uint8 [rows, row_bytes], a row's blocks back to back. Raises KeyError for other types."""
    block_bytes, block_size = BLOCK_LAYOUT[qtype]
    rows = raw.shape[0]
    blocks = np.ascontiguousarray(raw).reshape(rows, -1, block_bytes)
    n, scales, minimums = _DECODERS[qtype](blocks)
    columns = blocks.shape[1] * block_size
    return IntGroups(
        torch.from_numpy(np.ascontiguousarray(n.reshape(rows, columns), dtype=np.int32)),
        torch.from_numpy(np.ascontiguousarray(scales.reshape(rows, columns // 32), dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(minimums.reshape(rows, columns // 32), dtype=np.float32)),
    )


def _half(blocks: np.ndarray, offset: int) -> np.ndarray:
    return blocks[..., offset : offset + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    # Low nibbles are weights 0..15 of a 32-block, high nibbles 16..31.
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int32)


def _high_bits(qh: np.ndarray) -> np.ndarray:
    """Q5_0/Q5_1: bit j of the little-endian uint32 is the fifth bit of weight j."""
    bits = qh.copy().view("<u4")[..., 0]
    return ((bits[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)


def _q4_0(b):
    d = _half(b, 0)
    return _nibbles(b[..., 2:]) - 8, d, np.zeros_like(d)


def _q4_1(b):
    return _nibbles(b[..., 4:]), _half(b, 0), _half(b, 2)


def _q5_0(b):
    d = _half(b, 0)
    return _nibbles(b[..., 6:]) + 16 * _high_bits(b[..., 2:6]) - 16, d, np.zeros_like(d)


def _q5_1(b):
    return _nibbles(b[..., 8:]) + 16 * _high_bits(b[..., 4:8]), _half(b, 0), _half(b, 2)


def _q8_0(b):
    d = _half(b, 0)
    return b[..., 2:].view(np.int8).astype(np.int32), d, np.zeros_like(d)


def _k_scales(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """get_scale_min_k4: eight 6-bit scales and minimums packed in 12 bytes."""
    s = scales.astype(np.int32)
    low_sc, low_m = s[..., 0:4] & 63, s[..., 4:8] & 63
    high_sc = (s[..., 8:12] & 0x0F) | ((s[..., 0:4] >> 6) << 4)
    high_m = (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)
    return np.concatenate([low_sc, high_sc], -1), np.concatenate([low_m, high_m], -1)


def _k_quants(qs: np.ndarray) -> np.ndarray:
    """Q4_K/Q5_K: each 32 bytes hold two sub-blocks, low nibbles first. -> [..., 8, 32]."""
    chunks = qs.reshape(*qs.shape[:-1], 4, 32).astype(np.int32)
    return np.stack([chunks & 0x0F, chunks >> 4], axis=-2).reshape(*qs.shape[:-1], 8, 32)


def _q4_k(b):
    d, dmin = _half(b, 0), _half(b, 2)
    sc, m = _k_scales(b[..., 4:16])
    return _k_quants(b[..., 16:144]), d[..., None] * sc, -dmin[..., None] * m


def _q5_k(b):
    d, dmin = _half(b, 0), _half(b, 2)
    sc, m = _k_scales(b[..., 4:16])
    qh = b[..., 16:48].astype(np.int32)  # bit i of qh[l] is the fifth bit of weight l of sub-block i
    high = (qh[..., None, :] >> np.arange(8)[:, None]) & 1
    return _k_quants(b[..., 48:176]) + 16 * high, d[..., None] * sc, -dmin[..., None] * m


def _q6_k(b):
    ql = b[..., 0:128].reshape(*b.shape[:-1], 2, 64).astype(np.int32)
    qh = b[..., 128:192].reshape(*b.shape[:-1], 2, 32).astype(np.int32)
    sc = b[..., 192:208].view(np.int8).astype(np.int32).reshape(*b.shape[:-1], 2, 8)
    d = _half(b, 208)
    # Per half of 128: four runs of 32, from ql's low/high nibbles and qh's bit pairs 0, 2, 4, 6.
    low = np.stack([ql[..., 0:32] & 0x0F, ql[..., 32:64] & 0x0F, ql[..., 0:32] >> 4, ql[..., 32:64] >> 4], -2)
    high = np.stack([(qh >> shift) & 3 for shift in (0, 2, 4, 6)], -2)
    q = (low | (high << 4)) - 32  # [..., 2, 4, 32]
    # Each run of 32 has two 16-wide scales: run r uses scales r*2 and r*2+1 of its half.
    run_scales = np.repeat(sc.reshape(*sc.shape[:-1], 4, 2), 16, axis=-1)  # [..., 2, 4, 32]
    n = (q * run_scales).reshape(*b.shape[:-1], 8, 32)
    scales = np.repeat(d[..., None], 8, axis=-1)
    return n, scales, np.zeros_like(scales)


_DECODERS = {
    "Q4_0": _q4_0,
    "Q4_1": _q4_1,
    "Q5_0": _q5_0,
    "Q5_1": _q5_1,
    "Q8_0": _q8_0,
    "Q4_K": _q4_k,
    "Q5_K": _q5_k,
    "Q6_K": _q6_k,
}
