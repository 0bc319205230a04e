"""Build the C kernel model straight from a GGUF: its metadata read as llama.cpp reads it, its blocks borrowed.

Weights stay in the memory-mapped file in their own quant format, so a load allocates nothing per weight
and reads only the pages a pass touches; there is nothing to repack or cache. The layout is llama.cpp's
own: Llama files keep their q and k rows interleaved for llama.cpp's adjacent-pair rotary embedding, and
the kernels rotate adjacent pairs for them, so no row is moved. A tensor of a type without a kernel is
dequantised to float16 once, and the build says which types those were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from core.errors import ModelLoadError
from core.kernels.kernel_model import KernelModel, ModelShape
from core.kernels.library import KERNEL_TYPES, KernelLibrary
from core.progress import ProgressCallback
from core.quant.gguf_blocks import GGUFWeights

# Architectures the C pass runs, and how each differs from Llama's layer (llama.cpp's own model files).
ROPE_HALVES = {"qwen2", "qwen3", "phi3", "gemma2", "gemma3"}
GEMMA = {"gemma2", "gemma3"}
KERNEL_ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3")
# GGUF tensor name -> the kernels' role.
NORMS = {"attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "post_attention_norm": "attn_post_norm",
         "post_ffw_norm": "ffn_post_norm", "attn_q_norm": "attn_q_norm", "attn_k_norm": "attn_k_norm"}
BIASES = ("attn_q", "attn_k", "attn_v")


@dataclass
class KernelBuild:
    kernel: KernelModel
    shape: ModelShape
    file_type: str | None
    weight_bytes: int
    paths: dict[str, str] = field(default_factory=dict)  # tensor type -> "native", "float32" or "float16"
    counted: set[str] = field(default_factory=set)  # tensors in weight_bytes (a tied head counts once)

    def fallbacks(self) -> dict[str, str]:
        return {qtype: path for qtype, path in self.paths.items() if path == "float16"}


def kernel_refusal(weights: GGUFWeights) -> str | None:
    """Why this file cannot run on the kernels (it then runs on transformers' layers), or None."""
    arch = weights.architecture
    if arch not in KERNEL_ARCHITECTURES:
        return f"the native kernels cover {', '.join(KERNEL_ARCHITECTURES)}; this file is {arch}"
    scaling = weights.field_text(f"{arch}.rope.scaling.type")
    if scaling not in (None, "none", "linear"):
        return f"its rotary scaling ({scaling}) is not one the native kernels apply"
    names = set(weights.names())
    if any(".rope_factors" in name or name.startswith("rope_factors") for name in names):
        return "its per-dimension long/short rotary factors are not applied by the native kernels"
    if any("_exps" in name for name in names):
        return "mixture-of-experts layers are not covered by the native kernels"
    return None


def runs_on_kernels(path) -> bool:
    """Whether a native load of this file will run on the kernels (a cheap look at its header, no load)."""
    from core.kernels.build import can_build, fast_here

    try:
        return fast_here() and kernel_refusal(GGUFWeights(path)) is None and can_build()
    except (OSError, ValueError, KeyError, IndexError):
        return False  # the loader will say what is wrong with the file


def larger_than_memory_note(path) -> str | None:
    """A warning when the file cannot stay in memory: its pages are then read from disk as tokens need them."""
    from core.model.memory_check import available_memory_bytes

    size, available = path.stat().st_size, available_memory_bytes()
    if available is None or size <= available:
        return None
    return (f"the file ({size / 1e9:.1f} GB) is larger than the free memory ({available / 1e9:.1f} GB): its weights "
            f"are read from disk as each token needs them, so expect seconds per token")


def read_shape(weights: GGUFWeights) -> ModelShape:
    arch = weights.architecture

    def number(key: str, default=None):
        value = weights.fields().get(f"{arch}.{key}", default)
        if value is None:
            raise ModelLoadError(f"the GGUF file has no {arch}.{key}, which a {arch} model needs.")
        return value

    layers, width = int(number("block_count")), int(number("embedding_length"))
    heads = int(number("attention.head_count"))
    kv_heads = int(number("attention.head_count_kv", heads))
    head_dim = int(number("attention.key_length", width // heads))
    vocab = weights.shape("token_embd.weight")[0]
    ffn = _ffn_rows(weights)
    windows = tuple(_window(weights, arch, index) for index in range(layers))
    gemma = arch in GEMMA
    attention_scale = head_dim ** -0.5
    if (arch, layers) in (("gemma2", 46), ("gemma3", 62)):  # Gemma 27B scales by width per head, as llama.cpp does
        attention_scale = (width / heads) ** -0.5
    # llama.cpp's defaults: Gemma 2 always soft-caps (50 and 30 unless the file says), Gemma 3 only its logits.
    fields = weights.fields()
    attention_softcap = float(fields.get(f"{arch}.attn_logit_softcapping", 50.0)) if arch == "gemma2" else 0.0
    final_softcap = float(fields.get(f"{arch}.final_logit_softcapping", 30.0 if arch == "gemma2" else 0.0) or 0.0)
    return ModelShape(
        layers=layers, width=width, heads=heads, kv_heads=kv_heads, head_dim=head_dim, ffn=ffn, vocab=vocab,
        norm_eps=float(number("attention.layer_norm_rms_epsilon", 1e-6 if gemma else 1e-5)),
        rope_dims=int(number("rope.dimension_count", head_dim)),
        rope_style="halves" if arch in ROPE_HALVES else "adjacent",
        activation="gelu_tanh" if gemma else "silu",
        embed_scale=math.sqrt(width) if gemma else 1.0,
        attention_scale=attention_scale,
        attention_softcap=attention_softcap,
        final_softcap=final_softcap if arch in GEMMA else 0.0,
        scale_queries=arch in GEMMA or arch == "phi3",
        windows=windows,
    )


def _ffn_rows(weights: GGUFWeights) -> int:
    if "blk.0.ffn_gate.weight" in weights.names():
        return weights.shape("blk.0.ffn_gate.weight")[0]
    return weights.shape("blk.0.ffn_up.weight")[0] // 2  # Phi-3: gate and up in one tensor


def _is_sliding(arch: str, index: int) -> bool:
    """llama.cpp's default patterns: Gemma 2 alternates, from a sliding layer; Gemma 3 has 5 sliding, then 1 full."""
    if arch == "gemma2":
        return index % 2 == 0
    if arch == "gemma3":
        return index % 6 < 5
    return True


def _window(weights: GGUFWeights, arch: str, index: int) -> int:
    """The layer's sliding window where llama.cpp applies one: Gemma's (4096 unless the file says). It runs
    Llama/Mistral, Qwen and Phi-3 files with full attention, whatever their metadata says."""
    if arch not in GEMMA:
        return 0
    window = int(weights.fields().get(f"{arch}.attention.sliding_window", 4096 if arch == "gemma2" else 0) or 0)
    return window if window and _is_sliding(arch, index) else 0


def _rope(weights: GGUFWeights, shape: ModelShape, index: int) -> tuple[float, float]:
    """(rotary base, linear scale) of layer `index`; Gemma 3's sliding layers have a base of their own."""
    arch = weights.architecture
    base = float(weights.fields().get(f"{arch}.rope.freq_base", 10000.0))
    scale = 1.0
    if arch == "gemma3" and shape.windows[index]:
        base = float(weights.fields().get(f"{arch}.rope.freq_base_swa", 10000.0))
    elif weights.field_text(f"{arch}.rope.scaling.type") == "linear":
        scale = 1.0 / float(weights.fields().get(f"{arch}.rope.scaling.factor", 1.0))
    return base, scale


def build_kernel_model(library: KernelLibrary, weights: GGUFWeights, progress: ProgressCallback) -> KernelBuild:
    shape = read_shape(weights)
    kernel = KernelModel(library, shape)
    build = KernelBuild(kernel, shape, weights.file_type(), 0)
    names = set(weights.names())
    total = len(names)
    done = 0

    def require(name: str) -> None:
        if name not in names:
            raise ModelLoadError(f"the GGUF file has no tensor {name!r}, which a {weights.architecture} model needs.")

    def matrix(layer: int, role: str, name: str) -> None:
        nonlocal done
        require(name)
        done += 1
        if done % 16 == 0:
            progress(done / total, f"mapping {name}")
        data, type_id, rows, columns = _matrix_data(weights, name, build)
        kernel.set_tensor(layer, role, data, type_id, rows, columns)

    def vector(layer: int, role: str, name: str) -> None:
        require(name)
        kernel.set_tensor(layer, role, _float_vector(weights, name), KERNEL_TYPES["F32"], 1, 0)

    matrix(-1, "token_embd", "token_embd.weight")
    matrix(-1, "output", "output.weight" if "output.weight" in names else "token_embd.weight")
    vector(-1, "output_norm", "output_norm.weight")
    for index in range(shape.layers):
        prefix = f"blk.{index}."
        for name, role in NORMS.items():
            if prefix + name + ".weight" in names:
                vector(index, role, prefix + name + ".weight")
        if prefix + "attn_qkv.weight" in names:
            matrix(index, "attn_qkv", prefix + "attn_qkv.weight")
        else:
            for role in ("attn_q", "attn_k", "attn_v"):
                matrix(index, role, prefix + role + ".weight")
        for role in BIASES:
            if prefix + role + ".bias" in names:
                vector(index, role + "_bias", prefix + role + ".bias")
        matrix(index, "attn_output", prefix + "attn_output.weight")
        if prefix + "ffn_gate.weight" in names:
            matrix(index, "ffn_gate", prefix + "ffn_gate.weight")
            matrix(index, "ffn_up", prefix + "ffn_up.weight")
        else:
            matrix(index, "ffn_gate_up", prefix + "ffn_up.weight")
        matrix(index, "ffn_down", prefix + "ffn_down.weight")
        kernel.set_rope(index, *_rope(weights, shape, index))
        if "rope_freqs.weight" in names:  # Llama 3.1+: per-dimension factors divide each angle
            vector(index, "rope_freq_factors", "rope_freqs.weight")
    progress(1.0, "weights mapped")
    return build


def _matrix_data(weights: GGUFWeights, name: str, build: KernelBuild) -> tuple[np.ndarray, int, int, int]:
    """(bytes or values, kernel type id, rows, columns) of a weight matrix, in the file's own layout."""
    qtype = weights.tensor_type(name)
    rows, columns = weights.shape(name)[0], weights.shape(name)[-1]
    if qtype in KERNEL_TYPES:
        build.paths.setdefault(qtype, "float32" if qtype in ("F32", "F16", "BF16") else "native")
        data, type_id = weights.raw(name), KERNEL_TYPES[qtype]
    else:
        build.paths[qtype] = "float16"
        data, type_id = weights.dequantized_values(name).astype(np.float16), KERNEL_TYPES["F16"]
    if name not in build.counted:
        build.counted.add(name)
        build.weight_bytes += data.nbytes
    return data, type_id, rows, columns


def _float_vector(weights: GGUFWeights, name: str) -> np.ndarray:
    return np.ascontiguousarray(weights.dequantized_values(name).reshape(-1), dtype=np.float32)
