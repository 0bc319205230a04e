"""Decode TPOT of native against llama.cpp on the same file, for every type of fast_decode.py's quant table.

Target (issue #23): native TPOT <= 1.0x llama.cpp's for every file. Only these two engines, interleaved round
by round (fast_decode.py also times float32, which makes a round three times longer on two cores), with the
share of the cores other programs used meanwhile, and the prompt lengths given (the quant table's short
prompt by default; a long one shows the attention over the KV cache).
Run: .venv/bin/python benchmarks/tpot_vs_llama.py [--rounds 5] [--tokens 64] [--quant-types Q4_1,Q8_0|all]
     [--prompt-words 0,1200]
"""

from __future__ import annotations

import argparse
import os

import _common  # (sets the import path and offline mode)
from _common import bare_tpot, median

TARGET = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--quant-types", default="all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--prompt-words",
        default="0",
        help="0: the quant table's short prompt; N: the chapter's 'Repeat after me.' with N filler words",
    )
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "tpot_vs_llama")
    import llama_cpp
    import quant_table
    import torch

    from core.compute_thread import on_compute_thread
    from core.lab.prompt_sweep import chapter_prompt
    from core.roofline.machine_load import LoadProbe

    on_compute_thread(lambda: torch.set_num_threads(args.threads))
    file_types = quant_table.all_file_types() if args.quant_types == "all" else args.quant_types.split(",")
    paths = {file_type: quant_table.quant_file(file_type) for file_type in file_types}
    natives = {file_type: _common.fully_packed(_common.load_as_the_app(str(path))) for file_type, path in paths.items()}
    llamas = {
        file_type: llama_cpp.Llama(
            str(path), n_ctx=4096, verbose=False, n_threads=args.threads, n_threads_batch=args.threads
        )
        for file_type, path in paths.items()
    }
    tokenizer = next(iter(natives.values())).tokenizer
    print(f"{next(iter(natives.values())).describe().runtime}; {args.threads} threads for ours and llama.cpp")
    prompts = {
        int(words): tokenizer(chapter_prompt(int(words)) if int(words) else quant_table.PROMPT)["input_ids"]
        for words in args.prompt_words.split(",")
    }
    tpots = {
        (file_type, engine, words): []
        for file_type in file_types
        for engine in ("native", "llama.cpp")
        for words in prompts
    }

    def measure(file_type: str, engine: str, ids: list[int], count: int) -> float:
        if engine == "llama.cpp":
            return quant_table.llama_tpot(llamas[file_type], ids, count)
        return bare_tpot(natives[file_type].model, torch.tensor([ids]), count, "lean")

    for file_type in file_types:
        for engine in ("native", "llama.cpp"):
            measure(file_type, engine, prompts[min(prompts)], 4)  # warm-up
    load_start = os.getloadavg()[0]
    with LoadProbe() as probe:
        for _ in range(args.rounds):
            for words, ids in prompts.items():
                for file_type in file_types:
                    for engine in ("native", "llama.cpp"):  # interleaved: the machine's noise hits both alike
                        tpots[file_type, engine, words].append(measure(file_type, engine, ids, args.tokens))
    print(
        f"1-minute load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; other programs "
        f"used {probe.others_share:.0%} of the cores during the run"
        if probe.others_share is not None
        else ""
    )
    print(
        f"\nTPOT, median of {args.rounds} interleaved rounds of {args.tokens} new tokens (target: native / llama.cpp "
        f"<= {TARGET:g})\n"
    )
    print(f"{'file':<8}{'prompt':>8}{'native ms':>11}{'llama.cpp ms':>14}{'native/llama':>14}")
    met = True
    for words, ids in prompts.items():
        for file_type in file_types:
            ours, theirs = (median(tpots[file_type, engine, words]) for engine in ("native", "llama.cpp"))
            ratio = ours / theirs
            met &= ratio <= TARGET
            print(
                f"{file_type:<8}{len(ids):>8}{ours * 1000:>11.2f}{theirs * 1000:>14.2f}{ratio:>13.2f}x  "
                f"{'MET' if ratio <= TARGET else 'NOT MET'}"
            )
            report.figure(
                f"{file_type}_{len(ids)}_native_over_llama_cpp_tpot", ratio, f"<= {TARGET:g}", ratio <= TARGET
            )
    print(f"native TPOT <= llama.cpp's for every file and prompt: {'MET' if met else 'NOT MET'}")


if __name__ == "__main__":
    main()
