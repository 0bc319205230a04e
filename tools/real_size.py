"""Real-size GGUF files made on demand: random weights in the shapes of the models people download.

Nothing may be downloaded here, and the embedded model is 135M. The chapter is about 7B models, and our users
run 1-8B files, so these are written from scratch: each family's real tensor shapes and metadata, the weights
random blocks of the file's quant types, the tokenizer the embedded model's (its metadata copied byte for
byte, so the vocabulary is 49,152 tokens, not the family's own). The quant mix follows llama.cpp's quantiser
(Q4_K_M: Q6_K for the head and for about half the layers' attn_v and ffn_down; Q3_K_M: Q4_K or Q5_K for attn_v,
attn_output and ffn_down). Every block scale is a normal
float16 number: llama.cpp reads a subnormal scale as zero.

A file is written once into the user's cache (its name carries GENERATOR_VERSION) and reused; they are never
committed. Run `python tools/real_size.py llama-2-7b Q4_K_M` to make one and print its path, or `--all`.
"""

from __future__ import annotations

import math
import os
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GENERATOR_VERSION = 1
ALIGNMENT = 32


@dataclass(frozen=True)
class Family:
    """A published model's shape, as its GGUF's metadata gives it."""

    arch: str
    layers: int
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    rope_base: float
    context: int
    tied: bool  # no output.weight: the head is the embedding
    eps: float = 1e-5
    biases: bool = False  # Qwen2's q, k and v biases
    llama3_rope: float = 0.0  # Llama 3.1+'s rope scaling factor, stored as rope_freqs.weight
    sliding_window: int = 0  # Gemma 2's, on every other layer


FAMILIES = {
    "qwen2.5-0.5b": Family("qwen2", 24, 896, 14, 2, 64, 4864, 1e6, 32768, True, 1e-6, biases=True),
    "llama-3.2-1b": Family("llama", 16, 2048, 32, 8, 64, 8192, 500000.0, 131072, True, llama3_rope=32.0),
    "gemma-2-2b": Family("gemma2", 26, 2304, 8, 4, 256, 9216, 10000.0, 8192, True, 1e-6, sliding_window=4096),
    "llama-3.2-3b": Family("llama", 28, 3072, 24, 8, 128, 8192, 500000.0, 131072, True, llama3_rope=32.0),
    "qwen2.5-3b": Family("qwen2", 36, 2048, 16, 2, 128, 11008, 1e6, 32768, True, 1e-6, biases=True),
    "llama-2-7b": Family("llama", 32, 4096, 32, 32, 128, 11008, 10000.0, 4096, False),
    "mistral-7b": Family("llama", 32, 4096, 32, 8, 128, 14336, 1e6, 32768, False),
    "llama-3-8b": Family("llama", 32, 4096, 32, 8, 128, 14336, 500000.0, 8192, False),
}
# llama.cpp's file types (general.file_type) and each one's base tensor type.
FILE_TYPES = {
    "Q4_0": (2, "Q4_0"),
    "Q4_1": (3, "Q4_1"),
    "Q5_0": (8, "Q5_0"),
    "Q5_1": (9, "Q5_1"),
    "Q8_0": (7, "Q8_0"),
    "Q3_K_M": (12, "Q3_K"),
    "Q4_K_M": (15, "Q4_K"),
    "Q5_K_M": (17, "Q5_K"),
    "Q6_K": (18, "Q6_K"),
}
# GGML type id, elements per block, bytes per block.
TYPES = {
    "F32": (0, 1, 4),
    "Q4_0": (2, 32, 18),
    "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24),
    "Q8_0": (8, 32, 34),
    "Q3_K": (11, 256, 110),
    "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176),
    "Q6_K": (14, 256, 210),
}
# A k-quant on rows that are not whole 256-blocks falls back as llama.cpp's quantiser does.
K_FALLBACK = {"Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
SMALLEST_SCALE = 2.0**-13  # well above float16's smallest normal number, 2**-14


def _uses_more_bits(index: int, count: int) -> bool:
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third one between."""
    return index < count // 8 or index >= 7 * count // 8 or (index - count // 8) % 3 == 2


def tensor_type(file_type: str, name: str, columns: int, layer: int, layers: int, tied: bool = False) -> str:
    """The quant type llama.cpp's quantiser gives a tensor in a file of this type (the parts of its rules that these
    shapes reach); a tied embedding is the head too, and is quantised as one."""
    base = FILE_TYPES[file_type][1]
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        chosen = base if base == "Q8_0" else "Q6_K"
    elif base in ("Q4_K", "Q5_K") and name in ("attn_v.weight", "ffn_down.weight") and _uses_more_bits(layer, layers):
        chosen = "Q6_K"
    elif base == "Q3_K" and name == "attn_v.weight":  # Q3_K_M: the first two layers' in Q5_K, the rest Q4_K
        chosen = "Q5_K" if layer < 2 else "Q4_K"
    elif base == "Q3_K" and name == "ffn_down.weight":  # the first sixteenth of the layers' in Q5_K, the rest Q4_K
        chosen = "Q5_K" if layer < layers // 16 else "Q4_K"
    elif base == "Q3_K" and name == "attn_output.weight":
        chosen = "Q4_K"
    else:
        chosen = base
    if TYPES[chosen][1] == 256 and columns % 256:
        chosen = K_FALLBACK[chosen]
    return chosen


def _llama3_factors(family: Family) -> np.ndarray:
    """rope_freqs.weight as llama.cpp's converter writes it for Llama 3.1+'s scaled rotary embedding."""
    low, high, original = 1.0, 4.0, 8192
    frequencies = 1.0 / family.rope_base ** (np.arange(0, family.head_dim, 2, dtype=np.float64) / family.head_dim)
    factors = []
    for frequency in frequencies:
        wavelength = 2 * math.pi / frequency
        if wavelength < original / high:
            factors.append(1.0)
        elif wavelength > original / low:
            factors.append(family.llama3_rope)
        else:
            smooth = (original / wavelength - low) / (high - low)
            factors.append(1.0 / ((1 - smooth) / family.llama3_rope + smooth))
    return np.asarray(factors, dtype=np.float32)


def tensors(family: Family, file_type: str) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, numpy shape with rows first, quant type) of every tensor, in file order."""
    f = family
    q, kv = f.heads * f.head_dim, f.kv_heads * f.head_dim
    vocab = 49152
    found: list[tuple[str, tuple[int, ...], str]] = [
        (
            "token_embd.weight",
            (vocab, f.width),
            tensor_type(file_type, "token_embd.weight", f.width, 0, f.layers, f.tied),
        ),
        ("output_norm.weight", (f.width,), "F32"),
    ]
    if not f.tied:
        found.append(("output.weight", (vocab, f.width), tensor_type(file_type, "output.weight", f.width, 0, f.layers)))
    if f.llama3_rope:
        found.append(("rope_freqs.weight", (f.head_dim // 2,), "F32"))
    for layer in range(f.layers):
        matrices = [
            ("attn_q.weight", (q, f.width)),
            ("attn_k.weight", (kv, f.width)),
            ("attn_v.weight", (kv, f.width)),
            ("attn_output.weight", (f.width, q)),
            ("ffn_gate.weight", (f.ffn, f.width)),
            ("ffn_up.weight", (f.ffn, f.width)),
            ("ffn_down.weight", (f.width, f.ffn)),
        ]
        vectors = [("attn_norm.weight", (f.width,)), ("ffn_norm.weight", (f.width,))]
        if f.arch == "gemma2":
            vectors += [("post_attention_norm.weight", (f.width,)), ("post_ffw_norm.weight", (f.width,))]
        if f.biases:
            vectors += [("attn_q.bias", (q,)), ("attn_k.bias", (kv,)), ("attn_v.bias", (kv,))]
        for name, shape in vectors:
            found.append((f"blk.{layer}.{name}", shape, "F32"))
        for name, shape in matrices:
            found.append((f"blk.{layer}.{name}", shape, tensor_type(file_type, name, shape[1], layer, f.layers)))
    return found


def _scales(rng: np.random.Generator, blocks: int, d: float) -> np.ndarray:
    """blocks float16 scales near d (each times 0.75-1.25), never below SMALLEST_SCALE, as uint8 pairs."""
    values = np.maximum(d * rng.uniform(0.75, 1.25, blocks), SMALLEST_SCALE).astype(np.float16)
    return values.view(np.uint8).reshape(blocks, 2)


def _random_bytes(rng: np.random.Generator, count: int) -> np.ndarray:
    words = rng.bit_generator.random_raw((count + 7) // 8)
    return np.asarray(words, dtype=np.uint64).view(np.uint8)[:count]


def _k_scales(rng: np.random.Generator, blocks: int) -> np.ndarray:
    """Q4_K/Q5_K's 12 packed bytes with every 6-bit scale in 1..15 and minimum in 0..15: the high bits stay zero."""
    scales = rng.integers(1, 16, (blocks, 8), dtype=np.uint8)
    mins = rng.integers(0, 16, (blocks, 8), dtype=np.uint8)
    packed = np.empty((blocks, 12), dtype=np.uint8)
    packed[:, 0:4] = scales[:, 0:4]
    packed[:, 4:8] = mins[:, 0:4]
    packed[:, 8:12] = scales[:, 4:8] | (mins[:, 4:8] << 4)
    return packed


# Standard deviation of a block's values for a scale of 1 (the k-quants' minimum at MINIMUM_RATIO times d, which
# centres them), measured once with gguf's dequantiser on the layout _blocks writes.
MINIMUM_RATIO = {"Q4_1": -7.5, "Q5_1": -15.5, "Q4_K": 8.0, "Q5_K": 16.0}


def _blocks(rng: np.random.Generator, qtype: str, count: int, d: float) -> np.ndarray:
    """count random blocks of qtype with scales near d, as bytes [count, block bytes]."""
    _, _, size = TYPES[qtype]
    data = _random_bytes(rng, count * size).reshape(count, size)
    if qtype in ("Q4_0", "Q5_0", "Q8_0"):
        data[:, 0:2] = _scales(rng, count, d)
    elif qtype in ("Q4_1", "Q5_1"):
        data[:, 0:2] = _scales(rng, count, d)
        m = data[:, 0:2].copy().view(np.float16).astype(np.float32) * MINIMUM_RATIO[qtype]
        data[:, 2:4] = m.astype(np.float16).view(np.uint8).reshape(count, 2)
    elif qtype in ("Q4_K", "Q5_K"):
        data[:, 0:2] = _scales(rng, count, d)
        dmin = data[:, 0:2].copy().view(np.float16).astype(np.float32) * MINIMUM_RATIO[qtype]
        data[:, 2:4] = dmin.astype(np.float16).view(np.uint8).reshape(count, 2)
        data[:, 4:16] = _k_scales(rng, count)
    elif qtype == "Q3_K":
        data[:, 108:110] = _scales(rng, count, d)  # hmask, qs and the 6-bit scales: any bits are valid
    elif qtype == "Q6_K":
        data[:, 192:208] = rng.integers(1, 8, (count, 16), dtype=np.uint8) * rng.choice(
            np.array([1, 255], dtype=np.uint8), (count, 16)
        )  # int8 scales of either sign, |s| in 1..7
        data[:, 208:210] = _scales(rng, count, d)
    else:
        raise ValueError(f"no random blocks for {qtype}")
    return data


_UNIT_STD: dict[str, float] = {}


def unit_std(qtype: str) -> float:
    """The standard deviation of the values of random qtype blocks with scales near 1."""
    if qtype not in _UNIT_STD:
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize

        rng = np.random.default_rng(0)
        blocks = _blocks(rng, qtype, 512, 1.0)
        values = dequantize(blocks.reshape(-1), GGMLQuantizationType[qtype])
        _UNIT_STD[qtype] = float(np.std(values))
    return _UNIT_STD[qtype]


def _tensor_bytes(rng: np.random.Generator, name: str, shape: tuple[int, ...], qtype: str, family: Family) -> bytes:
    if qtype == "F32":
        (length,) = shape
        if name == "rope_freqs.weight":
            return _llama3_factors(family).tobytes()
        if name.endswith(".bias"):
            return rng.normal(0.0, 0.02, length).astype(np.float32).tobytes()
        # Norm weights near 1 (Gemma's converter stores 1 + w, so 1 there too).
        return rng.uniform(0.9, 1.1, length).astype(np.float32).tobytes()
    rows, columns = shape
    _, elements, _ = TYPES[qtype]
    # Values of standard deviation 1 / sqrt(columns): a product's outputs then stay near unit size, layer after layer.
    d = 1.0 / math.sqrt(columns) / unit_std(qtype)
    return _blocks(rng, qtype, rows * columns // elements, d).tobytes()


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _entry(key: str, value: object) -> bytes:
    if isinstance(value, bool):
        return _string(key) + struct.pack("<I?", 7, value)
    if isinstance(value, int):
        return _string(key) + struct.pack("<II", 4, value)
    if isinstance(value, float):
        return _string(key) + struct.pack("<If", 6, value)
    return _string(key) + struct.pack("<I", 8) + _string(str(value))


def metadata(name: str, family: Family, file_type: str) -> dict[str, object]:
    f, arch = family, family.arch
    found: dict[str, object] = {
        "general.architecture": arch,
        "general.type": "model",
        "general.name": f"Latency Lab real-size test: {name} shape, random weights",
        "general.file_type": FILE_TYPES[file_type][0],
        "general.quantization_version": 2,
        f"{arch}.context_length": f.context,
        f"{arch}.embedding_length": f.width,
        f"{arch}.block_count": f.layers,
        f"{arch}.feed_forward_length": f.ffn,
        f"{arch}.attention.head_count": f.heads,
        f"{arch}.attention.head_count_kv": f.kv_heads,
        f"{arch}.rope.freq_base": f.rope_base,
        f"{arch}.attention.layer_norm_rms_epsilon": f.eps,
        f"{arch}.rope.dimension_count": f.head_dim,
        f"{arch}.vocab_size": 49152,
    }
    if f.head_dim * f.heads != f.width:
        found[f"{arch}.attention.key_length"] = f.head_dim
        found[f"{arch}.attention.value_length"] = f.head_dim
    if arch == "gemma2":
        found[f"{arch}.attn_logit_softcapping"] = 50.0
        found[f"{arch}.final_logit_softcapping"] = 30.0
        found[f"{arch}.attention.sliding_window"] = f.sliding_window
    return found


def write(path: Path, name: str, file_type: str, seed: int = 0, header_only: bool = False) -> None:
    """Write the file at path (whole, or not at all). With header_only, the tensor data is a hole of the right size
    (a sparse file of zeros, written at once): for what reads only the header, such as the memory check."""
    from core.model.source import embedded_gguf_path
    from core.quant.gguf_header import raw_metadata

    family = FAMILIES[name]
    listed = tensors(family, file_type)
    entries = [_entry(key, value) for key, value in metadata(name, family, file_type).items()]
    entries += raw_metadata(embedded_gguf_path(), "tokenizer.")
    header = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(listed), len(entries)))
    for entry in entries:
        header += entry
    offset, sizes = 0, []
    for tensor_name, shape, qtype in listed:
        type_id, elements, block_bytes = TYPES[qtype]
        size = math.prod(shape) // elements * block_bytes
        header += _string(tensor_name) + struct.pack("<I", len(shape))
        header += struct.pack(f"<{len(shape)}Q", *reversed(shape)) + struct.pack("<IQ", type_id, offset)
        sizes.append(size)
        offset += (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    header += bytes(-len(header) % ALIGNMENT)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=".making-", suffix=".gguf", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(header)
            if header_only:
                out.truncate(len(header) + offset)
            for index, ((tensor_name, shape, qtype), size) in enumerate(zip(listed, sizes) if not header_only else ()):
                rng = np.random.default_rng([seed, index])
                data = _tensor_bytes(rng, tensor_name, shape, qtype, family)
                assert len(data) == size, tensor_name
                out.write(data)
                out.write(bytes(-size % ALIGNMENT))
        os.replace(staging, path)  # in one step: a reader sees no file or a whole one
    finally:
        if os.path.exists(staging):
            os.remove(staging)


def cache_folder() -> Path:
    from core.cache_paths import cache_root

    return cache_root() / "real-size"


def real_size_file(name: str, file_type: str) -> Path:
    """The file for this family and file type, made on first use and then kept in the cache."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    if file_type not in FILE_TYPES:
        raise ValueError(f"unknown file type {file_type!r}; known: {', '.join(FILE_TYPES)}")
    path = cache_folder() / f"{name}-{file_type}-v{GENERATOR_VERSION}.gguf"
    if not path.is_file():
        write(path, name, file_type)
    return path


def main(argv: list[str]) -> int:
    import time

    if argv == ["--all"]:
        wanted = [(name, file_type) for name in FAMILIES for file_type in FILE_TYPES]
    elif len(argv) == 2:
        wanted = [(argv[0], argv[1])]
    else:
        print(f"usage: real_size.py FAMILY FILE_TYPE | --all\nfamilies: {', '.join(FAMILIES)}", file=sys.stderr)
        print(f"file types: {', '.join(FILE_TYPES)}", file=sys.stderr)
        return 2
    for name, file_type in wanted:
        started = time.perf_counter()
        path = real_size_file(name, file_type)
        seconds = time.perf_counter() - started
        print(f"{name:<14}{file_type:<8}{path.stat().st_size / 2**30:>7.2f} GiB  {seconds:5.1f} s  {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main(sys.argv[1:]))
