"""What the packed kernels' software prefetch gives on this CPU: the same model's decode steps with it off and at
each distance asked for, interleaved step by step in one process.

packed.c chooses the distance per CPU when the library loads (Intel: 4,096 bytes ahead into L2; elsewhere off, but
for the AVX2 Q5_K kernel's 8,192); this measures that choice, and others, against no prefetch (each distance asked
for here is every kernel's). The results are the same bits whatever the distance.
Run: .venv/bin/python benchmarks/prefetch.py --model FILE.gguf [--distances 0,2048,4096,16384] [--steps 60]
     [--threads 2] [--kernels native|avx2]
"""

from __future__ import annotations

import argparse
import time

import _common
from _common import median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a GGUF file the C kernels run, with packed matrices")
    parser.add_argument("--distances", default="0,2048,4096,16384", help="bytes ahead; 0: no prefetch")
    parser.add_argument("--steps", type=int, default=60, help="decode steps at each distance, interleaved")
    parser.add_argument("--threads", type=int, default=2)
    _common.add_kernels_option(parser)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "prefetch")
    distances = [int(value) for value in args.distances.split(",")]

    import torch

    from core.compute_thread import on_compute_thread
    from core.generation.decode.kernel_decoder import KernelDecoder

    _common.use_kernels(args.kernels)
    loaded = _common.load_as_the_app(args.model)
    kernel = loaded.model.kernel
    library = kernel.library
    chosen = library.ll_prefetch()
    print(
        f"{loaded.describe().model}: {len(kernel.packed)} matrices packed; {library.isa} kernels, {args.threads} "
        f"threads; this CPU's choice: {f'{chosen:,} bytes ahead' if chosen else 'no prefetch'}"
    )

    def measure() -> dict[int, list[float]]:
        torch.set_num_threads(args.threads)
        decoder = KernelDecoder(kernel)
        times: dict[int, list[float]] = {distance: [] for distance in distances}
        context = 50
        with torch.inference_mode():
            decoder.start_sequence(context + args.steps * len(distances) + 1)
            decoder.forward(torch.arange(300, 300 + context), 0)
            position = context
            for step in range(args.steps):  # each distance first in turn
                for distance in distances if step % 2 else distances[::-1]:
                    library.ll_set_prefetch(distance)
                    started = time.perf_counter()
                    decoder.forward(torch.tensor([400 + step]), position)
                    times[distance].append(time.perf_counter() - started)
                    position += 1
        library.ll_choose_prefetch()
        return times

    times = on_compute_thread(measure)
    base = median(times[distances[0]])
    for distance in distances:
        step = median(times[distance])
        label = f"{distance:,} bytes ahead" if distance else "no prefetch"
        print(f"  {label:<20} decode step {step * 1e3:7.2f} ms (median of {args.steps}), {step / base:.3f}x the first")
        report.figure(f"step ms at {distance}", round(step * 1e3, 3))


if __name__ == "__main__":
    main()
