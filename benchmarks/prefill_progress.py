"""Prefill progress costs nothing measurable: the prompt's pass with and without per-layer reports, interleaved.

Run: .venv/bin/python benchmarks/prefill_progress.py [--prompt-tokens 1500] [--repeats 5] [--dtype float32]

Each run is one prompt pass on the compute thread, as a reply's is: the lean loop's decoder.forward,
and generate()'s model forward inside interruptible_prefill. "with" passes the callback a LocalReply
passes (a perf_counter_ns stamp and a queue put per layer); "without" passes none. The two alternate,
so a machine whose load drifts shifts both alike. Target: the ratio with/without within 1.00 +- 0.02.
"""

from __future__ import annotations

import argparse
import queue
import statistics
import threading
import time

import _common  # (offline mode)
from cancel_latency import prompt_ids

from core.compute_thread import on_compute_thread
from core.timing.events import PrefillProgress


def one_pass(loaded, ids, loop: str, report: bool) -> float:
    import torch

    from core.generation.decode.choice import lean_decoder
    from core.generation.stopping import interruptible_prefill

    events: queue.Queue = queue.Queue()
    stop = threading.Event()

    def progress(done: int, total: int) -> None:  # what LocalReply's callback does
        events.put(PrefillProgress(done, total, time.perf_counter_ns()))

    callback = progress if report else None
    input_ids = torch.tensor([ids], dtype=torch.long)

    def run() -> float:
        with torch.inference_mode():
            started = time.perf_counter()
            if loop == "lean":
                decoder = lean_decoder(loaded.model)
                decoder.start_sequence(len(ids) + 8)
                decoder.forward(input_ids[0], 0, interrupt=stop, on_layer=callback)
            else:
                with interruptible_prefill(loaded.model, stop, callback):
                    loaded.model(input_ids=input_ids, use_cache=True)
            return time.perf_counter() - started

    seconds = on_compute_thread(run)
    if report:
        assert events.qsize() == loaded.model.config.num_hidden_layers + 1
    return seconds


def callback_seconds_per_pass(layers: int, passes: int = 2000) -> float:
    """The reports alone, as one prompt pass makes them (layers + 1 stamps and queue puts): robust to a
    loaded machine, where two multi-second passes differ by far more than this."""
    events: queue.Queue = queue.Queue()

    def progress(done: int, total: int) -> None:
        events.put(PrefillProgress(done, total, time.perf_counter_ns()))

    started = time.perf_counter()
    for _ in range(passes):
        for done in range(layers + 1):
            progress(done, layers)
    return (time.perf_counter() - started) / passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--loops", default="lean,generate")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "prefill_progress")
    loaded = _common.load_as_the_app(args.model, dtype=args.dtype)
    ids = prompt_ids(loaded, args.prompt_tokens)
    print(
        f"model: {loaded.name} ({loaded.dtype}), {loaded.model.config.num_hidden_layers} layers, prompt: "
        f"{len(ids)} tokens, torch threads: {__import__('torch').get_num_threads()}"
    )
    reports_s = callback_seconds_per_pass(loaded.model.config.num_hidden_layers)
    print(
        f"the reports alone: {reports_s * 1e6:.1f} µs per prompt pass "
        f"({loaded.model.config.num_hidden_layers + 1} stamps and queue puts)"
    )
    report.figure("reports_us_per_pass", round(reports_s * 1e6, 2))
    for loop in args.loops.split(","):
        one_pass(loaded, ids[:64], loop, True)  # warm-up
        with_, without = [], []
        for repeat in range(args.repeats):
            # Alternate which goes first, so neither always follows the other.
            order = (True, False) if repeat % 2 == 0 else (False, True)
            for reporting in order:
                (with_ if reporting else without).append(one_pass(loaded, ids, loop, reporting))
        ratio = statistics.median(with_) / statistics.median(without)
        pair_ratios = [a / b for a, b in zip(with_, without)]
        print(
            f"{loop:>8}: prefill with progress median {statistics.median(with_) * 1000:.0f} ms "
            f"({', '.join(f'{s * 1000:.0f}' for s in with_)}), without {statistics.median(without) * 1000:.0f} ms "
            f"({', '.join(f'{s * 1000:.0f}' for s in without)}); ratio of medians {ratio:.3f}, "
            f"per pair {', '.join(f'{r:.3f}' for r in pair_ratios)}"
        )
        report.figure(f"{loop}_ratio_with_over_without", round(ratio, 4), "1.00 +- 0.02", abs(ratio - 1) <= 0.02)
        print(f"{'':>8}  the reports' share of the median pass: {reports_s / statistics.median(without):.5%}")


if __name__ == "__main__":
    main()
