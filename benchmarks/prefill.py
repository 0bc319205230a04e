"""TTFT of a prompt's pass: native (the C kernels, batch-invariant), float32 and llama.cpp, interleaved.

Targets at ~1,240 prompt tokens (issue #23): native TTFT <= 1.0x float32's and <= 0.5x llama.cpp's on the same
file. Prints each engine's TTFT and TPOT per prompt length (median of the rounds), the prefill's GFLOP/s and
its share of this CPU's GEMM ceiling (when measured: `latencylab bench --sweeps bandwidth`), the 1-minute
load average and the share of the cores other programs used while it ran.
Run: .venv/bin/python benchmarks/prefill.py [--model FILE] [--words 45,435,1235] [--rounds 3] [--tokens 32]
"""

from __future__ import annotations

import argparse
import os
import time

import _common  # (sets the import path and offline mode)
from _common import bare_tpot, generate_seconds, median

TARGET_VS_FLOAT32 = 1.0
TARGET_VS_LLAMA_CPP = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a GGUF file (default: the embedded Q4_1)")
    parser.add_argument("--words", default="45,435,1235", help="filler words per prompt: about 50, 440, 1,240 tokens")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=32, help="new tokens for TPOT (0: TTFT only)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engines", default="native,float32,llama.cpp")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "prefill")
    import numpy as np
    import torch

    from core.compute_thread import on_compute_thread
    from core.lab.prompt_sweep import chapter_prompt
    from core.model.source import embedded_gguf_path
    from core.roofline.ceilings import cached_ceilings
    from core.roofline.counts import ArithmeticShape, prefill_counts
    from core.roofline.machine_load import LoadProbe
    from core.roofline.placement import compute_ceiling

    on_compute_thread(lambda: torch.set_num_threads(args.threads))
    path = args.model or str(embedded_gguf_path())
    engines = args.engines.split(",")
    native = _common.fully_packed(_common.load_as_the_app(path))
    models = {"native": native}
    if "float32" in engines:
        models["float32"] = _common.load_as_the_app(path, dtype="float32")
    llama = None
    if "llama.cpp" in engines:
        import llama_cpp

        llama = llama_cpp.Llama(path, n_ctx=4096, verbose=False, n_threads=args.threads, n_threads_batch=args.threads)
    shape = ArithmeticShape.from_dict(native.describe().arithmetic)
    gemm = shape.prefill_precision  # what a prompt's products run in: the ceiling they are measured against
    print(f"{native.describe().runtime}; {args.threads} threads for ours, torch and llama.cpp")
    tokenizer = native.tokenizer
    prompts = {int(words): tokenizer(chapter_prompt(int(words)))["input_ids"] for words in args.words.split(",")}

    def llama_next() -> int:
        """llama.cpp's greedy token after its last eval (its scores array holds logits only with logits_all)."""
        return int(np.argmax(np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))))

    def ttft(engine: str, ids: list[int]) -> float:
        if engine == "llama.cpp":
            llama.reset()
            started = time.perf_counter()
            llama.eval(ids)
            llama_next()
            return time.perf_counter() - started
        return generate_seconds(models[engine].model, torch.tensor([ids]), 1, "lean")

    def tpot(engine: str, ids: list[int]) -> float | None:
        if not args.tokens:
            return None
        if engine == "llama.cpp":
            llama.reset()
            llama.eval(ids)
            token = llama_next()
            started = time.perf_counter()
            for _ in range(args.tokens):
                llama.eval([token])
                token = llama_next()
            return (time.perf_counter() - started) / args.tokens
        return bare_tpot(models[engine].model, torch.tensor([ids]), args.tokens, "lean")

    runs = [engine for engine in engines if engine in models or (engine == "llama.cpp" and llama)]
    times = {(engine, words): [] for engine in runs for words in prompts}
    tpots = {(engine, words): [] for engine in runs for words in prompts}
    load_start = os.getloadavg()[0]
    for engine in runs:
        ttft(engine, prompts[min(prompts)])  # warm-up: oneDNN's kernels made, pages read
    with LoadProbe() as probe:
        for _ in range(args.rounds):
            for words, ids in prompts.items():
                for engine in runs:  # interleaved, so the machine's noise hits every engine alike
                    times[engine, words].append(ttft(engine, ids))
                    value = tpot(engine, ids)
                    if value is not None:
                        tpots[engine, words].append(value)
    print(
        f"1-minute load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; other programs "
        f"used {probe.others_share:.0%} of the cores during the run"
        if probe.others_share is not None
        else ""
    )
    ceilings = cached_ceilings(args.threads)
    ceiling = compute_ceiling(ceilings, gemm)
    print(
        f"\nTTFT (a 1-token reply, bare), median of {args.rounds} interleaved rounds; native = the C kernels, "
        f"products in {gemm} (on their GEMM once a pass is long enough, pass.c's GEMM_MIN_TOKENS)\n"
    )
    header = f"{'tokens':>7}" + "".join(f"{engine + ' ms':>14}" for engine in runs)
    header += f"{'native/fp32':>13}{'native/llama':>14}{'GFLOP/s':>9}{'of ceiling':>12}"
    print(header)
    for words, ids in prompts.items():
        medians = {engine: median(times[engine, words]) for engine in runs}
        line = f"{len(ids):>7}" + "".join(f"{medians[engine] * 1000:>14,.0f}" for engine in runs)
        versus_float32 = medians["native"] / medians["float32"] if "float32" in medians else None
        versus_llama = medians["native"] / medians["llama.cpp"] if "llama.cpp" in medians else None
        flops = prefill_counts(shape, len(ids)).flops / medians["native"]
        share = flops / ceiling.value if ceiling else None
        line += f"{versus_float32:>12.2f}x" if versus_float32 else f"{'–':>13}"
        line += f"{versus_llama:>13.2f}x" if versus_llama else f"{'–':>14}"
        line += f"{flops / 1e9:>9,.0f}" + (f"{share:>12.0%}" if share is not None else f"{'–':>12}")
        print(line)
        report.figure(f"ttft_{len(ids)}_tokens", {engine: medians[engine] for engine in runs})
        if words == max(prompts):
            if versus_float32:
                report.figure(
                    "native_over_float32_at_longest",
                    versus_float32,
                    f"<= {TARGET_VS_FLOAT32:g}",
                    versus_float32 <= TARGET_VS_FLOAT32,
                )
            if versus_llama:
                report.figure(
                    "native_over_llama_cpp_at_longest",
                    versus_llama,
                    f"<= {TARGET_VS_LLAMA_CPP:g}",
                    versus_llama <= TARGET_VS_LLAMA_CPP,
                )
            report.figure("prefill_share_of_gemm_ceiling", share)
    if ceiling is None:
        print("(no ceilings cached for this CPU yet: `latencylab bench --sweeps bandwidth` measures them)")
    else:
        print(f"ceiling: {ceiling.label} {ceiling.value / 1e9:,.0f} GFLOP/s ({ceiling.method})")
    longest = max(prompts)
    for label, key, target in (
        ("float32", "float32", TARGET_VS_FLOAT32),
        ("llama.cpp", "llama.cpp", TARGET_VS_LLAMA_CPP),
    ):
        if key in runs:
            ratio = median(times["native", longest]) / median(times[key, longest])
            print(
                f"native TTFT at {len(prompts[longest]):,} tokens vs {label}: {ratio:.2f}x (target <= {target:g}x): "
                f"{'MET' if ratio <= target else 'NOT MET'}"
            )
    if args.tokens:
        print(f"\nTPOT ms ({args.tokens} new tokens after each prompt)\n")
        engines_with_tpot = [engine for engine in runs if tpots[engine, longest]]
        print(f"{'tokens':>7}" + "".join(f"{engine:>12}" for engine in engines_with_tpot))
        for words, ids in prompts.items():
            print(
                f"{len(ids):>7}"
                + "".join(f"{median(tpots[engine, words]) * 1000:>12.2f}" for engine in engines_with_tpot)
            )


if __name__ == "__main__":
    main()
