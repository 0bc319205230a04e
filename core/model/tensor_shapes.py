"""Every tensor the C kernels take, checked against the shape its architecture implies, before any reaches C.

A GGUF is untrusted input: its metadata and its tensors' dimensions are numbers anyone can edit, and the
kernels index memory with them. So one table per family says which tensors a model has and the shape of
each, in the sizes its metadata gives (width, vocabulary, heads, FFN size), and nothing is handed to the
kernels until every tensor matches, as llama.cpp checks its own (`create_tensor`). A mismatch is refused in
one line naming the tensor, its shape and the shape expected. The C side checks the same sizes again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import ModelLoadError
from core.model.families import FAMILIES, Family

# The kernels index with 32-bit integers, and the table's products must stay below that too.
INT32_LIMIT = 2**31 - 1
MAX_LAYERS = 4096  # as the kernels' LL_MAX_LAYERS: the largest published models have under 200
MAX_HEAD_DIM = 512  # as the kernels' LL_MAX_HEAD_DIM


@dataclass(frozen=True)
class Entry:
    dims: tuple[str, ...]  # rows first; each a sum of terms "N*SIZE" or "SIZE" (sizes: see _sizes)
    required: bool = True


def need(*dims: str) -> Entry:
    return Entry(dims)


def may(*dims: str) -> Entry:
    return Entry(dims, required=False)


# Model-wide tensors: a file without output.weight ties its head to the embedding.
MODEL = {
    "token_embd.weight": need("V", "W"),
    "output.weight": may("V", "W"),
    "output_norm.weight": need("W"),
    "rope_freqs.weight": may("R"),
}
# Each layer's, as llama.cpp's converter names and shapes them (src/llama-model.cpp, load_tensors).
LLAMA = {
    "attn_norm.weight": need("W"),
    "attn_q.weight": need("Q", "W"),
    "attn_k.weight": need("KV", "W"),
    "attn_v.weight": need("KV", "W"),
    "attn_output.weight": need("W", "Q"),
    "ffn_norm.weight": need("W"),
    "ffn_gate.weight": need("F", "W"),
    "ffn_up.weight": need("F", "W"),
    "ffn_down.weight": need("W", "F"),
}
BIASES = {"attn_q.bias": may("Q"), "attn_k.bias": may("KV"), "attn_v.bias": may("KV")}
HEAD_NORMS = {"attn_q_norm.weight": may("H"), "attn_k_norm.weight": may("H")}
POST_NORMS = {"post_attention_norm.weight": may("W"), "post_ffw_norm.weight": may("W")}
_PHI3_FUSED = {"attn_qkv.weight": need("Q+2*KV", "W"), "ffn_up.weight": need("2*F", "W")}
PHI3 = {
    name: entry
    for name, entry in LLAMA.items()
    if name not in ("attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight")
} | _PHI3_FUSED


def layer_table(family: Family) -> dict[str, Entry]:
    """The tensors of one of a family's layers, from its row of core/model/families.py."""
    table = PHI3 if family.fused else dict(LLAMA)
    if family.biases:
        table |= BIASES
    if family.head_norms:
        table |= HEAD_NORMS
    if family.gemma:
        table |= POST_NORMS
    return table


LAYER_TABLES = {arch: layer_table(family) for arch, family in FAMILIES.items()}
_LAYER_NAME = re.compile(r"blk\.(\d+)\.")


def layer_count_in_file(weights, block_count: int) -> None:
    """Refuse a block_count that the file's own tensors do not bear out, before anything is sized by it."""
    arch = weights.architecture
    if not 1 <= block_count <= MAX_LAYERS:
        raise ModelLoadError(
            f"the GGUF file's {arch}.block_count is {block_count}: a model has 1 to {MAX_LAYERS} layers."
        )
    indices = {int(found.group(1)) for name in weights.names() if (found := _LAYER_NAME.match(name))}
    if indices != set(range(block_count)):
        held = f"{len(indices)} layers (blk.{min(indices)} to blk.{max(indices)})" if indices else "no layers"
        raise ModelLoadError(f"the GGUF file's {arch}.block_count is {block_count}, but its tensors hold {held}.")


def check_sizes(arch: str, sizes: dict[str, int]) -> None:
    """The metadata's own numbers: positive, consistent, and within what the kernels index."""
    names = {
        "width": f"{arch}.embedding_length",
        "heads": f"{arch}.attention.head_count",
        "kv_heads": f"{arch}.attention.head_count_kv",
        "head_dim": f"head size ({arch}.attention.key_length)",
        "ffn": f"{arch}.feed_forward_length",
        "vocab": "vocabulary size",
        "rope_dims": f"{arch}.rope.dimension_count",
    }
    for key, value in sizes.items():
        if key in names and not (0 < value <= INT32_LIMIT or key == "rope_dims" and value == 0):
            raise ModelLoadError(f"the GGUF file's {names[key]} is {value}, which no model can have.")
    if sizes["heads"] % sizes["kv_heads"]:
        raise ModelLoadError(
            f"the GGUF file's {arch}.attention.head_count ({sizes['heads']}) is not a multiple of its "
            f"attention.head_count_kv ({sizes['kv_heads']})."
        )
    if sizes["head_dim"] > MAX_HEAD_DIM:
        raise ModelLoadError(
            f"the GGUF file's heads are {sizes['head_dim']} wide; the kernels take up to {MAX_HEAD_DIM}."
        )
    if sizes["rope_dims"] > sizes["head_dim"] or sizes["rope_dims"] % 2:
        raise ModelLoadError(
            f"the GGUF file's {arch}.rope.dimension_count ({sizes['rope_dims']}) must be even and at "
            f"most the head size ({sizes['head_dim']})."
        )


def expected_tensors(weights, shape) -> dict[str, tuple[int, ...]]:
    """Every tensor the kernels will take from this file, with its checked shape (rows first).

    Raises ModelLoadError, in one line, for a missing tensor or a shape the metadata does not imply.
    """
    arch = weights.architecture
    table = LAYER_TABLES.get(arch)
    if table is None:
        raise ModelLoadError(f"the native kernels have no tensor table for {arch} models.")
    sizes = _sizes(shape)
    names = set(weights.names())
    wanted = list(MODEL.items())
    wanted += [(f"blk.{index}.{name}", entry) for index in range(shape.layers) for name, entry in table.items()]
    checked = {}
    for name, entry in wanted:
        if name not in names:
            if entry.required:
                raise ModelLoadError(f"the GGUF file has no tensor {name!r}, which a {arch} model needs.")
            continue
        expected = tuple(_evaluate(term, sizes) for term in entry.dims)
        actual = weights.shape(name)
        if not _same(actual, expected):
            raise ModelLoadError(
                f"the GGUF file's tensor {name} has shape {_text(actual)}, but its {arch} metadata "
                f"implies {_text(expected)} ({_meaning(entry.dims, sizes)})."
            )
        if any(size > INT32_LIMIT for size in expected):
            raise ModelLoadError(f"the GGUF file's tensor {name} ({_text(actual)}) is larger than the kernels support.")
        checked[name] = expected
    return checked


def _sizes(shape) -> dict[str, int]:
    return {
        "W": shape.width,
        "V": shape.vocab,
        "F": shape.ffn,
        "Q": shape.heads * shape.head_dim,
        "KV": shape.kv_heads * shape.head_dim,
        "H": shape.head_dim,
        "R": shape.rope_dims // 2,
    }


_WORDS = {
    "W": "width",
    "V": "vocabulary",
    "F": "FFN size",
    "Q": "heads × head size",
    "KV": "KV heads × head size",
    "H": "head size",
    "R": "rotary dimensions / 2",
}


def _evaluate(expression: str, sizes: dict[str, int]) -> int:
    total = 0
    for term in expression.split("+"):
        factor, _, name = term.rpartition("*")
        total += int(factor or 1) * sizes[name]
    return total


def _same(actual: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    """Equal up to leading 1s, as llama.cpp compares a tensor's 4 dimensions padded with 1s."""
    width = max(len(actual), len(expected))
    return (1,) * (width - len(actual)) + tuple(actual) == (1,) * (width - len(expected)) + tuple(expected)


def _text(dims) -> str:
    return "[" + ", ".join(str(size) for size in dims) + "]"


def _meaning(dims: tuple[str, ...], sizes: dict[str, int]) -> str:
    used = dict.fromkeys(name for term in dims for name in re.findall(r"[A-Z]+", term))
    return ", ".join(f"{_WORDS[name]} {sizes[name]}" for name in used)
