"""Header fields and tensor shapes edited at random: the kernels' load refuses in one line, or runs a sound model.

The same tests run under AddressSanitizer (tests/kernels/test_asan.py), where any read or write outside a
buffer would end the run: a refusal must come before the kernels touch memory, never after.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiny_gguf import FAMILY_EXTRAS, write_tiny_family

from core.errors import ModelLoadError
from core.model.gguf_kernels import build_kernel_model
from core.model.native_load import open_gguf
from core.progress import no_progress
from tests.support.gguf_patch import layout, patched

FUZZ = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
EDGES = [0, 1, 2, 3, 4, 31, 32, 33, 64, 128, 255, 256, 257, 512, 1024, 32768, 49152, 2**16, 2**31 - 1, 2**31, 2**32 - 1]
SIZES = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**20), st.integers(0, 2**64 - 1))
COUNT_FIELDS = [
    "block_count",
    "embedding_length",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "rope.dimension_count",
    "context_length",
    "attention.key_length",
]
REAL_FIELDS = ["attention.layer_norm_rms_epsilon", "rope.freq_base", "attn_logit_softcapping"]


@pytest.fixture(scope="module")
def library():
    from core.kernels.library import kernels

    return kernels()


@pytest.fixture(scope="module")
def family_bytes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-families")
    return {
        arch: write_tiny_family(folder / f"{arch}.gguf", arch, "Q8_0", vocab=64).read_bytes() for arch in FAMILY_EXTRAS
    }


def outcome(library, path) -> str:
    """'refused' (one line, ModelLoadError) or 'ran' (a pass over three tokens, finite-sized logits)."""
    try:
        build = build_kernel_model(library, open_gguf(path), no_progress)
    except ModelLoadError as error:
        assert "\n" not in str(error)
        return str(error)
    try:
        kernel = build.kernel
        kernel.reserve(1, 8, keep=False)
        logits = kernel.pass_over(np.arange(3) % build.shape.vocab, 0, 2)
        assert logits.shape == (1, build.shape.vocab)
        logits = kernel.pass_over(np.array([0]), 3, 2)  # a decode step on top
        assert logits.shape == (1, build.shape.vocab)
    finally:
        build.kernel.close()
    return "ran"


@FUZZ
@given(
    arch=st.sampled_from(list(FAMILY_EXTRAS)),
    counts=st.dictionaries(st.sampled_from(COUNT_FIELDS), SIZES, max_size=3),
    reals=st.dictionaries(
        st.sampled_from(REAL_FIELDS), st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=2
    ),
    shapes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 1), SIZES), max_size=3),
)
def test_edited_header_fields_and_tensor_shapes_are_refused_or_run_soundly(
    library, family_bytes, tmp_path, arch, counts, reals, shapes
):
    data = family_bytes[arch]
    where = layout(data)
    fields = {f"{arch}.{key}": value for key, value in {**counts, **reals}.items() if f"{arch}.{key}" in where.fields}
    names = sorted(where.tensors)
    dims = {}
    for pick, axis, size in shapes:
        name = names[pick % len(names)]
        current = list(dims.get(name, _rows_first(data, where, name)))
        current[axis % len(current)] = size
        dims[name] = tuple(current)
    path = tmp_path / "edited.gguf"
    path.write_bytes(patched(data, fields, dims))
    outcome(library, path)


def _rows_first(data: bytes, where, name: str) -> tuple[int, ...]:
    import struct

    offset, n_dims = where.tensors[name]
    return tuple(reversed(struct.unpack_from(f"<{n_dims}Q", data, offset)))


@pytest.mark.parametrize("arch", list(FAMILY_EXTRAS))
def test_every_tensor_of_every_family_one_size_off_is_refused_by_name(library, family_bytes, tmp_path, arch):
    """Table-driven: each tensor's rows and columns in turn, one block more or fewer, in each family's file."""
    data = family_bytes[arch]
    where = layout(data)
    assert outcome(library, _write(tmp_path, data)) == "ran"  # the unedited file runs
    refused = 0
    for name in where.tensors:
        shape = _rows_first(data, where, name)
        edits = [(shape[0] + 32, *shape[1:]), (max(shape[0] - 32, 1), *shape[1:])]
        if len(shape) == 2:
            edits += [(shape[0], shape[1] + 32), (shape[0], shape[1] - 32), (shape[0], 1, shape[1])[:2]]
        for edit in edits:
            said = outcome(library, _write(tmp_path, patched(data, dims={name: edit})))
            assert said != "ran" and name in said, (name, edit, said)
            refused += 1
    assert refused >= 2 * len(where.tensors)


def _write(tmp_path, data: bytes):
    path = tmp_path / "edited.gguf"
    path.write_bytes(data)
    return path
