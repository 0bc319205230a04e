"""Build the C kernel model straight from a GGUF: its metadata read as llama.cpp reads it, its blocks borrowed.

Weights stay in the memory-mapped file in their own quant format, so a load allocates nothing per weight
and reads only the pages a pass touches; there is nothing to repack or cache. The layout is llama.cpp's
own: Llama files keep their q and k rows interleaved for llama.cpp's adjacent-pair rotary embedding, and
the kernels rotate adjacent pairs for them, so no row is moved. A tensor of a type without a kernel is
dequantised to float16 once, and the build says which types those were.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.errors import ModelLoadError
from core.kernels.kernel_model import PACK_ROWS, KernelModel, ModelShape
from core.kernels.library import KernelLibrary
from core.model.families import FAMILIES, WIDTH_SCALED_ATTENTION, Family
from core.model.tensor_shapes import INT32_LIMIT, check_sizes, expected_tensors, layer_count_in_file
from core.progress import ProgressCallback
from core.quant.gguf_blocks import GGUFWeights
from core.quant.gguf_header import GGUFHeader

# GGUF tensor name -> the kernels' role.
NORMS = {
    "attn_norm": "attn_norm",
    "ffn_norm": "ffn_norm",
    "post_attention_norm": "attn_post_norm",
    "post_ffw_norm": "ffn_post_norm",
    "attn_q_norm": "attn_q_norm",
    "attn_k_norm": "attn_k_norm",
}
BIASES = ("attn_q", "attn_k", "attn_v")


@dataclass
class KernelBuild:
    kernel: KernelModel
    shape: ModelShape
    file_type: str | None
    weight_bytes: int
    # tensor type -> "native", "float32", "float16", the type some of its matrices stay widened to (library.widened;
    # the embedding, or rows not whole groups), or the type itself where every matrix of it is packed in its own
    paths: dict[str, str] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)  # tensors in weight_bytes (a tied head counts once)

    def fallbacks(self) -> dict[str, str]:
        return {qtype: path for qtype, path in self.paths.items() if path == "float16"}

    def widened(self) -> dict[str, str]:
        """tensor type -> the kernel type some of its tensors run in, copied into it exactly (Q3_K -> Q6_K)."""
        return {
            qtype: path for qtype, path in self.paths.items() if path in self.kernel.library.types and path != qtype
        }


def kernel_refusal(weights: GGUFWeights) -> str | None:
    """Why this file cannot run on the kernels (it then runs on transformers' layers), or None."""
    arch = weights.architecture
    if arch not in FAMILIES:
        return f"the native kernels cover {', '.join(FAMILIES)}; this file is {arch}"
    scaling = weights.field_text(f"{arch}.rope.scaling.type")
    if scaling not in (None, "none", "linear"):
        return f"its rotary scaling ({scaling}) is not one the native kernels apply"
    names = set(weights.names())
    if any(".rope_factors" in name or name.startswith("rope_factors") for name in names):
        return "its per-dimension long/short rotary factors are not applied by the native kernels"
    if any("_exps" in name for name in names):
        return "mixture-of-experts layers are not covered by the native kernels"
    return None


def runs_on_kernels(path, header: GGUFHeader | None = None) -> bool:
    """Whether a native load of this file will run on the kernels (a look at its header, read once per load)."""
    from core.kernels.build import can_build, fast_here

    try:
        return fast_here() and kernel_refusal(GGUFWeights(path, header)) is None and can_build()
    except (OSError, ValueError, KeyError, IndexError):
        return False  # the loader will say what is wrong with the file


def read_shape(weights: GGUFWeights) -> ModelShape:
    """The model's shape from its metadata: every number checked (core/model/tensor_shapes.py) before it sizes
    anything, so a hostile header is refused in one line naming the field."""
    arch = weights.architecture
    fields = weights.fields()

    def count(key: str, default=None) -> int:
        value = fields.get(f"{arch}.{key}", default)
        if value is None:
            raise ModelLoadError(f"the GGUF file has no {arch}.{key}, which a {arch} model needs.")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelLoadError(f"the GGUF file's {arch}.{key} is {str(value)[:40]!r}, not a whole number.")
        return value

    def real(key: str, default: float) -> float:
        value = fields.get(f"{arch}.{key}", default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ModelLoadError(f"the GGUF file's {arch}.{key} is {str(value)[:40]!r}, not a finite number >= 0.")
        return float(value)

    layers, width = count("block_count"), count("embedding_length")
    layer_count_in_file(weights, layers)  # before anything is sized by it
    heads = count("attention.head_count")
    if heads <= 0 or width <= 0:
        name, value = ("attention.head_count", heads) if heads <= 0 else ("embedding_length", width)
        raise ModelLoadError(f"the GGUF file's {arch}.{name} is {value}, which no model can have.")
    kv_heads = count("attention.head_count_kv", heads)
    if f"{arch}.attention.key_length" not in fields and width % heads:
        raise ModelLoadError(
            f"the GGUF file's {arch}.embedding_length ({width}) is not a whole number of its "
            f"{heads} heads (attention.head_count), and it gives no attention.key_length."
        )
    head_dim = count("attention.key_length", width // heads)
    if "token_embd.weight" not in weights.names():
        raise ModelLoadError(f"the GGUF file has no tensor 'token_embd.weight', which a {arch} model needs.")
    # As llama.cpp: the vocabulary is the tokenizer's, and the embedding must have a row for each of its tokens.
    vocab = weights.array_length("tokenizer.ggml.tokens") or weights.shape("token_embd.weight")[0]
    ffn = _ffn_rows(weights, arch)
    rope_dims = count("rope.dimension_count", head_dim)
    check_sizes(
        arch,
        {
            "width": width,
            "heads": heads,
            "kv_heads": kv_heads,
            "head_dim": head_dim,
            "ffn": ffn,
            "vocab": vocab,
            "rope_dims": rope_dims,
        },
    )
    family = FAMILIES[arch]
    windows = tuple(_window(weights, family, index) for index in range(layers))
    attention_scale = head_dim**-0.5
    if (arch, layers) in WIDTH_SCALED_ATTENTION:
        attention_scale = (width / heads) ** -0.5
    # llama.cpp's defaults: Gemma 2 always soft-caps (50 and 30 unless the file says), Gemma 3 only its logits.
    attention_softcap = real("attn_logit_softcapping", family.attention_softcap) if family.attention_softcap else 0.0
    final_softcap = real("final_logit_softcapping", family.final_softcap) if family.gemma else 0.0
    for layer in range(layers):
        _rope(weights, windows[layer])  # its numbers checked now, before the kernels are made
    return ModelShape(
        layers=layers,
        width=width,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn=ffn,
        vocab=vocab,
        norm_eps=real("attention.layer_norm_rms_epsilon", 1e-6 if family.gemma else 1e-5),
        rope_dims=rope_dims,
        rope_style="halves" if family.rope_halves else "adjacent",
        activation=family.activation,
        embed_scale=math.sqrt(width) if family.gemma else 1.0,
        attention_scale=attention_scale,
        attention_softcap=attention_softcap,
        final_softcap=final_softcap,
        scale_queries=family.scale_queries,
        windows=windows,
    )


def _ffn_rows(weights: GGUFWeights, arch: str) -> int:
    """The FFN size as llama.cpp reads it (feed_forward_length), or from layer 0 where the metadata holds a
    per-layer array (left out by the header reader); the tensor table then holds every layer to it."""
    declared = weights.fields().get(f"{arch}.feed_forward_length")
    if isinstance(declared, int) and not isinstance(declared, bool):
        return declared
    names = weights.names()
    if "blk.0.ffn_gate.weight" in names:
        return weights.shape("blk.0.ffn_gate.weight")[0]
    if "blk.0.ffn_up.weight" in names:
        return weights.shape("blk.0.ffn_up.weight")[0] // 2  # Phi-3: gate and up in one tensor
    raise ModelLoadError(
        f"the GGUF file has no feed_forward_length and no tensor 'blk.0.ffn_up.weight', which a {arch} model needs."
    )


def _window(weights: GGUFWeights, family: Family, index: int) -> int:
    """The layer's sliding window where llama.cpp applies one: Gemma's (4096 unless the file says, in its pattern of
    layers). It runs Llama/Mistral, Qwen and Phi-3 files with full attention, whatever their metadata says."""
    if not family.sliding:
        return 0
    arch = family.gguf_arch
    window = weights.fields().get(f"{arch}.attention.sliding_window", family.default_window) or 0
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= INT32_LIMIT:
        raise ModelLoadError(
            f"the GGUF file's {arch}.attention.sliding_window is {str(window)[:40]!r}, not a whole number of positions."
        )
    return window if window and family.slides(index) else 0


def _rope(weights: GGUFWeights, window: int) -> tuple[float, float]:
    """(rotary base, linear scale) of a layer with this sliding window; Gemma 3's sliding layers have a base of their
    own."""
    arch = weights.architecture
    fields = weights.fields()
    key, scale = f"{arch}.rope.freq_base", 1.0
    if FAMILIES[arch].swa_rope_base and window:
        key = f"{arch}.rope.freq_base_swa"
    elif weights.field_text(f"{arch}.rope.scaling.type") == "linear":
        factor = fields.get(f"{arch}.rope.scaling.factor", 1.0)
        if not _positive(factor):
            raise ModelLoadError(
                f"the GGUF file's {arch}.rope.scaling.factor is {str(factor)[:40]!r}, not a finite number > 0."
            )
        scale = 1.0 / float(factor)
    base = fields.get(key, 10000.0)
    if not _positive(base):
        raise ModelLoadError(f"the GGUF file's {key} is {str(base)[:40]!r}, not a finite number > 0.")
    return float(base), scale


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def checked_shape(weights: GGUFWeights) -> tuple[ModelShape, dict[str, tuple[int, ...]]]:
    """The model's shape from its metadata, and every tensor the kernels will take, checked against it
    (core/model/tensor_shapes.py); ModelLoadError in one line otherwise. Nothing is allocated by size yet."""
    shape = read_shape(weights)
    return shape, expected_tensors(weights, shape)


def build_kernel_model(
    library: KernelLibrary,
    weights: GGUFWeights,
    progress: ProgressCallback,
    threads: int | None = None,
    defer: Callable[[], bool] = lambda: False,
) -> KernelBuild:
    """The weights set and packed for the kernels, on threads (all cores when None). Once defer() says so, the
    matrices left are set in the file's layout and packed later (KernelModel.pack_pending): a load then ends when its
    other half does."""
    shape, checked = checked_shape(weights)
    kernel = KernelModel(library, shape)
    build = KernelBuild(kernel, shape, weights.file_type(), 0)
    fused = FAMILIES[weights.architecture].fused
    total = len(checked)
    done = 0

    def matrix(layer: int, role: str, name: str) -> None:
        nonlocal done
        done += 1
        if done % 16 == 0:
            progress(done / total, f"mapping {name}")
        rows, columns = checked[name]  # only a checked tensor reaches the kernels
        data, type_id = _matrix_data(weights, name, rows, build)
        kernel.set_tensor(layer, role, data, type_id, rows, columns)
        if kernel.pending or defer():
            kernel.defer_pack(layer, role)
        else:
            kernel.pack(layer, role, threads or os.cpu_count() or 1)

    def vector(layer: int, role: str, name: str) -> None:
        (length,) = checked[name]
        kernel.set_tensor(layer, role, _float_vector(weights, name, length), library.kernel_types["F32"], 1, length)

    matrix(-1, "token_embd", "token_embd.weight")
    matrix(-1, "output", "output.weight" if "output.weight" in checked else "token_embd.weight")
    vector(-1, "output_norm", "output_norm.weight")
    for index in range(shape.layers):
        prefix = f"blk.{index}."
        for name, role in NORMS.items():
            if prefix + name + ".weight" in checked:
                vector(index, role, prefix + name + ".weight")
        if fused:
            matrix(index, "attn_qkv", prefix + "attn_qkv.weight")
        else:
            for role in ("attn_q", "attn_k", "attn_v"):
                matrix(index, role, prefix + role + ".weight")
        for role in BIASES:
            if prefix + role + ".bias" in checked:
                vector(index, role + "_bias", prefix + role + ".bias")
        matrix(index, "attn_output", prefix + "attn_output.weight")
        if fused:
            matrix(index, "ffn_gate_up", prefix + "ffn_up.weight")
        else:
            matrix(index, "ffn_gate", prefix + "ffn_gate.weight")
            matrix(index, "ffn_up", prefix + "ffn_up.weight")
        matrix(index, "ffn_down", prefix + "ffn_down.weight")
        kernel.set_rope(index, *_rope(weights, shape.windows[index]))
        if "rope_freqs.weight" in checked:  # Llama 3.1+: per-dimension factors divide each angle
            vector(index, "rope_freq_factors", "rope_freqs.weight")
    progress(1.0, "weights mapped")
    return build


def _matrix_data(weights: GGUFWeights, name: str, rows: int, build: KernelBuild) -> tuple[np.ndarray, int]:
    """(bytes or values, kernel type id) of a checked weight matrix, in the file's own layout."""
    qtype = weights.known_tensor_type(name)
    library = build.kernel.library
    kernel_types = library.kernel_types
    held = None  # bytes the products read, where not the file's own
    if qtype in kernel_types:
        build.paths.setdefault(qtype, "float32" if qtype in ("F32", "F16", "BF16") else "native")
        data, type_id = weights.raw(name), kernel_types[qtype]
    elif qtype in library.widened:  # copied exactly into a wider kernel type by ll_set_tensor, until packed
        narrow, wide = library.types[qtype], library.widened[qtype]
        data, type_id = weights.raw(name), narrow.id
        columns = data.shape[1] // narrow.block_bytes * narrow.block_elements
        # Packed in its own layout where the build has one and the rows are whole groups; the embedding, read a row
        # at a time, is neither packed nor widened (a tied head is its own matrix, and is).
        own = name == "token_embd.weight" or (narrow.packs and rows % PACK_ROWS == 0)
        if own:
            build.paths.setdefault(qtype, qtype)
        else:
            build.paths[qtype] = wide.name
        held = None if own else rows * wide.row_bytes(columns)
    else:
        build.paths[qtype] = "float16"
        data, type_id = weights.dequantized_values(name).astype(np.float16), kernel_types["F16"]
    if data.shape[0] != rows:  # the view holds what the file holds: the kernels read `rows` rows of it
        raise ModelLoadError(f"the GGUF file's tensor {name} holds {data.shape[0]} rows where {rows} were checked.")
    if name not in build.counted:
        build.counted.add(name)
        build.weight_bytes += data.nbytes if held is None else held
    return data, type_id


def _float_vector(weights: GGUFWeights, name: str, length: int) -> np.ndarray:
    values = np.ascontiguousarray(weights.dequantized_values(name).reshape(-1), dtype=np.float32)
    if values.size != length:
        raise ModelLoadError(f"the GGUF file's tensor {name} holds {values.size} values where {length} were checked.")
    return values
