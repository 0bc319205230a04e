"""Read Q4_1 and Q8_0 tensors out of a GGUF file as quants and scales, without dequantising them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from core.quant.groupwise import Q4Groups

# Q4_1 block: fp16 scale d, fp16 minimum m, then 16 bytes holding 32 four-bit quants
# (low nibbles are elements 0..15, high nibbles 16..31). Q8_0 block: fp16 scale, 32 int8 quants.
Q4_1_BLOCK_BYTES = 20
Q8_0_BLOCK_BYTES = 34


class GGUFWeights:
    """Named access to a GGUF's tensors, with the llama.cpp names mapped to Hugging Face module names."""

    def __init__(self, path: Path):
        import gguf

        self._reader = gguf.GGUFReader(str(path))
        self._tensors = {tensor.name: tensor for tensor in self._reader.tensors}
        field = self._reader.fields.get("general.architecture")
        self.architecture = bytes(field.parts[field.data[0]]).decode() if field is not None else "llama"
        self.head_count = self._field_int(f"{self.architecture}.attention.head_count")
        self.head_count_kv = self._field_int(f"{self.architecture}.attention.head_count_kv")

    def _field_int(self, key: str) -> int | None:
        field = self._reader.fields.get(key)
        return int(field.parts[field.data[0]][0]) if field is not None else None

    def tensor_type(self, gguf_name: str) -> str | None:
        tensor = self._tensors.get(gguf_name)
        return tensor.tensor_type.name if tensor is not None else None

    def q4_1(self, gguf_name: str) -> Q4Groups:
        tensor = self._tensors[gguf_name]
        if tensor.tensor_type.name != "Q4_1":
            raise ValueError(f"{gguf_name} is {tensor.tensor_type.name}, not Q4_1")
        rows = int(tensor.shape[1])
        blocks = np.asarray(tensor.data).reshape(rows, -1, Q4_1_BLOCK_BYTES)
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
        """llama.cpp interleaves q and k rows for its rotary layout; transformers undoes it, so must we.

        Only Llama-architecture files (Mistral's among them) are interleaved: Qwen, Phi-3 and Gemma are not.
        """
        if self.architecture != "llama":
            return groups
        if ".attn_q." in gguf_name:
            heads = self.head_count
        elif ".attn_k." in gguf_name:
            heads = self.head_count_kv or self.head_count
        else:
            return groups
        rows = groups.quants.shape[0]
        order = torch.arange(rows).reshape(heads, rows // heads // 2, 2).transpose(1, 2).reshape(rows)
        return groups.permute_rows(order)


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

