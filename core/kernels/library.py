"""The compiled kernels through ctypes: signatures, the config struct, and errors raised as exceptions.

ctypes releases the GIL for the length of each call, so a decode step in C leaves Python free for the
threads that carry tokens away.
"""

from __future__ import annotations

import ctypes
import shutil
import threading

from core.kernels.build import BuiltLibrary, KernelsUnavailable, build_library

# Weight roles and styles, as model.h numbers them.
ROLES = ("token_embd", "output", "output_norm", "attn_norm", "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output",
         "attn_q_norm", "attn_k_norm", "attn_q_bias", "attn_k_bias", "attn_v_bias", "attn_post_norm", "ffn_norm",
         "ffn_gate", "ffn_up", "ffn_gate_up", "ffn_down", "ffn_post_norm", "rope_freq_factors")
ROLE = {name: index for index, name in enumerate(ROLES)}
ACTIVATIONS = {"silu": 0, "gelu_tanh": 1}
ROPE_STYLES = {"adjacent": 0, "halves": 1}
# GGML type ids the kernels multiply in their own format.
KERNEL_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q4_K": 12, "Q5_K": 13,
                "Q6_K": 14, "BF16": 30}
ACTIVATION_TYPES = {"Q8_0": 8, "Q8_1": 9, "Q8_K": 15, "F32": 0}


class Config(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in
                ("layers", "width", "heads", "kv_heads", "head_dim", "ffn", "vocab", "rope_dims", "rope_style",
                 "activation", "scale_queries")] + \
               [(name, ctypes.c_float) for name in
                ("norm_eps", "embed_scale", "attention_scale", "attention_softcap", "final_softcap")]


_P, _I, _F, _S = ctypes.c_void_p, ctypes.c_int32, ctypes.c_float, ctypes.c_size_t
# Every buffer goes with its size (_S), which the C side checks against the model's configuration.
_SIGNATURES = {
    "ll_model_new": (_P, [ctypes.POINTER(Config)]),
    "ll_model_free": (None, [_P]),
    "ll_set_tensor": (_I, [_P, _I, _I, _P, _S, _I, _I, _I]),
    "ll_set_window": (_I, [_P, _I, _I]),
    "ll_set_rope": (_I, [_P, _I, _F, _F]),
    "ll_reserve": (_I, [_P, _I, _I, _I]),
    "ll_kv_copy": (_I, [_P, _I, _P, _P, _S, _I]),
    "ll_embed": (_I, [_P, _P, _I, _P, _S]),
    "ll_layers": (_I, [_P, _P, _S, _I, _P, _P, _I, _I, _I]),
    "ll_logits": (_I, [_P, _P, _S, _I, _P, _S, _I]),
    "ll_last_error": (ctypes.c_char_p, []),
    "kernel_isa": (ctypes.c_char_p, []),
    "activation_type": (_I, [_I]),
    "row_bytes": (ctypes.c_size_t, [_I, _I]),
    "quantize_activation": (None, [_I, _P, _P, _I]),
    "dequantize_row": (_I, [_I, _P, _P, _I]),
    "dot_reference": (_F, [_I, _I, _P, _P]),
    "ll_dot_tile": (_I, [_I, _I, _P, ctypes.c_size_t, _P, ctypes.c_size_t, _I, _I, _P]),
    # A prompt's pass with its products in torch's GEMM (csrc/prefill.h).
    "ll_stage_attention_norm": (_I, [_P, _I, _P, _S, _I, _P, _S, _I]),
    "ll_stage_prepare": (_I, [_P, _I, _P, _S, _I, _P, _P, _S, _I]),
    "ll_stage_residual": (_I, [_P, _I, _I, _P, _S, _P, _S, _I, _P, _S, _I]),
    "ll_stage_activate": (_I, [_P, _P, _S, _I, _P, _S, _I]),
    "ll_unpack_rows": (_I, [_I, _P, _S, _I, _I, _P, _S, _I, _I]),
    "ll_cache": (_P, [_P, _I]),
    "ll_read": (ctypes.c_uint64, [_P, ctypes.c_size_t, _I]),  # csrc/read.c: the bandwidth ceilings' read loop
}


class KernelLibrary:
    """One loaded build of the kernels (native for this CPU, or the portable scalar one)."""

    def __init__(self, built: BuiltLibrary):
        self.path = built.path
        self.compiled_now = built.compiled_now
        self.note = built.note  # e.g. compiled into a temporary folder, the cache being unwritable
        import torch  # noqa: F401 - first, so the library's libgomp.so.1 is torch's copy: one OpenMP pool

        try:
            self._lib = ctypes.CDLL(str(built.path))
        except OSError as error:
            raise KernelsUnavailable(f"the compiled GGUF kernels could not be loaded: {error}") from None
        finally:
            if built.temporary:  # loaded (or not): the file is not needed again, and the engine ends with os._exit
                shutil.rmtree(built.path.parent, ignore_errors=True)
        for name, (result, arguments) in _SIGNATURES.items():
            function = getattr(self._lib, name)
            function.restype, function.argtypes = result, arguments
        self.isa = self._lib.kernel_isa().decode()

    def __getattr__(self, name: str):
        return getattr(self._lib, name)

    def check(self, status: int, doing: str) -> None:
        if status != 0:
            raise RuntimeError(f"{doing}: {self._lib.ll_last_error().decode(errors='replace')}")


_loaded: dict[bool | str, KernelLibrary] = {}
_lock = threading.Lock()


def kernels(portable: bool | str = False, progress=None) -> KernelLibrary:
    """The kernel library, compiled on first use (once per machine) and loaded once per process."""
    with _lock:
        library = _loaded.get(portable)
        if library is None:
            library = _loaded[portable] = KernelLibrary(build_library(portable, progress))
        return library
