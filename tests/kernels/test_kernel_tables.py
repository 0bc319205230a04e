"""Python's types, roles and styles come from the library's own tables; the shared structs and exports are checked."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from core.kernels.kernel_model import KernelModel
from tests.kernels.test_dots import BUILDS, WEIGHT_TYPES
from tests.kernels.test_kernel_bounds import MATRICES, SHAPE, VECTORS
from tests.support.packed_types import PACKED_TYPES


def _library(portable: bool | str = False):
    from core.kernels.library import kernels

    return kernels(portable=portable)


@pytest.mark.parametrize("portable", BUILDS)
def test_every_type_in_the_table_is_ggmls_own_and_round_trips(portable):
    """Each entry's id and block are gguf's for that name; the C side reads back what Python was told."""
    import gguf

    from core.kernels.library import TypeInfo

    library = _library(portable)
    assert library.types, "the table is empty"
    for name, kind in library.types.items():
        ggml = gguf.GGMLQuantizationType[name]
        assert kind.id == ggml.value, name
        if kind.activation is not None:  # a file's type (Q8_1 is only ever in memory: gguf-py's is 40 bytes)
            assert (kind.block_elements, kind.block_bytes) == gguf.GGML_QUANT_SIZES[ggml], name
        info = TypeInfo()
        assert library.ll_type_facts(kind.id, ctypes.byref(info)) == 0
        assert (info.name.decode(), info.id, info.block_elements, info.block_bytes, info.runs_as, info.packs) == (
            name,
            kind.id,
            kind.block_elements,
            kind.block_bytes,
            kind.runs_as,
            kind.packs,
        )
        assert kind.packs == (name in PACKED_TYPES.get(library.isa, ())), name
        # Each type runs as itself, but Q3_K, which is widened exactly into Q6_K (tests/kernels/test_widening.py).
        assert kind.runs_as == (library.types["Q6_K"].id if name == "Q3_K" else kind.id), name
    listed = {kind.id for kind in library.types.values()}
    for type_id in [-1, library.ll_type_count(), *(i for i in range(library.ll_type_count()) if i not in listed)]:
        assert library.ll_type_facts(type_id, ctypes.byref(TypeInfo())) == -1, type_id
    # Every weight type the table offers is one the dot-product tests cover, and its activation type quantises.
    assert set(library.kernel_types) == set(WEIGHT_TYPES)
    by_id = {kind.id: kind for kind in library.types.values()}
    x = np.random.default_rng(0).normal(0, 1, 512).astype(np.float32)
    for name in library.kernel_types:
        activation = by_id[library.types[name].activation]
        out = np.zeros(activation.row_bytes(x.size), dtype=np.uint8)
        assert library.ll_quantize_activation(activation.id, x.ctypes.data, out.ctypes.data, x.size) == 0, name
    assert library.ll_quantize_activation(library.kernel_types["Q4_K"], x.ctypes.data, out.ctypes.data, x.size) == -1


@pytest.mark.parametrize("qtype", WEIGHT_TYPES)
def test_a_matrix_takes_exactly_the_bytes_the_table_gives_its_rows(qtype):
    """Python's row size (from the table) is the one the C side checks a tensor's buffer against."""
    library = _library()
    kind = library.types[qtype]
    rows, columns = MATRICES["attn_q"][0], 256  # a whole number of blocks of every type
    model = KernelModel(library, replace(SHAPE, width=columns))
    try:
        data = np.zeros(rows * kind.row_bytes(columns), dtype=np.uint8)
        model.set_tensor(0, "attn_q", data, kind.id, rows, columns)
        with pytest.raises(RuntimeError, match="not the size its shape and type imply"):
            model.set_tensor(0, "attn_q", data[:-1], kind.id, rows, columns)
    finally:
        model.close()


def test_the_roles_and_styles_are_the_librarys_names():
    """Every role the kernels take has a name from C, numbered as C numbers it; nothing past the last."""
    library = _library()
    assert set(library.roles) == set(MATRICES) | set(VECTORS)
    assert sorted(library.roles.values()) == list(range(len(library.roles)))
    for name, index in library.roles.items():
        assert library.ll_role_name(index).decode() == name
    assert library.ll_role_name(len(library.roles)) is None and library.ll_role_name(-1) is None
    # The activations and rotary styles the GGUF reader asks for (core/model/gguf_kernels.py).
    assert {"silu", "gelu_tanh"} <= set(library.activations) and {"adjacent", "halves"} <= set(library.rope_styles)
    assert library.ll_activation_name(len(library.activations)) is None
    assert library.ll_rope_style_name(len(library.rope_styles)) is None
    config = SHAPE.config(library)
    assert library.ll_rope_style_name(config.rope_style).decode() == SHAPE.rope_style
    assert library.ll_activation_name(config.activation).decode() == SHAPE.activation


@pytest.mark.parametrize("field", ["activation", "rope_style"])
def test_an_enum_value_the_library_has_no_name_for_is_refused(field):
    library = _library()
    config = SHAPE.config(library)
    setattr(config, field, len(library.activations if field == "activation" else library.rope_styles))
    assert not library.ll_model_new(ctypes.byref(config))
    assert library.ll_last_error() == b"unknown activation or rotary style"


def test_the_shared_structs_are_the_size_the_library_was_built_with():
    from core.kernels.library import SHARED_STRUCTS

    library = _library()
    for struct, size_function in SHARED_STRUCTS.values():
        assert ctypes.sizeof(struct) == getattr(library, size_function)() > 0


@pytest.mark.parametrize("c_name", ["ll_config", "ll_type_info"])
def test_a_struct_that_differs_from_the_librarys_stops_the_load_with_one_line(monkeypatch, c_name):
    import core.kernels.library as library_module
    from core.kernels.build import KernelsUnavailable, build_library

    struct, size_function = library_module.SHARED_STRUCTS[c_name]
    grown = type(struct.__name__, (ctypes.Structure,), {"_fields_": [*struct._fields_, ("added", ctypes.c_int64)]})
    monkeypatch.setitem(library_module.SHARED_STRUCTS, c_name, (grown, size_function))
    with pytest.raises(KernelsUnavailable) as refused:
        library_module.KernelLibrary(build_library())
    message = str(refused.value)
    assert "\n" not in message
    assert f"the kernels' {c_name} is {ctypes.sizeof(struct)} bytes" in message
    assert f"{struct.__name__} is {ctypes.sizeof(grown)}" in message


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm (binutils) here")
@pytest.mark.parametrize("portable", BUILDS)
def test_the_library_exports_only_ll_functions_and_python_binds_each(portable):
    from core.kernels.library import _SIGNATURES

    library = _library(portable)
    listing = subprocess.run(
        ["nm", "-D", "--defined-only", str(library.path)], capture_output=True, text=True, check=True
    ).stdout
    exported = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    assert exported and all(name.startswith("ll_") for name in exported), sorted(exported)
    assert exported == set(_SIGNATURES)
