"""Read a GGUF file's tensors as quants and scales (or raw blocks), without dequantising them.

torch is imported only by the methods that return torch tensors: the kernels' load reads blocks and
metadata alone, and a launch should not wait for torch before it must.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from core.quant.gguf_header import GGUFHeader, GGUFHeaderError, read_header

if TYPE_CHECKING:
    import torch

    from core.quant.groupwise import Q4Groups
    from core.quant.int_groups import IntGroups

# Q4_1 block: fp16 scale d, fp16 minimum m, then 16 bytes holding 32 four-bit quants
# (low nibbles are elements 0..15, high nibbles 16..31). Q8_0 block: fp16 scale, 32 int8 quants.
Q4_1_BLOCK_BYTES = 20
Q8_0_BLOCK_BYTES = 34


class GGUFWeights:
    """Named access to a GGUF's tensors, with the llama.cpp names mapped to Hugging Face module names."""

    def __init__(self, path: Path, header: GGUFHeader | None = None):
        """header: the file's, when the caller has read it already (a load reads it once and passes it on)."""
        import gguf

        header = header or read_header(Path(path))
        if not header.readable:
            raise GGUFHeaderError(f"GGUF version {header.version} is too old")
        self._fields = header.fields
        self._array_lengths = header.array_lengths
        self._tensors = header.tensors
        self._types = {name: gguf.GGMLQuantizationType(info.type_id) for name, info in self._tensors.items()}
        self.path = Path(path)
        self._file = np.memmap(path, dtype=np.uint8, mode="r")  # read-only: a tensor's bytes come from the page cache
        self._check_extents(gguf.GGML_QUANT_SIZES)
        self.architecture = self.field_text("general.architecture") or "llama"
        self.head_count = self._field_int(f"{self.architecture}.attention.head_count")
        self.head_count_kv = self._field_int(f"{self.architecture}.attention.head_count_kv")

    def _check_extents(self, quant_sizes) -> None:
        """Every tensor's bytes lie inside the file, and its rows are whole blocks: ValueError naming the first that
        does not (a file cut short by even one byte, or a header that claims more than the file holds)."""
        size = self._file.size
        for name, info in self._tensors.items():
            block_size, block_bytes = quant_sizes[self._types[name]]
            if info.dims and info.dims[0] % block_size:
                raise ValueError(
                    f"its tensor {name[:80]} has rows of {info.dims[0]} values, not whole blocks of {block_size}"
                )
            end = info.offset + math.prod(info.dims) // block_size * block_bytes
            if end > size:
                raise ValueError(
                    f"its tensor {name[:80]} ends at byte {end:,}, past the end of the file ({size:,} "
                    f"bytes): the file is cut short or its header is wrong"
                )

    def _field_int(self, key: str) -> int | None:
        value = self._fields.get(key)
        return int(value) if value is not None else None

    def fields(self) -> dict:
        """The header's scalar and string metadata (arrays, such as the vocabulary, are left out)."""
        return self._fields

    def array_length(self, key: str) -> int | None:
        """How many items a metadata array holds (the arrays themselves are not read), or None."""
        return self._array_lengths.get(key)

    def field_text(self, key: str) -> str | None:
        value = self._fields.get(key)
        return value if isinstance(value, str) else None

    def file_type(self) -> str | None:
        """The quantisation the file was made as (e.g. Q4_K_M), from general.file_type."""
        import gguf

        code = self._field_int("general.file_type")
        try:
            return gguf.LlamaFileType(code).name.removeprefix("MOSTLY_") if code is not None else None
        except ValueError:
            return None

    def names(self) -> list[str]:
        return list(self._tensors)

    def tensor_type(self, gguf_name: str) -> str | None:
        qtype = self._types.get(gguf_name)
        return qtype.name if qtype is not None else None

    def known_tensor_type(self, gguf_name: str) -> str:
        """The type of a tensor the file holds (KeyError for one it does not)."""
        return self._types[gguf_name].name

    def shape(self, gguf_name: str) -> tuple[int, ...]:
        """Rows first, as torch orders a weight (GGUF lists the innermost dimension first)."""
        return tuple(reversed(self._tensors[gguf_name].dims))

    def raw(self, gguf_name: str) -> np.ndarray:
        """The tensor's bytes as [rows, row_bytes] (quant types) or its values (float types); memory-mapped."""
        import gguf

        info, qtype = self._tensors[gguf_name], self._types[gguf_name]
        block_size, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        shape = self.shape(gguf_name)
        row_bytes = shape[-1] // block_size * block_bytes
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        data = self._file[info.offset : info.offset + rows * row_bytes]
        if data.size != rows * row_bytes:
            raise ValueError(f"tensor {gguf_name} runs past the end of the file")
        floats = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
        if qtype.name in floats:
            return data.view(floats[qtype.name]).reshape(shape)
        return data.reshape(rows, row_bytes)

    def int_groups(self, gguf_name: str) -> IntGroups:
        """A quantised weight's whole numbers and group scales, rows in Hugging Face order."""
        from core.quant.gguf_decode import decode

        groups = decode(np.asarray(self.raw(gguf_name)), self.known_tensor_type(gguf_name))
        order = self.llama_row_order(gguf_name, groups.n.shape[0])
        return groups if order is None else groups.permute_rows(order)

    def dequantized_values(self, gguf_name: str) -> np.ndarray:
        """Any type gguf can read, as float32 values in the file's own row order (a copy, writable)."""
        import gguf

        values = gguf.quants.dequantize(np.asarray(self.raw(gguf_name)), self._types[gguf_name])
        # A copy: float tensors come back as views of the memory-mapped (read-only) file.
        return np.array(values, dtype=np.float32).reshape(self.shape(gguf_name))

    def dequantized(self, gguf_name: str) -> torch.Tensor:
        """Any type gguf can read, as float32 rows in Hugging Face order (the fallback for types without a kernel)."""
        import torch

        weight = torch.from_numpy(self.dequantized_values(gguf_name))
        order = self.llama_row_order(gguf_name, weight.shape[0])
        return weight if order is None else weight[order]

    def q4_1(self, gguf_name: str) -> Q4Groups:
        import torch

        from core.quant.groupwise import Q4Groups

        if self.tensor_type(gguf_name) != "Q4_1":
            raise ValueError(f"{gguf_name} is {self.tensor_type(gguf_name)}, not Q4_1")
        rows = self.shape(gguf_name)[0]
        blocks = np.asarray(self.raw(gguf_name)).reshape(rows, -1, Q4_1_BLOCK_BYTES)
        scales = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
        minimums = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
        packed = blocks[..., 4:]
        quants = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.int32)
        groups = Q4Groups(
            torch.from_numpy(quants.reshape(rows, -1)),
            torch.from_numpy(scales),
            torch.from_numpy(minimums),
        )
        return self._undo_llama_permutation(gguf_name, groups)

    def _undo_llama_permutation(self, gguf_name: str, groups: Q4Groups) -> Q4Groups:
        order = self.llama_row_order(gguf_name, groups.quants.shape[0])
        return groups if order is None else groups.permute_rows(order)

    def llama_row_order(self, gguf_name: str, rows: int) -> torch.Tensor | None:
        """llama.cpp interleaves q and k rows for its rotary layout; transformers undoes it, so must we.

        Only Llama-architecture files (Mistral's among them) are interleaved: Qwen, Phi-3 and Gemma are not.
        """
        if self.architecture != "llama":
            return None
        if ".attn_q." in gguf_name:
            heads = self.head_count
        elif ".attn_k." in gguf_name:
            heads = self.head_count_kv or self.head_count
        else:
            return None
        if heads is None:  # reshape(None, ...) would fail with a TypeError that names nothing
            raise ValueError(f"the file gives no {self.architecture}.attention.head_count for {gguf_name}")
        import torch

        return torch.arange(rows).reshape(heads, rows // heads // 2, 2).transpose(1, 2).reshape(rows)


HF_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_qkv": "self_attn.qkv_proj",  # Phi-3's fused q/k/v
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


# Phi-3's fused gate and up halves are one ffn_up tensor in its GGUF, in the same order.
FUSED_HF_SUFFIXES = {"mlp.gate_up_proj": "mlp.up_proj"}


def gguf_name_for(module_name: str) -> str | None:
    """model.layers.3.self_attn.q_proj -> blk.3.attn_q.weight (None for modules GGUF names differently)."""
    parts = module_name.split(".")
    if len(parts) < 4 or parts[0] != "model" or parts[1] != "layers":
        return None
    suffix = ".".join(parts[3:])
    suffix = FUSED_HF_SUFFIXES.get(suffix, suffix)
    for gguf_short, hf_suffix in HF_NAMES.items():
        if suffix == hf_suffix:
            return f"blk.{parts[2]}.{gguf_short}.weight"
    return None
