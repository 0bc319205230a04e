"""One prompt GEMM alone, per weight type: AMX's tiles against the AVX-512 GEMM, and the tiles' share of their ceiling.

ll_gemm_rows on one thread, ROWS x COLUMNS weights by --tokens activations, the two paths interleaved (ll_use_amx),
the median of --rounds each; then the tiles' int8 ceiling (ll_amx_peak, the same thread) and each type's share of it:
"useful" counts the products a GEMM needs (rows x columns x tokens), "tile work" the products the tiles run, which for
the k-quants is that times the digits their scales are split into (csrc/gemm_amx.c). The weights are random bytes
with normal float16 scales: the kernels' work does not depend on the values. Where the tiles are off or absent it
times the AVX-512 (or AVX2) GEMM alone.
Run: .venv/bin/python benchmarks/gemm_tiles.py [--types Q4_0,Q8_0,Q4_K,Q5_K,Q6_K] [--tokens 512] [--rounds 15]
"""

from __future__ import annotations

import argparse
import time

import _common  # (sets the import path and offline mode)
import numpy as np
from _common import median

ROWS = COLUMNS = 2048
# Where each type's float16 scales lie in its block (d, and dmin for the types with a minimum), and its block bytes.
SCALES = {"Q4_0": (18, (0,)), "Q8_0": (34, (0,)), "Q4_K": (144, (0, 2)), "Q5_K": (176, (0, 2)), "Q6_K": (210, (208,))}
# Tile products per block of useful work (csrc/gemm_amx.c: AMX_DIGITS_ENTRY's DIGITS; one for AMX_ENTRY's types).
DIGITS = {"Q4_K": 2, "Q5_K": 3, "Q6_K": 4}
PEAK_ROUNDS = 200_000


def weights(library, name: str, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    row_bytes = library.types[name].row_bytes(COLUMNS)
    rows = rng.integers(0, 256, (ROWS, row_bytes), dtype=np.uint8)
    block, offsets = SCALES[name]
    half = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    blocks = rows.reshape(ROWS, -1, block)
    for offset in offsets:
        blocks[:, :, offset : offset + 2] = half
    return rows, row_bytes


def activations(library, name: str, tokens: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    kind = library.types[name].activation
    size = next(other for other in library.types.values() if other.id == kind).row_bytes(COLUMNS)
    rows = np.zeros((tokens, size), dtype=np.uint8)
    for token in range(tokens):
        x = rng.normal(0, 1, COLUMNS).astype(np.float32)
        if library.ll_quantize_activation(kind, x.ctypes.data, rows[token].ctypes.data, COLUMNS) != 0:
            raise SystemExit(f"quantising {name}'s activations failed")
    return rows, size


def gemm_ms(library, name: str, w, row_bytes: int, a, a_bytes: int, tokens: int, out: np.ndarray) -> float:
    started = time.perf_counter()
    status = library.ll_gemm_rows(
        library.kernel_types[name], COLUMNS, w.ctypes.data, row_bytes, ROWS, a.ctypes.data, a_bytes, tokens,
        out.ctypes.data,
    )  # fmt: skip
    if status != 0:
        raise SystemExit(f"{name}: this build has no GEMM for it")
    return (time.perf_counter() - started) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default=",".join(SCALES))
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=15)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "gemm_tiles")
    names = args.types.split(",")
    unknown = [name for name in names if name not in SCALES]
    if unknown:
        raise SystemExit(f"not measured here: {', '.join(unknown)} (choose from {', '.join(SCALES)})")

    from core.kernels.library import kernels

    library = kernels(portable=False)
    tiles = bool(library.ll_use_amx(-1))
    paths = (1, 0) if tiles else (0,)
    started = time.perf_counter()
    macs_per_round = library.ll_amx_peak(PEAK_ROUNDS, 1) if tiles else 0
    peak = macs_per_round * PEAK_ROUNDS / (time.perf_counter() - started) if tiles else 0.0
    print(
        f"{library.isa} kernels, one thread, {ROWS:,} x {COLUMNS:,} weights by {args.tokens} tokens, "
        f"median of {args.rounds}; the tiles' int8 ceiling "
        + (f"{2 * peak / 1e12:.2f} TOPS" if tiles else "absent (no AMX here, or LATENCYLAB_AMX=0)")
    )
    print(f"{'type':<6} {'tiles ms':>9} {'AVX-512 ms':>11} {'speed-up':>9} {'useful share':>13} {'tile work':>10}")
    rng = np.random.default_rng(0)
    useful = ROWS * COLUMNS * args.tokens
    try:
        for name in names:
            w, row_bytes = weights(library, name, rng)
            a, a_bytes = activations(library, name, args.tokens, rng)
            out = np.zeros(ROWS * args.tokens, dtype=np.float32)
            times: dict[int, list[float]] = {path: [] for path in paths}
            for _ in range(args.rounds):
                for path in paths:  # interleaved: both paths see the same phase of the machine
                    library.ll_use_amx(path)
                    times[path].append(gemm_ms(library, name, w, row_bytes, a, a_bytes, args.tokens, out))
            plain = median(times[0])
            if not tiles:
                print(f"{name:<6} {'-':>9} {plain:>11.2f}")
                report.figure(f"{name} gemm_ms", round(plain, 3))
                continue
            tiled = median(times[1])
            share = useful / (tiled / 1e3) / peak
            print(
                f"{name:<6} {tiled:>9.2f} {plain:>11.2f} {plain / tiled:>8.2f}x {share:>12.0%} "
                f"{share * DIGITS.get(name, 1):>10.0%}"
            )
            report.figure(f"{name} tiles_ms", round(tiled, 3))
            report.figure(f"{name} avx512_ms", round(plain, 3))
            report.figure(f"{name} tile_ceiling_share", round(share * DIGITS.get(name, 1), 3))
    finally:
        library.ll_use_amx(1)


if __name__ == "__main__":
    main()
