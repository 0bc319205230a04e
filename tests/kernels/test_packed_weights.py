"""A packed matrix gives its file's pages back: the process holds the weights once, in the packed copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.kernels.kernel_model import release_file_pages
from tests.support.packed_types import PACKED_TYPES

SIZE = 64 * 2**20


def _resident_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def test_a_memory_mapped_matrix_leaves_the_resident_set_and_reads_the_same_after(tmp_path):
    path = tmp_path / "weights.bin"
    expected = np.random.default_rng(0).integers(0, 256, SIZE, dtype=np.uint8)
    expected.tofile(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    start, rows = 4096 + 17, (SIZE - 8192) // 18
    matrix = mapped[start : start + 18 * rows].reshape(rows, 18)  # a tensor's view: not page-aligned at either end
    assert int(matrix.sum(dtype=np.int64)) > 0  # every page read in
    before = _resident_file_kib()
    release_file_pages(matrix)
    given_back = before - _resident_file_kib()
    assert given_back >= 0.9 * SIZE / 1024, (before, given_back)
    assert np.array_equal(mapped, expected)  # read again from the page cache, unchanged


def test_an_array_in_memory_is_left_alone():
    values = np.arange(SIZE // 8, dtype=np.int64)
    release_file_pages(values)  # the same advice on anonymous memory would zero it
    assert np.array_equal(values, np.arange(SIZE // 8, dtype=np.int64))


def test_a_matrix_that_is_not_whole_groups_stays_in_the_files_layout_beside_packed_ones(tmp_path):
    """A vocabulary of 200 rows is not a whole number of groups of 16: the head keeps the file's layout while the
    layers are packed, and a token's logits are still the same bits decoded alone or in a pass of 20."""
    from tiny_gguf import write_tiny_family

    from core.kernels.library import kernels
    from core.model.gguf_kernels import build_kernel_model
    from core.quant.gguf_blocks import GGUFWeights

    library = kernels(portable=False)
    if library.isa == "scalar":
        pytest.skip("the scalar build packs nothing")
    path = write_tiny_family(tmp_path / "llama-Q4_0.gguf", "llama", "Q4_0", vocab=200)
    kernel = build_kernel_model(library, GGUFWeights(path), lambda fraction, text: None).kernel
    try:
        assert (-1, "output") not in kernel.packed and (0, "ffn_down") in kernel.packed
        tokens = np.random.default_rng(1).integers(0, 200, 20)
        kernel.reserve(1, 20, keep=False)
        together = kernel.pass_over(tokens, 0, 2, every_position=True)
        kernel.reserve(1, 20, keep=False)
        alone = np.concatenate([kernel.pass_over(tokens[i : i + 1], i, 2, every_position=True) for i in range(20)])
    finally:
        kernel.close()
    assert together.shape == (20, 200) and np.array_equal(together, alone)


@pytest.mark.parametrize("qtype", ["Q4_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K"])
def test_the_packed_kernels_prefetch_changes_no_bit_of_the_logits(tmp_path, qtype):
    """packed.c chooses a prefetch distance per CPU; whatever it is (off, 64 bytes, past a group's end), a decode
    step and a prompt pass give the same logits."""
    from tiny_gguf import write_tiny_family

    from core.kernels.library import kernels
    from core.model.gguf_kernels import build_kernel_model
    from core.quant.gguf_blocks import GGUFWeights

    library = kernels(portable=False)
    if library.isa == "scalar":
        pytest.skip("the scalar build packs nothing")
    path = write_tiny_family(tmp_path / f"llama-{qtype}.gguf", "llama", qtype, vocab=256)
    kernel = build_kernel_model(library, GGUFWeights(path), lambda fraction, text: None).kernel
    chosen = library.ll_prefetch()
    tokens = np.random.default_rng(2).integers(0, 256, 12)
    results = []
    try:
        if qtype in PACKED_TYPES.get(library.isa, ()):
            assert kernel.packed, "a packed type ran in the file's layout"
        for distance in (0, 64, 4096, 1 << 20):
            library.ll_set_prefetch(distance)
            assert library.ll_prefetch() == distance
            kernel.reserve(1, 13, keep=False)
            prompt = kernel.pass_over(tokens, 0, 2, every_position=True)
            step = kernel.pass_over(tokens[:1], 12, 2, every_position=True)
            results.append((prompt, step))
    finally:
        library.ll_choose_prefetch()
        kernel.close()
    assert library.ll_prefetch() == chosen
    for prompt, step in results[1:]:
        assert np.array_equal(prompt, results[0][0]) and np.array_equal(step, results[0][1])
