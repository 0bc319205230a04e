"""The model families Latency Lab runs, one table: how each differs from Llama, as llama.cpp's llama-arch.cpp keeps it.

One entry per family, named as a GGUF names its architecture, with the transformers model types that are the same
family. The C kernels' model (core/model/gguf_kernels.py), the tensor table every GGUF is checked against
(core/model/tensor_shapes.py) and the lean decode loop over transformers' modules (core/generation/decode) all read
their differences from here, so a family is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    gguf_arch: str
    model_types: tuple[str, ...]  # transformers' config.model_type of the same family
    fused: bool = False  # Phi-3: q, k, v in one attn_qkv; gate and up in one ffn_up
    biases: bool = False  # Qwen2: biases on q, k and v (optional in the file)
    head_norms: bool = False  # Qwen3, Gemma 3: an RMS norm over each query and key head before the rotation
    gemma: bool = False  # Gemma: (1 + w) norms around both sublayers, GELU, embeddings times sqrt(width)
    rope_halves: bool = False  # NeoX's (i, i + n/2) rotary pairs; Llama's GGUFs interleave for adjacent pairs
    scale_queries: bool = False  # llama.cpp scales (and rounds) the queries, not the scores
    attention_softcap: float = 0.0  # llama.cpp's default when the file names none
    final_softcap: float = 0.0
    # Sliding-window attention as llama.cpp applies it: the default window, and which layers slide (a pattern
    # of `period` layers, the first `sliding` of each sliding); 0: full attention on every layer, whatever the
    # metadata says (llama.cpp runs Mistral and Qwen files so).
    default_window: int = 0
    period: int = 1
    sliding: int = 0
    swa_rope_base: bool = False  # Gemma 3's sliding layers have a rotary base of their own

    def slides(self, layer: int) -> bool:
        return self.sliding > 0 and layer % self.period < self.sliding

    @property
    def activation(self) -> str:
        return "gelu_tanh" if self.gemma else "silu"


FAMILIES: dict[str, Family] = {
    family.gguf_arch: family
    for family in (
        Family("llama", ("llama", "mistral")),
        Family("qwen2", ("qwen2",), biases=True, rope_halves=True),
        Family("qwen3", ("qwen3",), head_norms=True, rope_halves=True),
        Family("phi3", ("phi3",), fused=True, rope_halves=True, scale_queries=True),
        Family(
            "gemma2",
            ("gemma2",),
            gemma=True,
            rope_halves=True,
            scale_queries=True,
            attention_softcap=50.0,
            final_softcap=30.0,
            default_window=4096,
            period=2,
            sliding=1,
        ),
        Family(
            "gemma3",
            ("gemma3_text",),
            head_norms=True,
            gemma=True,
            rope_halves=True,
            scale_queries=True,
            period=6,
            sliding=5,
            swa_rope_base=True,
        ),
    )
}
BY_MODEL_TYPE: dict[str, Family] = {
    model_type: family for family in FAMILIES.values() for model_type in family.model_types
}
# Gemma's 27B models scale attention by width per head, not the head size, as llama.cpp does: (arch, layers).
WIDTH_SCALED_ATTENTION = {("gemma2", 46), ("gemma3", 62)}
