"""Packing left for later: a load ends before its packing, prompts run on the file's layout, decode packs first."""

from __future__ import annotations

import numpy as np
import pytest

from core.compute_thread import ComputeThread
from core.kernels.kernel_model import PACKED_PASS_ROWS
from core.model.idle_packing import pack_when_idle


def _no_progress(fraction: float, text: str) -> None:
    pass


@pytest.fixture
def library():
    from core.kernels.library import kernels

    library = kernels(portable=False)
    if library.isa == "scalar":
        pytest.skip("the scalar build packs nothing")
    return library


@pytest.fixture
def q4_k_file(tmp_path):
    from tiny_gguf import write_tiny_family

    return write_tiny_family(tmp_path / "llama-Q4_K.gguf", "llama", "Q4_K", vocab=256)


@pytest.fixture(params=["Q4_K", "Q3_K"])
def packed_file(tmp_path, request):
    """The commonest type, and Q3_K, whose prompts before packing run on its rows widened to Q6_K (csrc/quants.c)."""
    from tiny_gguf import write_tiny_family

    return write_tiny_family(tmp_path / f"llama-{request.param}.gguf", "llama", request.param, vocab=256)


def _build(library, path, defer=lambda: False):
    from core.model.gguf_kernels import build_kernel_model
    from core.quant.gguf_blocks import GGUFWeights

    return build_kernel_model(library, GGUFWeights(path), _no_progress, threads=2, defer=defer).kernel


def test_a_deferred_model_prompts_in_the_files_layout_and_its_first_decode_step_packs_the_rest(library, packed_file):
    eager, deferred = _build(library, packed_file), _build(library, packed_file, defer=lambda: True)
    tokens = np.random.default_rng(3).integers(0, 256, 24)
    try:
        matrices = len(deferred.pending)
        assert eager.packed and not deferred.packed and matrices == len(eager.matrices)
        results = []
        for kernel in (eager, deferred):
            kernel.reserve(1, 26, keep=False)
            prompt = kernel.pass_over(tokens, 0, 2, every_position=True)
            if kernel is deferred:  # a prompt's pass is bound by arithmetic: it leaves the packing for later
                assert len(deferred.pending) == matrices and not deferred.packed
            step = kernel.pass_over(tokens[:1], 24, 2, every_position=True)
            results.append((prompt, step))
        assert not deferred.pending and deferred.packed == eager.packed
    finally:
        eager.close()
        deferred.close()
    (eager_prompt, eager_step), (deferred_prompt, deferred_step) = results
    assert np.array_equal(eager_prompt, deferred_prompt) and np.array_equal(eager_step, deferred_step)


def test_a_pass_of_a_few_tokens_packs_first_and_a_longer_one_does_not(library, q4_k_file):
    kernel = _build(library, q4_k_file, defer=lambda: True)
    try:
        kernel.reserve(1, 64, keep=False)
        kernel.pass_over(np.arange(PACKED_PASS_ROWS + 1), 0, 2)
        assert kernel.pending
        kernel.pass_over(np.arange(PACKED_PASS_ROWS), PACKED_PASS_ROWS + 1, 2)  # a speculative verify's size
        assert not kernel.pending
    finally:
        kernel.close()


def test_a_pass_over_several_sequences_packs_first_however_many_rows_it_has(library, q4_k_file):
    kernel = _build(library, q4_k_file, defer=lambda: True)
    rows = 2 * PACKED_PASS_ROWS
    try:
        kernel.reserve(2, rows, keep=False)
        hidden = kernel.embed(np.arange(rows))
        kernel.layers(
            hidden, np.repeat([0, 1], rows // 2), np.tile(np.arange(rows // 2), 2), 0, 1, 2
        )  # the lab's batch
        assert not kernel.pending
    finally:
        kernel.close()


def test_the_load_packs_in_order_until_told_to_stop_and_leaves_the_rest_pending(library, q4_k_file):
    asked = 0

    def defer() -> bool:
        nonlocal asked
        asked += 1
        return asked > 5

    kernel = _build(library, q4_k_file, defer=defer)
    try:
        assert asked == 6  # once the load is told, it stops asking: every later matrix waits
        order = list(kernel.matrices)
        assert kernel.pending == order[5:]
        assert kernel.packed <= set(order[:5]) and kernel.packed
    finally:
        kernel.close()


def test_idle_packing_runs_one_matrix_a_job_so_a_reply_asked_for_at_once_waits_for_one_only(library, q4_k_file):
    thread = ComputeThread("test-idle-packing")
    kernel = _build(library, q4_k_file, defer=lambda: True)
    try:
        matrices = len(kernel.pending)
        pack_when_idle(kernel, thread)
        assert thread.call(lambda: len(kernel.pending)) == matrices - 1  # queued behind the first matrix only
        for _ in range(matrices):
            if not thread.call(lambda: len(kernel.pending)):
                break
        assert not kernel.pending
        assert {key for key in kernel.matrices if key[1] != "token_embd"} == kernel.packed
    finally:
        assert thread.close(timeout=60)
        kernel.close()


def test_idle_packing_stops_for_a_closed_model_and_a_closed_thread(library, q4_k_file):
    thread = ComputeThread("test-idle-packing-closed")
    kernel = _build(library, q4_k_file, defer=lambda: True)
    matrices = len(kernel.pending)
    try:
        kernel.close()
        pack_when_idle(kernel, thread)
        assert thread.call(lambda: kernel.pending) and len(kernel.pending) == matrices  # nothing packed after close
    finally:
        assert thread.close(timeout=60)
    other = _build(library, q4_k_file, defer=lambda: True)
    try:
        pack_when_idle(other, thread)  # the thread takes no more work: the matrices stay in the file's layout
        assert len(other.pending) == matrices and not other.packed
    finally:
        other.close()
