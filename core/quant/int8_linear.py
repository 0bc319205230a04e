"""A Linear layer with int8 weights and one scale per output row, multiplied by torch's int8 kernel."""

from __future__ import annotations

import torch
from torch import nn

KERNEL_DTYPE = torch.bfloat16


class Int8Linear(nn.Module):
    """Symmetric per-channel int8 weight-only quantisation, the common 'int8 weight-only' scheme."""

    weight_int8: torch.Tensor
    scales: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        weight = weight.detach().float()
        self.out_features, self.in_features = weight.shape
        scales = weight.abs().amax(dim=1).clamp_min(1e-12) / 127.0
        quants = torch.round(weight / scales[:, None]).clamp_(-127, 127).to(torch.int8)
        self.register_buffer("weight_int8", quants.contiguous())
        self.register_buffer("scales", scales.to(KERNEL_DTYPE))
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        flat = x.reshape(-1, self.in_features).to(KERNEL_DTYPE)
        out = torch.ops.aten._weight_int8pack_mm(flat, self.weight_int8, self.scales)
        out = out.to(x.dtype).reshape(*leading, self.out_features)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits=8, per_channel=True"


class Int8Embedding(nn.Module):
    """Token embedding read from an Int8Linear's rows, for models whose head and embedding are tied."""

    embed_scale: torch.Tensor | None

    def __init__(self, head: Int8Linear, embed_scale: torch.Tensor | None = None):
        super().__init__()
        self.head = [head]  # a plain list: registering it as a submodule would list the head twice
        self.num_embeddings = head.out_features
        self.embedding_dim = head.in_features
        # The factor a scaled embedding (Gemma's sqrt(hidden)) multiplies its rows by.
        self.register_buffer("embed_scale", embed_scale)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        head = self.head[0]
        rows = head.weight_int8[token_ids].float()
        rows = rows * head.scales[token_ids].float().unsqueeze(-1)
        return rows if self.embed_scale is None else rows * self.embed_scale
