"""The matrices a load left in the file's layout, packed on the compute thread between other work."""

from __future__ import annotations

import weakref
from contextlib import suppress

from core.compute_thread import ComputeThread, compute_thread
from core.kernels.kernel_model import KernelModel


def pack_when_idle(kernel: KernelModel, thread: ComputeThread | None = None) -> None:
    """Pack kernel's pending matrices one a job on the compute thread, each job queued behind whatever arrived
    meanwhile: a reply asked for at once waits one matrix at most, and its first decode step packs the rest
    (KernelModel.layers). The jobs hold the model weakly: a model let go is not kept for its packing."""
    thread = thread or compute_thread()
    model = weakref.ref(kernel)

    def step() -> None:
        import torch

        kernel = model()
        try:
            left = kernel.pack_pending(torch.get_num_threads(), limit=1) if kernel is not None else 0
        except Exception:  # noqa: BLE001 - the compute thread must live on; the next decode step meets the error
            return
        if left:
            _queue(thread, step)

    if kernel.pending:
        _queue(thread, step)


def _queue(thread: ComputeThread, step) -> None:
    # A closed thread (the process is ending) refuses it: the matrices stay in the file's layout.
    with suppress(RuntimeError):
        thread.submit(step)
