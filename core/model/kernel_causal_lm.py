"""A GGUF on the C kernels, with the parts of a transformers model the rest of the app reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.model.gguf_kernels import KernelBuild


class KernelCausalLM:
    """config, generation_config and device, as a transformers model has them; the weights live in `kernel`.

    It has no generate(): replies run on the lean loop through KernelDecoder, and the lab's batch sweep
    decodes its sequences together on the kernels too (core/generation/decode/kernel_batch.py).
    """

    def __init__(self, build: KernelBuild, config: Any, generation_config: Any):
        import torch

        self.build = build
        self.kernel = build.kernel
        self.shape = build.shape
        self.config = config
        self.generation_config = generation_config
        self.device = torch.device("cpu")

    @property
    def weight_bytes(self) -> int:
        return self.build.weight_bytes

    def position_logits(self, ids: Sequence[int]) -> np.ndarray:
        """Teacher-forced logits of every position of one sequence, [n, vocab] float32.

        It uses the model's KV cache (a chat's prompt cache is set aside first): run it on the thread that
        generates, between replies.
        """
        import torch

        positions = np.asarray(ids, dtype=np.int32).reshape(-1)
        self.kernel.claim_cache()
        self.kernel.reserve(1, positions.size, keep=False)
        return self.kernel.pass_over(positions, 0, torch.get_num_threads(), every_position=True)

    def runtime(self) -> str:
        """What runs the layers, and how much of chats set aside the prompt cache keeps on this machine."""
        from core.model.memory_check import available_memory_bytes
        from core.settings import prompt_cache_budget

        kernel = self.kernel
        budget = prompt_cache_budget(kernel.position_bytes, available_memory_bytes())
        tiles = ", prompts on AMX tiles" if kernel.library.ll_use_amx(-1) else ""
        return (
            f"Latency Lab's C kernels ({kernel.library.isa}{tiles}); the prompt cache keeps up to "
            f"{budget // kernel.position_bytes:,} positions ({budget / 2**20:,.0f} MiB) of chats set aside"
        )

    def arithmetic(self) -> dict:
        """The shape the roofline counts FLOPs and bytes from (core/model/arithmetic.py has the transformers one)."""
        shape, kernel = self.shape, self.kernel
        embedding, head = kernel.matrices.get((-1, "token_embd")), kernel.matrices.get((-1, "output"))
        untied = embedding is not None and head is not None and embedding[0].ctypes.data != head[0].ctypes.data
        return {
            "layers": shape.layers,
            "width": shape.width,
            "heads": shape.heads,
            "kv_heads": shape.kv_heads,
            "head_dim": shape.head_dim,
            "ffn": shape.ffn,
            "vocab": shape.vocab,
            "weight_bytes": self.weight_bytes,
            "embedding_bytes": kernel.held_bytes(-1, "token_embd") if untied and embedding is not None else 0,
            "windows": list(shape.windows),
            "cache_value_bytes": 2,
            # the GEMM multiplies the file's quants with int8 activations: on AMX's tiles where they are on
            "prefill_precision": "amx_int8" if kernel.library.ll_use_amx(-1) else "int8",
        }

    def close(self) -> None:
        """Free the C model now rather than when the garbage collector gets to it."""
        self.kernel.close()
