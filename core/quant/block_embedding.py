"""A token embedding kept as the GGUF's own blocks; the rows a step needs are decoded exactly on the fly."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from core.quant.gguf_decode import decode


class BlockEmbedding(nn.Module):
    """The table stays in the file's quant type (a float copy of a 49k x 576 table is 113 MB)."""

    blocks: torch.Tensor

    def __init__(self, raw: np.ndarray, qtype: str, embedding_dim: int):
        super().__init__()
        self.qtype = qtype
        self.num_embeddings, self.embedding_dim = raw.shape[0], embedding_dim
        self.register_buffer("blocks", torch.from_numpy(np.ascontiguousarray(raw)))

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        flat = token_ids.reshape(-1)
        rows = decode(self.blocks[flat].numpy(), self.qtype).dequantize()
        return rows.view(*token_ids.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, {self.qtype} blocks"
