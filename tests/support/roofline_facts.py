"""A model's shape and a machine's ceilings as the roofline reads them, shared by the roofline's and the Lab's tests."""

from __future__ import annotations

from core.roofline.ceilings import Ceiling, Ceilings

MIB = 2**20
GIGA = 1e9
# The embedded model's shape, its Q4_1 weights, a bfloat16 GEMM for prompts.
ARITHMETIC = {
    "layers": 30,
    "width": 576,
    "heads": 9,
    "kv_heads": 3,
    "head_dim": 64,
    "ffn": 1536,
    "vocab": 49152,
    "weight_bytes": 98_000_000,
    "windows": [0] * 30,
    "prefill_precision": "bfloat16",
}
LABELS = {
    "gemm_float32": ("float32 GEMM", "flop/s"),
    "gemm_bfloat16": ("bfloat16 GEMM", "flop/s"),
    "gemm_int8": ("int8 GEMM", "flop/s"),
    "gemm_amx_int8": ("AMX int8 GEMM", "flop/s"),
    "dram": ("DRAM", "byte/s"),
    "llc": ("last-level cache", "byte/s"),
}


def ceilings_document(values: dict[str, float], llc_bytes: int | None = 300 * MIB) -> dict:
    """Ceilings as a run saves them (Ceilings.to_dict()), from {name: value}, measured by hand on a 2-thread Xeon."""
    made = {name: Ceiling(name, *LABELS[name], value, value, 5, "by hand") for name, value in values.items()}
    return Ceilings(made, "a Xeon", 2, llc_bytes, "today", 0.0, False).to_dict()


# The AMX Xeon's, as the Lab measured them: four GEMM ceilings (bfloat16's and int8's a fifth of a decade apart).
XEON_AMX = {
    "gemm_float32": 230 * GIGA,
    "gemm_bfloat16": 2163 * GIGA,
    "gemm_int8": 1367 * GIGA,
    "gemm_amx_int8": 7031 * GIGA,
    "dram": 28.3 * GIGA,
    "llc": 56.8 * GIGA,
}
