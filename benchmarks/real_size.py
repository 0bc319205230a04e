"""Real-size files against llama.cpp: TTFT, TPOT, decode's share of DRAM bandwidth, peak RSS and time to a ready model.

Targets (issue #40), on tools/real_size.py's files (random weights in real shapes), 2 threads, greedy, each engine in
its own child process (so its load time and peak RSS are its own), interleaved round by round:
  TTFT ratio (ours / llama.cpp) <= 1.0 at every prompt length (stretch: <= 0.5 from 512 tokens);
  TPOT ratio <= 1.0; decode's share of this machine's DRAM bandwidth >= 85% (weight and KV bytes a step reads,
  over TPOT, against the DRAM ceiling of core/roofline/ceilings.py, the best pass of its read loop; and "beside":
  against the median of that read loop run just before and after each of our runs, for a machine whose bandwidth
  moves between phases).
With --kernels avx2, both sides run as an AVX2-only CPU (an EPYC without AVX-512) would, on any x86 machine: our AVX2
kernels, and llama.cpp's libraries built with AVX2 and no AVX-512 (`tools/llama_cpp_builds.py --avx2`), loaded into
llama-cpp-python in place of its own; llama.cpp's own line of what it was built with is printed.
Run: .venv/bin/python benchmarks/real_size.py [--files llama-3.2-1b:Q4_K_M,llama-2-7b:Q4_K_M] [--lengths 50,512,2048]
     [--rounds 2] [--new-tokens 32] [--kernels native|avx2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _common
from _common import median

ROOT = Path(__file__).resolve().parents[1]
TTFT_TARGET, TTFT_STRETCH, TPOT_TARGET, DRAM_SHARE_TARGET = 1.0, 0.5, 1.0, 0.85
WARM_UP = 16  # tokens of a first pass in each engine before anything is timed
DEFAULT_FILES = "llama-3.2-1b:Q4_K_M,llama-3.2-1b:Q4_0,llama-3.2-1b:Q8_0,llama-2-7b:Q4_K_M"


def prompt_ids(length: int) -> list[int]:
    """The same prompt for both engines: token ids drawn from the embedded vocabulary's ordinary range."""
    import random

    chooser = random.Random(length)
    return [chooser.randrange(300, 40000) for _ in range(length)]


def child_ours(path: str, lengths: list[int], new_tokens: int, threads: int, kernels: str) -> dict:
    started = time.perf_counter()
    from core import startup_gc

    # As `latencylab ask` and the engine process start (core/startup_gc.py): no cycle collection while the model
    # stack is imported and loaded, then those objects frozen out of every later one. Without it the collector
    # walked them during the prompt: 1.4-3.8% of a 1B's 512-token prompt in perf.
    startup_gc.hold()
    import torch

    _common.use_kernels(kernels)

    from core.compute_thread import on_compute_thread
    from core.generation.decode.kernel_decoder import KernelDecoder
    from core.model.loader import load_model

    loaded = load_model(path)
    startup_gc.started()
    ready = time.perf_counter() - started

    def measure() -> dict:
        """On the compute thread, as the app's replies run: its OpenMP pool is the one the load made."""
        torch.set_num_threads(threads)
        decoder = KernelDecoder(loaded.model.kernel)
        results = {}
        begun = time.perf_counter()
        # What the load left in the file's layout, packed as the first decode step would: llama.cpp's load
        # includes its repacking, so its "ready" compares with ours plus this
        loaded.model.kernel.pack_pending(threads)
        results["packing_left_s"] = time.perf_counter() - begun
        with torch.inference_mode():
            decoder.start_sequence(WARM_UP + 1)
            # every weight's pages mapped, as llama.cpp's load does
            decoder.forward(torch.tensor(prompt_ids(WARM_UP)), 0)
            for length in lengths:
                ids = prompt_ids(length)
                decoder.start_sequence(length + new_tokens + 1)
                begun = time.perf_counter()
                token = int(decoder.forward(torch.tensor(ids), 0).argmax())
                ttft = time.perf_counter() - begun
                steps = []
                for index in range(new_tokens - 1):
                    begun = time.perf_counter()
                    token = int(decoder.forward(torch.tensor([token]), length + index).argmax())
                    steps.append(time.perf_counter() - begun)
                results[str(length)] = {"ttft_s": ttft, "tpot_s": sum(steps) / len(steps)}
        return results

    return {
        "ready_s": ready,
        "results": on_compute_thread(measure),
        "arithmetic": loaded.describe().arithmetic,
        "system": f"Latency Lab's C kernels: {loaded.model.kernel.library.isa}",
    }


def child_llama(path: str, lengths: list[int], new_tokens: int, threads: int, kernels: str) -> dict:
    """kernels: which build of llama.cpp's libraries run_child had llama-cpp-python load."""
    started = time.perf_counter()
    import llama_cpp
    import numpy as np

    llama = llama_cpp.Llama(
        path,
        n_ctx=max(lengths) + new_tokens + 8,
        n_batch=2048,
        n_ubatch=512,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    ready = time.perf_counter() - started

    def next_token() -> int:
        return int(np.argmax(np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))))

    results = {}
    llama.eval(prompt_ids(WARM_UP))
    for length in lengths:
        llama.reset()
        begun = time.perf_counter()
        llama.eval(prompt_ids(length))
        token = next_token()
        ttft = time.perf_counter() - begun
        steps = []
        for _ in range(new_tokens - 1):
            begun = time.perf_counter()
            llama.eval([token])
            token = next_token()
            steps.append(time.perf_counter() - begun)
        results[str(length)] = {"ttft_s": ttft, "tpot_s": sum(steps) / len(steps)}
    return {"ready_s": ready, "results": results, "system": llama_cpp.llama_print_system_info().decode().strip()}


def run_child(engine: str, path: Path, args) -> dict:
    command = [
        sys.executable,
        __file__,
        "--child",
        engine,
        str(path),
        "--lengths",
        args.lengths,
        "--new-tokens",
        str(args.new_tokens),
        "--threads",
        str(args.threads),
        "--kernels",
        args.kernels,
    ]
    env = None
    if engine == "llama" and args.kernels == "avx2":
        from tools.llama_cpp_builds import LIBRARY_PATH_VARIABLE, RECIPE_FILE, avx2_libraries

        libraries = avx2_libraries()
        if not (libraries / RECIPE_FILE).is_file():
            raise SystemExit(
                "llama.cpp's AVX2 build is not there: run .venv/bin/python tools/llama_cpp_builds.py --avx2"
            )
        env = {**os.environ, LIBRARY_PATH_VARIABLE: str(libraries)}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=7200, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{engine} on {path.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def read_loop_now() -> float:
    """The DRAM read loop's rate now (the median of five passes), in a process of its own: a child's peak RSS starts
    from its parent's high-water mark (Linux keeps it across exec), so the parent never holds the loop's buffer.

    This machine's bandwidth moves by a third between phases of the same hour (other tenants share it), so each of our
    runs is also set against the read loop run just before and just after it, median against median."""
    done = subprocess.run(
        [sys.executable, __file__, "--read-loop"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(f"the read loop failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def child_read_loop() -> float:
    from core.roofline.ceilings import best_rate, dram_probe, last_level_cache_bytes

    probe = dram_probe(last_level_cache_bytes())
    return best_rate(probe.run, probe.amount, min_passes=5, budget_s=0.0)[1]


def dram_ceiling() -> float | None:
    from core.roofline.ceilings import cached_ceilings, measure_ceilings

    ceilings = cached_ceilings() or measure_ceilings(progress=lambda text: print(f"  ({text})"))
    dram = ceilings.get("dram")
    return dram.value if dram else None


def round_ratios(ours_runs: list[dict], theirs_runs: list[dict], length: int, key: str) -> str:
    """Ours over llama.cpp's, round by round (each round's two runs ran one after the other)."""
    return ", ".join(
        f"{ours['results'][str(length)][key] / theirs['results'][str(length)][key]:.2f}"
        for ours, theirs in zip(ours_runs, theirs_runs, strict=False)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--read-loop", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--files", default=DEFAULT_FILES, help="FAMILY:FILE_TYPE,... (tools/real_size.py's names)")
    parser.add_argument("--lengths", default="50,512,2048")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    _common.add_kernels_option(parser)
    _common.add_json_option(parser)
    args = parser.parse_args()
    lengths = [int(length) for length in args.lengths.split(",")]
    if args.read_loop:
        print(child_read_loop())
        return
    if args.child:
        engine, path = args.child
        run = child_ours if engine == "ours" else child_llama
        found = run(path, lengths, args.new_tokens, args.threads, args.kernels)
        found["peak_rss_bytes"] = _common.high_water_bytes()  # not ru_maxrss, which starts at the parent's peak
        print(json.dumps(found))
        return

    report = _common.start_report(args, "real_size")
    sys.path.insert(0, str(ROOT))
    from tools.real_size import real_size_file

    dram = dram_ceiling()
    print(f"DRAM ceiling: {dram / 1e9:.1f} GB/s" if dram else "DRAM ceiling: not measured")
    files = [(spec, real_size_file(*spec.split(":"))) for spec in args.files.split(",")]
    runs: dict[tuple[str, str], list[dict]] = {}
    for round_index in range(args.rounds):
        for spec, path in files:
            order = ("ours", "llama.cpp") if round_index % 2 == 0 else ("llama.cpp", "ours")
            for engine in order:
                before = read_loop_now() if dram and engine == "ours" else None
                found = run_child("ours" if engine == "ours" else "llama", path, args)
                if before is not None:
                    found["read_loop_bytes_per_s"] = (before + read_loop_now()) / 2
                runs.setdefault((spec, engine), []).append(found)
                print(f"  round {round_index + 1}: {spec} {engine} done", flush=True)

    print(
        f"\n{args.threads} threads, greedy, {args.new_tokens} new tokens, median of {args.rounds} rounds, "
        f"each engine in its own process\n"
    )
    for engine in ("ours", "llama.cpp"):  # what each side ran on: --kernels avx2 must show AVX2 on both
        print(f"{engine}: {runs[files[0][0], engine][0]['system']}")
    header = f"{'file':<22}{'GiB':>6}{'tokens':>8}{'llama TTFT':>12}{'ours TTFT':>11}{'ratio':>7}"
    header += f"{'llama TPOT':>12}{'ours TPOT':>11}{'ratio':>7}{'DRAM share':>12}{'beside':>8}"
    print(header)
    ttft_ok = tpot_ok = dram_ok = beside_ok = stretch_ok = True
    for spec, path in files:
        size = path.stat().st_size
        ours_runs, theirs_runs = runs[spec, "ours"], runs[spec, "llama.cpp"]
        facts = ours_runs[0]["arithmetic"]
        for length in lengths:

            def figure(engine_runs: list[dict], key: str, length: int = length) -> float:
                return median([run["results"][str(length)][key] for run in engine_runs])

            ttft_ours, ttft_theirs = figure(ours_runs, "ttft_s"), figure(theirs_runs, "ttft_s")
            tpot_ours, tpot_theirs = figure(ours_runs, "tpot_s"), figure(theirs_runs, "tpot_s")
            share = beside = None
            if dram and facts:
                from core.roofline.counts import ArithmeticShape, decode_counts

                shape = ArithmeticShape.from_dict(facts)
                bytes_per_step = decode_counts(shape, length + args.new_tokens // 2).bytes
                share = bytes_per_step / tpot_ours / dram
                beside = median(
                    [
                        bytes_per_step / run["results"][str(length)]["tpot_s"] / run["read_loop_bytes_per_s"]
                        for run in ours_runs
                    ]
                )
                beside_ok &= beside >= DRAM_SHARE_TARGET
            ttft_ratio, tpot_ratio = ttft_ours / ttft_theirs, tpot_ours / tpot_theirs
            ttft_ok &= ttft_ratio <= TTFT_TARGET
            tpot_ok &= tpot_ratio <= TPOT_TARGET
            if share is not None:
                dram_ok &= share >= DRAM_SHARE_TARGET
            if length >= 512:
                stretch_ok &= ttft_ratio <= TTFT_STRETCH
            print(
                f"{spec:<22}{size / 2**30:>6.2f}{length:>8}{ttft_theirs:>11.2f}s{ttft_ours:>10.2f}s{ttft_ratio:>7.2f}"
                f"{tpot_theirs * 1e3:>10.1f}ms{tpot_ours * 1e3:>9.1f}ms{tpot_ratio:>7.2f}"
                f"{(f'{share:.0%}' if share is not None else '-'):>12}{(f'{beside:.0%}' if beside is not None else '-'):>8}"
            )
            if len(ours_runs) > 1:  # a median of a few hides a miss in one round: each round's pair, in its order
                print(
                    f"{'':<36}each round: TTFT {round_ratios(ours_runs, theirs_runs, length, 'ttft_s')}; "
                    f"TPOT {round_ratios(ours_runs, theirs_runs, length, 'tpot_s')}"
                )
            report.figure(f"{spec} {length} ttft_ratio", round(ttft_ratio, 3), f"<= {TTFT_TARGET}")
            report.figure(f"{spec} {length} tpot_ratio", round(tpot_ratio, 3), f"<= {TPOT_TARGET}")
            if share is not None and beside is not None:
                report.figure(f"{spec} {length} dram_share", round(share, 3), f">= {DRAM_SHARE_TARGET}")
                report.figure(f"{spec} {length} dram_share_beside", round(beside, 3), f">= {DRAM_SHARE_TARGET}")
        for engine, engine_runs in (("ours", ours_runs), ("llama.cpp", theirs_runs)):
            rss = median([run["peak_rss_bytes"] for run in engine_runs])
            ready = median([run["ready_s"] for run in engine_runs])
            left = [run["results"].get("packing_left_s") for run in engine_runs]
            packing = f" (then {median(left):.2f} s packing the rest)" if None not in left else ""
            print(
                f"  {engine:<10} peak RSS {rss / 2**30:.2f} GiB, ready {ready:.2f} s after the process started{packing}"
            )
            report.figure(f"{spec} {engine} peak_rss_gib", round(rss / 2**30, 3))
            report.figure(f"{spec} {engine} ready_s", round(ready, 3))
    stretch = ("MET" if stretch_ok else "NOT MET") if max(lengths) >= 512 else "not measured (no prompt of 512 or more)"
    print(
        f"\nTTFT ratio <= {TTFT_TARGET}: {'MET' if ttft_ok else 'NOT MET'}; stretch <= {TTFT_STRETCH} from 512 tokens: "
        f"{stretch}; TPOT ratio <= {TPOT_TARGET}: {'MET' if tpot_ok else 'NOT MET'}; "
        f"DRAM share >= {DRAM_SHARE_TARGET:.0%}: {'MET' if dram_ok else 'NOT MET'} against the ceiling, "
        f"{'MET' if beside_ok else 'NOT MET'} against the read loop run beside each of our runs"
    )


if __name__ == "__main__":
    main()
