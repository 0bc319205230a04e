"""The C kernels' dot products and dequantisation against gguf's own decoding of the same blocks."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from tiny_gguf import random_blocks

from tests.support.packed_types import PACKED_TYPES

PACKED_QTYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K")
WEIGHT_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16", "F32"]


def _has_avx2() -> bool:
    from core.kernels.build import fast_here

    return fast_here()


# The native build (AVX-512 VNNI kernels where the CPU has them), the AVX2 kernels AVX2-only CPUs run (built
# for Haswell, so an AVX-512 machine tests them too), and the scalar reference.
BUILDS = [
    pytest.param(False, id="native"),
    pytest.param("avx2", id="avx2", marks=pytest.mark.skipif(not _has_avx2(), reason="no AVX2 here")),
    pytest.param(True, id="portable"),
]
COLUMNS = 512  # two k-quant super-blocks, sixteen legacy blocks
# Exact up to float rounding, except where the activation format keeps d * sum(quants) as an fp16 (Q8_1,
# as llama.cpp does): the minimum's term then carries that fp16's rounding, 2^-11 of it.
TOLERANCE = {"Q4_1": 5e-4, "Q5_1": 5e-4}


def _library(portable: bool):
    from core.kernels.library import kernels

    return kernels(portable=portable)


def _weights(qtype: str, rows: int, rng: np.random.Generator, columns: int = COLUMNS) -> tuple[np.ndarray, np.ndarray]:
    """(the row bytes, their float values as gguf decodes them)."""
    import gguf

    kind = gguf.GGMLQuantizationType[qtype]
    if qtype in ("F16", "F32"):
        values = rng.normal(0, 0.05, (rows, columns)).astype(np.float16 if qtype == "F16" else np.float32)
        return values.view(np.uint8).reshape(rows, -1), values.astype(np.float32)
    if qtype == "BF16":
        values = rng.normal(0, 0.05, (rows, columns)).astype(np.float32)
        halves = (values.view(np.uint32) >> 16).astype(np.uint16)
        return halves.view(np.uint8).reshape(rows, -1), (halves.astype(np.uint32) << 16).view(np.float32)
    try:
        raw = gguf.quants.quantize(rng.normal(0, 0.05, (rows, columns)).astype(np.float32), kind)
    except NotImplementedError:
        raw = random_blocks(rows, columns, qtype, rng)
    return raw, gguf.quants.dequantize(raw, kind).astype(np.float32).reshape(rows, columns)


def _at_their_limits(qtype: str, raw: np.ndarray, rng: np.random.Generator) -> None:
    """Rows' quants moved to the ends of their range, in place. Q8_0: -128 (whose magnitude no signed byte holds) and
    127, so that a pair of products by activations of 127 nearly fills 16 bits. Q5_0 and Q5_1: every value 31 (all
    five bits set) or 0, so that sums of products by activations of 127 come nearest 16 bits."""
    if qtype == "Q8_0":
        quants = raw.reshape(raw.shape[0], -1, 34)[:, :, 2:].view(np.int8)
        quants[0] = -128
        quants[1] = 127
        quants[2:] = np.where(rng.random(quants[2:].shape) < 0.5, -128, 127)
    elif qtype in ("Q5_0", "Q5_1"):
        head = 2 if qtype == "Q5_0" else 4
        bits = raw.reshape(raw.shape[0], -1, head + 20)[:, :, head:]  # the fifth bits, then the nibbles
        bits[0] = 0xFF
        bits[1] = 0
        bits[2:] = np.where(rng.random(bits[2:].shape) < 0.5, 0, 0xFF)


def _test_input(qtype: str, rng: np.random.Generator, columns: int) -> np.ndarray:
    """An activation row: for Q8_0 of magnitude 1 throughout (its quants all +-127), for Q5_0 and Q5_1 all 1 (127);
    elsewhere normal."""
    if qtype == "Q8_0":
        return np.where(rng.random(columns) < 0.5, -1.0, 1.0).astype(np.float32)
    if qtype in ("Q5_0", "Q5_1"):
        return np.ones(columns, dtype=np.float32)
    return rng.normal(0, 1, columns).astype(np.float32)


def _activation(library, weight_type: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x quantised into the format the weight type's kernel reads, and what those bytes stand for."""
    act_type = library.types[weight_type].activation
    size = next(kind for kind in library.types.values() if kind.id == act_type).row_bytes(x.size)
    out = np.zeros(size, dtype=np.uint8)
    assert library.ll_quantize_activation(act_type, x.ctypes.data, out.ctypes.data, x.size) == 0
    if act_type == 0:
        return out, out.view(np.float32)
    if act_type == 15:  # Q8_K: float d, 256 quants, 16 int16 sums
        blocks = out.reshape(-1, 292)
        d = blocks[:, :4].copy().view(np.float32)
        quants = blocks[:, 4:260].view(np.int8).astype(np.float32)
        sums = blocks[:, 260:].copy().view(np.int16)
        assert (sums == quants.reshape(-1, 16, 16).sum(-1)).all()
        return out, (d * quants).reshape(-1)
    block = 34 if act_type == 8 else 36
    blocks = out.reshape(-1, block)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    quants = blocks[:, block - 32 :].view(np.int8).astype(np.float32)
    if act_type == 9:  # Q8_1 also keeps d * sum(quants)
        s = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)[:, 0]
        np.testing.assert_allclose(s, d[:, 0] * quants.sum(1), rtol=2e-3, atol=1e-6)
    return out, (d * quants).reshape(-1)


@pytest.mark.parametrize("columns", [COLUMNS, COLUMNS + 32])
@pytest.mark.parametrize("portable", BUILDS)
@pytest.mark.parametrize("qtype", WEIGHT_TYPES)
def test_dot_products_match_the_dequantised_weights(qtype: str, portable: bool, columns: int):
    """columns + 32: an odd number of legacy blocks, whose last one the AVX-512 kernels take at half width."""
    if columns % 256 and qtype.endswith("_K"):
        pytest.skip("k-quant rows are whole 256-element super-blocks")
    library = _library(portable)
    rng = np.random.default_rng(7)
    raw, weights = _weights(qtype, 4, rng, columns)
    rows = [rng.normal(0, 1, columns).astype(np.float32) for _ in range(4)]
    quantised = [_activation(library, qtype, x) for x in rows]
    stride = quantised[0][0].size
    packed = np.concatenate([q for q, _ in quantised])
    expected = np.array([[weights[r].astype(np.float64) @ meant for _, meant in quantised] for r in range(4)])
    magnitude = np.array(
        [[np.abs(weights[r]).astype(np.float64) @ np.abs(meant) for _, meant in quantised] for r in range(4)]
    )
    bound = TOLERANCE.get(qtype, 1e-5) * magnitude + 1e-6
    # Every tile shape the matrix products use (1 x 1 for a decode step, 2 x 1 for AVX-512's legacy 4- and 5-bit
    # types, up to 4 x 4 for a prompt), and others.
    for weight_rows in (1, 2, 3, 4):
        for count in (1, 2, 3, 4):
            out = np.zeros(weight_rows * count, dtype=np.float32)
            status = library.ll_dot_tile(
                library.kernel_types[qtype],
                columns,
                raw.ctypes.data,
                raw.shape[1],
                packed.ctypes.data,
                stride,
                weight_rows,
                count,
                out.ctypes.data,
            )
            assert status == 0
            got = out.reshape(weight_rows, count)
            assert np.all(np.abs(got - expected[:weight_rows, :count]) <= bound[:weight_rows, :count]), (
                weight_rows,
                count,
                got,
                expected,
            )
    reference = library.ll_dot_reference(
        library.kernel_types[qtype], columns, raw[0].ctypes.data, quantised[0][0].ctypes.data
    )
    assert abs(reference - expected[0, 0]) <= bound[0, 0]


@pytest.mark.parametrize("portable", BUILDS)
@pytest.mark.parametrize("qtype", WEIGHT_TYPES)
def test_rows_dequantise_as_gguf_decodes_them(qtype: str, portable: bool):
    library = _library(portable)
    raw, weights = _weights(qtype, 2, np.random.default_rng(3))
    for r in range(2):
        out = np.zeros(COLUMNS, dtype=np.float32)
        assert library.ll_dequantize_row(library.kernel_types[qtype], raw[r].ctypes.data, out.ctypes.data, COLUMNS) == 0
        np.testing.assert_allclose(out, weights[r], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("portable", BUILDS)
def test_activations_are_quantised_to_within_half_a_step(portable: bool):
    library = _library(portable)
    x = np.random.default_rng(1).normal(0, 3, COLUMNS).astype(np.float32)
    for weight_type in ("Q4_0", "Q4_1", "Q4_K"):
        _, meant = _activation(library, weight_type, x)
        block = 256 if weight_type == "Q4_K" else 32
        steps = np.abs(x).reshape(-1, block).max(1) / 127
        # Half a step, plus what rounding the step to fp16 (legacy formats) moves the largest quant by.
        assert np.all(np.abs(meant - x).reshape(-1, block) <= steps[:, None] * (0.5 + 127 * 2.0**-11))


def test_every_build_quantises_an_activation_row_to_the_same_bytes():
    """Q8_K's SIMD quantisation (the prompt's activations) against the scalar build's, byte for byte: the first of
    two largest magnitudes of opposite signs sets d's sign, a block of zeros stays zeros, and halves round to even."""
    rng = np.random.default_rng(5)
    blocks = [rng.normal(0, 3, 256), np.zeros(256), rng.normal(0, 1e-30, 256), np.round(rng.normal(0, 40, 256)) / 2]
    tie = rng.normal(0, 1, 256)
    tie[[17, 200]] = (-9.5, 9.5)  # the same magnitude, the first one negative
    blocks += [tie, -tie, np.full(256, -2.0)]
    x = np.concatenate(blocks).astype(np.float32)
    rows = {}
    for build in ("portable", "native", "avx2"):
        if build == "avx2" and not _has_avx2():
            continue
        library = _library({"portable": True, "native": False}.get(build, build))
        rows[build] = _activation(library, "Q4_K", x)[0]
    for build, row in rows.items():
        assert np.array_equal(row, rows["portable"]), build


def test_the_native_build_names_its_instruction_set():
    from core.cpu import cpu_flags

    library = _library(False)
    flags = set(cpu_flags())
    vnni = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags
    expected = (
        "avx512 vnni"
        if vnni
        else "avx2 kernels (avx512 machine)"
        if "avx512f" in flags
        else "avx2"
        if "avx2" in flags
        else "scalar"
    )
    assert library.isa == expected
    assert _library("avx2").isa == "avx2" if "avx2" in flags else True
    assert ctypes.sizeof(ctypes.c_void_p) == 8


@pytest.mark.parametrize("qtype", [t for t in WEIGHT_TYPES if not t.startswith(("F", "BF"))])
def test_the_avx512_kernels_give_the_avx2_kernels_results_to_the_last_bit(qtype: str):
    """Both sum their floats 8 lanes wide in the same order, as llama.cpp's x86 dots do: a model on an AVX-512
    machine gets the logits an AVX2 machine gets."""
    if not _has_avx2():
        pytest.skip("no AVX2 here")
    native, avx2 = _library(False), _library("avx2")
    columns = COLUMNS if qtype.endswith("_K") else COLUMNS + 32
    rng = np.random.default_rng(11)
    raw, _ = _weights(qtype, 4, rng, columns)
    quantised = [_activation(native, qtype, rng.normal(0, 1, columns).astype(np.float32))[0] for _ in range(4)]
    packed = np.concatenate(quantised)
    for weight_rows in (1, 2, 4):
        for count in (1, 2, 3, 4):
            results = []
            for library in (native, avx2):
                out = np.zeros(weight_rows * count, dtype=np.float32)
                assert (
                    library.ll_dot_tile(
                        library.kernel_types[qtype],
                        columns,
                        raw.ctypes.data,
                        raw.shape[1],
                        packed.ctypes.data,
                        quantised[0].size,
                        weight_rows,
                        count,
                        out.ctypes.data,
                    )
                    == 0
                )
                results.append(out)
            assert np.array_equal(results[0], results[1]), (weight_rows, count, results)


@pytest.mark.parametrize("portable", BUILDS[:2])
@pytest.mark.parametrize("qtype", [t for t in WEIGHT_TYPES if not t.startswith(("F", "BF"))])
def test_the_gemm_gives_each_token_the_bits_its_own_tile_gives(qtype: str, portable):
    """The prompt's GEMM (tokens in vector lanes) and a decode step's tile (a row's elements in lanes) meet in the
    canonical float steps: every product to the last bit, for token counts that fill, part-fill and overrun the
    lanes, and row counts that do not fill the GEMM's groups of 4."""
    library = _library(portable)
    rng = np.random.default_rng(5)
    columns = COLUMNS if qtype.endswith("_K") else COLUMNS + 32
    rows = 9
    raw, _ = _weights(qtype, rows, rng, columns)
    _at_their_limits(qtype, raw, rng)
    for tokens in (1, 7, 16, 17, 40):
        quantised = [_activation(library, qtype, _test_input(qtype, rng, columns))[0] for _ in range(tokens)]
        stride = quantised[0].size
        packed = np.concatenate(quantised)
        gemm = np.zeros(tokens * rows, dtype=np.float32)
        args = (library.kernel_types[qtype], columns, raw.ctypes.data, raw.shape[1], rows, packed.ctypes.data, stride)
        assert library.ll_gemm_rows(*args, tokens, gemm.ctypes.data) == 0
        tiles = np.zeros((tokens, rows), dtype=np.float32)
        for t in range(tokens):
            for r in range(rows):
                one = np.zeros(1, dtype=np.float32)
                status = library.ll_dot_tile(
                    library.kernel_types[qtype],
                    columns,
                    raw[r].ctypes.data,
                    raw.shape[1],
                    packed[t * stride :].ctypes.data,
                    stride,
                    1,
                    1,
                    one.ctypes.data,
                )
                assert status == 0
                tiles[t, r] = one[0]
                reference = library.ll_dot_reference(
                    library.kernel_types[qtype], columns, raw[r].ctypes.data, packed[t * stride :].ctypes.data
                )
                assert np.float32(reference) == one[0], (qtype, t, r)
        assert np.array_equal(gemm.reshape(tokens, rows), tiles), (qtype, tokens)


@pytest.mark.parametrize("qtype", [t for t in WEIGHT_TYPES if not t.startswith(("F", "BF"))])
def test_the_gemm_on_amx_tiles_gives_the_bits_of_the_avx512_gemm(qtype: str):
    """Where AMX's tiles are on (csrc/gemm_amx.c), the prompt's GEMM runs 16 weight rows at a time on them and the
    rest on the AVX-512 GEMM: every product the same bits either way, for whole and part-filled groups of tokens."""
    library = _library(False)
    if not library.ll_use_amx(-1):
        pytest.skip("no AMX tiles on this CPU or in this build")
    rng = np.random.default_rng(8)
    columns = COLUMNS if qtype.endswith("_K") else COLUMNS + 32
    rows = 35  # two groups of 16 on the tiles, three rows on the AVX-512 GEMM
    raw, _ = _weights(qtype, rows, rng, columns)
    # 112 tokens: seven groups of 16, where the k-quants with the most digits (Q6_K) start on the tiles
    for tokens in (1, 16, 17, 40, 112):
        quantised = [
            _activation(library, qtype, rng.normal(0, 1, columns).astype(np.float32))[0] for _ in range(tokens)
        ]
        packed = np.concatenate(quantised)
        args = (library.kernel_types[qtype], columns, raw.ctypes.data, raw.shape[1], rows, packed.ctypes.data)
        results = {}
        try:
            for amx in (1, 0):
                assert library.ll_use_amx(amx) == amx
                results[amx] = np.full(tokens * rows, np.nan, dtype=np.float32)
                assert library.ll_gemm_rows(*args, quantised[0].size, tokens, results[amx].ctypes.data) == 0
        finally:
            library.ll_use_amx(1)
        assert not np.isnan(results[1]).any()
        assert np.array_equal(results[1], results[0]), (qtype, tokens)


def test_the_portable_build_has_no_gemm():
    library = _library(True)
    out = np.zeros(1, dtype=np.float32)
    weights = np.zeros(18, dtype=np.uint8)
    activations = np.zeros(34, dtype=np.uint8)
    args = (library.kernel_types["Q4_0"], 32, weights.ctypes.data, 18, 1, activations.ctypes.data, 34, 1)
    assert library.ll_gemm_rows(*args, out.ctypes.data) == -1


@pytest.mark.parametrize("tokens", [1, 2, 3, 4])
@pytest.mark.parametrize(
    ("build", "qtype"),
    [pytest.param(False, qtype, id=f"native-{qtype}") for qtype in PACKED_QTYPES]
    + [pytest.param("avx2", qtype, id=f"avx2-{qtype}", marks=BUILDS[1].marks) for qtype in PACKED_QTYPES],
)
def test_packed_rows_give_each_product_the_bits_the_file_layout_gives(build, qtype: str, tokens: int):
    """Rows regrouped 16 at a time (one row per vector lane, as llama.cpp repacks them for speed) against the scalar
    reference on the file's layout: the canonical dot to the last bit, for every row and token of a pass."""
    library = _library(build)
    if qtype not in PACKED_TYPES.get(library.isa, ()):
        pytest.skip(f"{library.isa} reads {qtype} in the file's layout")
    rng = np.random.default_rng(21)
    rows, columns = 32, COLUMNS if qtype.endswith("_K") else COLUMNS + 32
    raw, _ = _weights(qtype, rows, rng, columns)
    _at_their_limits(qtype, raw, rng)
    quantised = [_activation(library, qtype, _test_input(qtype, rng, columns))[0] for _ in range(tokens)]
    stride, activations = quantised[0].size, np.concatenate(quantised)
    packed = np.zeros(rows * tokens, dtype=np.float32)
    type_id = library.kernel_types[qtype]
    args = (type_id, columns, raw.ctypes.data, rows, activations.ctypes.data, stride, tokens, packed.ctypes.data)
    assert library.ll_packed_dot(*args) == 0
    for r in range(rows):
        for t in range(tokens):
            reference = library.ll_dot_reference(
                type_id, columns, raw[r].ctypes.data, activations[t * stride :].ctypes.data
            )
            assert np.float32(reference) == packed[r * tokens + t], (r, t)
    # Rows that are not a whole number of groups are refused, not read past; a type without a packed layout too.
    assert library.ll_packed_dot(type_id, columns, raw.ctypes.data, 24, *args[4:]) == -1
    assert library.ll_packed_dot(library.kernel_types["F16"], columns, *args[2:]) == -1
