"""The compiled kernels through ctypes: signatures, the shared structs, the library's own tables, and errors.

ctypes releases the GIL for the length of each call, so a decode step in C leaves Python free for the
threads that carry tokens away.
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from core.kernels.build import BuiltLibrary, KernelsUnavailable, build_library


class Config(ctypes.Structure):
    """ll_config (csrc/model.h), field for field; its size is checked against the library's when it loads."""

    _fields_ = [
        (name, ctypes.c_int32)
        for name in (
            "layers",
            "width",
            "heads",
            "kv_heads",
            "head_dim",
            "ffn",
            "vocab",
            "rope_dims",
            "rope_style",
            "activation",
            "scale_queries",
        )
    ] + [
        (name, ctypes.c_float)
        for name in ("norm_eps", "embed_scale", "attention_scale", "attention_softcap", "final_softcap")
    ]


class TypeInfo(ctypes.Structure):
    """ll_type_info (csrc/quants.h): one entry of the kernels' type table, as ll_type_facts fills it."""

    _fields_ = [("name", ctypes.c_char_p)] + [
        (name, ctypes.c_int32) for name in ("id", "block_elements", "block_bytes", "activation", "runs_as", "packs")
    ]


# The structs Python shares with the C side, and the function that gives each one's size there.
SHARED_STRUCTS = {"ll_config": (Config, "ll_sizeof_config"), "ll_type_info": (TypeInfo, "ll_sizeof_type_info")}


@dataclass(frozen=True)
class KernelType:
    """A GGML type in the kernels' table: its block, the activation type its dots read (None for an
    activation-only type), the type its products run in (its own id, or the wider type it is widened to until it is
    packed), and whether this build packs its matrices (in its own layout and bytes)."""

    name: str
    id: int
    block_elements: int
    block_bytes: int
    activation: int | None
    runs_as: int
    packs: bool

    def row_bytes(self, elements: int) -> int:
        return elements // self.block_elements * self.block_bytes


_P, _I, _F, _S = ctypes.c_void_p, ctypes.c_int32, ctypes.c_float, ctypes.c_size_t
# Every buffer goes with its size (_S), which the C side checks against the model's configuration.
_SIGNATURES = {
    "ll_model_new": (_P, [ctypes.POINTER(Config)]),
    "ll_model_free": (None, [_P]),
    "ll_set_tensor": (_I, [_P, _I, _I, _P, _S, _I, _I, _I]),
    "ll_pack": (_I, [_P, _I, _I, _I]),
    "ll_set_window": (_I, [_P, _I, _I]),
    "ll_set_rope": (_I, [_P, _I, _F, _F]),
    "ll_reserve": (_I, [_P, _I, _I, _I]),
    "ll_kv_copy": (_I, [_P, _I, _P, _P, _S, _I]),
    "ll_embed": (_I, [_P, _P, _I, _P, _S]),
    "ll_layers": (_I, [_P, _P, _S, _I, _P, _P, _I, _I, _I]),
    "ll_logits": (_I, [_P, _P, _S, _I, _P, _S, _I]),
    "ll_last_error": (ctypes.c_char_p, []),
    "ll_kernel_isa": (ctypes.c_char_p, []),
    # The tables the names below are read from (csrc/quants.c's types, csrc/model.c's roles and styles).
    "ll_type_count": (_I, []),
    "ll_type_facts": (_I, [_I, ctypes.POINTER(TypeInfo)]),
    "ll_role_name": (ctypes.c_char_p, [_I]),
    "ll_activation_name": (ctypes.c_char_p, [_I]),
    "ll_rope_style_name": (ctypes.c_char_p, [_I]),
    "ll_sizeof_config": (_S, []),
    "ll_sizeof_type_info": (_S, []),
    # For the tests: one row or one kernel call at a time, through the type table.
    "ll_quantize_activation": (_I, [_I, _P, _P, _I]),
    "ll_dequantize_row": (_I, [_I, _P, _P, _I]),
    "ll_dot_reference": (_F, [_I, _I, _P, _P]),
    "ll_widen": (_I, [_I, _P, _S, _P]),
    "ll_dot_tile": (_I, [_I, _I, _P, _S, _P, _S, _I, _I, _P]),
    "ll_gemm_rows": (_I, [_I, _I, _P, _S, _I, _P, _S, _I, _P]),
    "ll_packed_dot": (_I, [_I, _I, _P, _I, _P, _S, _I, _P]),
    "ll_weight_row_reads": (ctypes.c_uint64, []),
    "ll_set_prefetch": (None, [_I]),  # csrc/packed.c: how far ahead the packed kernels prefetch (bytes; 0: off)
    "ll_prefetch": (_I, []),
    "ll_choose_prefetch": (None, []),  # back to this CPU's choice
    "ll_use_amx": (_I, [_I]),  # csrc/gemm_amx.c: a prompt's GEMM on AMX's tiles (1 on, 0 off, -1 ask); whether on
    "ll_use_steps": (_I, [_I]),  # csrc/decode_step.c: a decode step without barriers (1 on, 0 off, -1 ask)
    "ll_step_steals": (ctypes.c_uint64, []),
    "ll_step_stall": (None, [_I, _I, _I]),  # the tests' thread held off its core
    "ll_step_holds": (ctypes.c_uint64, []),
    "ll_step_worker_delay": (None, [_I]),  # the tests' late step worker
    "ll_read": (ctypes.c_uint64, [_P, ctypes.c_size_t, _I]),  # csrc/read.c: the bandwidth ceilings' read loop
    "ll_int8_peak": (ctypes.c_uint64, [ctypes.c_int64, _I]),  # csrc/peak.c: the int8 products' ceiling
    "ll_amx_peak": (ctypes.c_uint64, [ctypes.c_int64, _I]),  # csrc/gemm_amx.c: the same on AMX's tiles; 0 without
}


class KernelLibrary:
    """One loaded build of the kernels (native for this CPU, or the portable scalar one)."""

    def __init__(self, built: BuiltLibrary):
        self.path = built.path
        self.compiled_now = built.compiled_now
        self.note = built.note  # e.g. compiled into a temporary folder, the cache being unwritable
        share_torch_openmp()
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
        check_shared_structs(self._lib)
        self.isa = self._lib.ll_kernel_isa().decode()
        # Read from the library's own tables, so a type, role or style added in C needs no edit here.
        self.types: dict[str, KernelType] = {}
        for type_id in range(self._lib.ll_type_count()):
            info = TypeInfo()
            if self._lib.ll_type_facts(type_id, ctypes.byref(info)) == 0:
                self.types[info.name.decode()] = KernelType(
                    info.name.decode(),
                    info.id,
                    info.block_elements,
                    info.block_bytes,
                    None if info.activation < 0 else info.activation,
                    info.runs_as,
                    bool(info.packs),
                )
        # GGML type name -> id, for the types the kernels multiply in their own format.
        self.kernel_types = {
            name: kind.id
            for name, kind in self.types.items()
            if kind.activation is not None and kind.runs_as == kind.id
        }
        # GGML type name -> the kernel type the set copies it into exactly (csrc/quants.c, "Widening").
        self.by_id = {kind.id: kind for kind in self.types.values()}
        self.widened = {name: self.by_id[kind.runs_as] for name, kind in self.types.items() if kind.runs_as != kind.id}
        self.roles = _names(self._lib.ll_role_name)
        self.activations = _names(self._lib.ll_activation_name)
        self.rope_styles = _names(self._lib.ll_rope_style_name)

    def __getattr__(self, name: str):
        return getattr(self._lib, name)

    def check(self, status: int, doing: str) -> None:
        if status != 0:
            raise RuntimeError(f"{doing}: {self._lib.ll_last_error().decode(errors='replace')}")


def check_shared_structs(lib) -> None:
    """Each struct ctypes passes must be the size the library was compiled with: a field added on one side only
    would otherwise be read as garbage (or written past the end) without a word."""
    for c_name, (struct, size_function) in SHARED_STRUCTS.items():
        c_size, python_size = getattr(lib, size_function)(), ctypes.sizeof(struct)
        if c_size != python_size:
            raise KernelsUnavailable(
                f"the kernels' {c_name} is {c_size} bytes but core/kernels/library.py's "
                f"{struct.__name__} is {python_size}: the two definitions differ"
            )


def _names(name_of) -> dict[str, int]:
    """name -> index of one of the library's enums, from its name function (NULL past the last)."""
    names: dict[str, int] = {}
    while (name := name_of(len(names))) is not None:
        names[name.decode()] = len(names)
    return names


_loaded: dict[bool | str, KernelLibrary] = {}
_lock = threading.Lock()


def share_torch_openmp() -> None:
    """Load torch's own libgomp.so.1 before the library, so that the library's libgomp.so.1, and torch's when torch
    is imported later, resolve to that one copy (the loader matches a loaded library by its name): one OpenMP pool.
    Loading the file by path spares the launch torch's import (a second), which then runs beside the packing."""
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or ()) if spec else ():
        copy = Path(folder) / "lib" / "libgomp.so.1"
        if copy.is_file():
            ctypes.CDLL(str(copy))
            return
    import torch  # noqa: F401 - a torch without its own copy: the library then takes whichever torch loaded


def kernels(portable: bool | str = False, progress=None) -> KernelLibrary:
    """The kernel library, compiled on first use (once per machine) and loaded once per process."""
    with _lock:
        library = _loaded.get(portable)
        if library is None:
            library = _loaded[portable] = KernelLibrary(build_library(portable, progress))
        return library
