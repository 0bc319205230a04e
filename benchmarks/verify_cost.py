"""What a verify pass costs against one decode step: k + 1 positions in one pass over the weights, on the C kernels.

The chapter's claim behind speculative decoding: a pass that checks several positions reads the weights once, so on a
DRAM-bound model it costs nearly one step. Measured here for k + 1 = 1, 2, 3, 5 and 9 positions at a fixed place in
the sequence (each pass's positions are given back with keep(), so every pass starts at the same position), median
of the repeats, interleaved. Issue #39's real-size target: how close to "nearly free" it is.
Run: .venv/bin/python benchmarks/verify_cost.py [--model FILE.gguf] [--context 64] [--repeats 9] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import _common
from _common import median

SIZES = (1, 2, 3, 5, 9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a GGUF file (default: the embedded model)")
    parser.add_argument("--context", type=int, default=64, help="positions already in the cache")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "verify_cost")
    import torch

    from core.compute_thread import on_compute_thread
    from core.generation.decode.choice import lean_decoder

    on_compute_thread(lambda: torch.set_num_threads(args.threads))
    loaded = _common.fully_packed(_common.load_as_the_app(args.model))
    facts = loaded.describe()
    print(f"{facts.model}: {facts.runtime}; {facts.weight_bytes / 1e9:.2f} GB of weights; {args.threads} threads")

    def measure() -> dict[int, float]:
        decoder = lean_decoder(loaded.model)
        decoder.prompt_cache.set_aside()
        prompt = torch.randint(100, 1000, (args.context,))
        decoder.start_sequence(args.context + max(SIZES) + 1)
        decoder.forward(prompt, 0)
        times: dict[int, list[float]] = {size: [] for size in SIZES}
        tokens = torch.randint(100, 1000, (max(SIZES),))
        for size in SIZES:  # warm: each pass size's buffers once
            decoder.verify(tokens[:size], args.context)
            decoder.keep(args.context)
        for _ in range(args.repeats):
            for size in SIZES:
                started = time.perf_counter()
                # One position is the decode step itself; more are a verify pass, as speculation runs them.
                (decoder.forward if size == 1 else decoder.verify)(tokens[:size], args.context)
                times[size].append(time.perf_counter() - started)
                decoder.keep(args.context)
        return {size: median(values) for size, values in times.items()}

    medians = on_compute_thread(measure)
    step = medians[1]
    print(f"{args.context} positions cached; median of {args.repeats}, interleaved")
    for size, seconds in medians.items():
        print(f"  {size} position{'s' if size > 1 else ''}: {seconds * 1e3:7.2f} ms = {seconds / step:.2f} steps")
        report.figure(f"pass_{size}_steps", seconds / step)
    print(f"a step reads {facts.weight_bytes / step / 1e9:.1f} GB/s of weights")


if __name__ == "__main__":
    main()
