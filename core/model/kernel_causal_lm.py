"""A GGUF on the C kernels, with the parts of a transformers model the rest of the app reads."""

from __future__ import annotations

from typing import Any

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

    def eval(self) -> KernelCausalLM:
        return self

    def __call__(self, input_ids: Any) -> Any:
        """Teacher-forced logits of every position of one sequence, as model(ids).logits: [1, n, vocab].

        It uses the model's KV cache (a chat's prompt cache is set aside first): run it on the thread that
        generates, between replies.
        """
        from types import SimpleNamespace

        import numpy as np
        import torch

        ids = np.asarray(input_ids, dtype=np.int32).reshape(-1)
        self.kernel.claim_cache()
        self.kernel.reserve(1, ids.size, keep=False)
        logits = self.kernel.pass_over(ids, 0, torch.get_num_threads(), every_position=True)
        return SimpleNamespace(logits=torch.from_numpy(logits)[None])

    def close(self) -> None:
        """Free the C model now rather than when the garbage collector gets to it."""
        self.kernel.close()


def is_kernel_model(model: Any) -> bool:
    return isinstance(model, KernelCausalLM)
