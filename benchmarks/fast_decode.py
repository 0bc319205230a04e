"""Decode speed of each precision and decode loop against float32 generate(), interleaved in one run.

Target: a precision with decode tok/s >= 3x float32 and top-1 agreement >= 97% over a fixed text.
Stretch: llama.cpp's ~100 tok/s on the same GGUF here.
Each precision runs through transformers' model.generate and through the app's lean loop
(core/decode), which must give the same greedy tokens.
A second table runs each GGUF quant type (benchmarks/quant_table.py): native vs float32 vs llama.cpp.
Run: .venv/bin/python benchmarks/fast_decode.py [--rounds 5] [--tokens 64] [--quant-types Q4_K_M,Q8_0|all|none]
     [--no-dtype-table]
"""

from __future__ import annotations

import argparse

import _common  # (sets the import path and offline mode)
from _common import bare_reply, bare_tpot, median

from core.quant.agreement import agreement_text, top1_agreement
from core.settings import DTYPE_CHOICES

TARGET_SPEEDUP = 3.0
TARGET_AGREEMENT = 0.97
STRETCH_TOK_S = 100.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--dtypes", default=",".join(DTYPE_CHOICES))
    parser.add_argument(
        "--quant-types", default="all", help="GGUF file types for the per-type table, comma-separated, 'all' or 'none'"
    )
    parser.add_argument("--no-dtype-table", action="store_true", help="only the per-quant-type table")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads for torch and llama.cpp in the per-quant-type table (1 on a busy machine)",
    )
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "fast_decode")
    print(kernel_paths())
    if not args.no_dtype_table:
        dtype_table(args, report)
    if args.quant_types != "none":
        import quant_table

        file_types = quant_table.all_file_types() if args.quant_types == "all" else args.quant_types.split(",")
        quant_table.run(report, args.rounds, args.tokens, file_types, args.threads)


def kernel_paths() -> str:
    """Which products each precision runs on this CPU."""
    import torch

    from core.kernels.library import kernels

    capability = torch.backends.cpu.get_cpu_capability()
    return (
        f"native: Latency Lab's C kernels, built here with -march=native ({kernels().isa} code), every "
        f"GGUF type in its own blocks with llama.cpp's 8-bit activations; int4: torch {torch.__version__}'s "
        f"_weight_int4pack_mm_for_cpu ({capability} build), bf16 activations; float32: the BLAS sgemv."
    )


def dtype_table(args, report) -> None:
    import torch

    dtypes = args.dtypes.split(",")
    models = {dtype: _common.load_as_the_app(None, dtype=dtype) for dtype in dtypes}
    reference = models["float32"]
    prompt = torch.tensor([reference.tokenizer("Hello! Please tell me about the sea.")["input_ids"]])
    from core.generation.decode.choice import on_kernels

    loops = ("generate", "lean")
    # A native GGUF on the C kernels has no transformers layers: it runs on the lean loop only.
    runs = [
        (dtype, loop) for dtype in dtypes for loop in loops if loop == "lean" or not on_kernels(models[dtype].model)
    ]
    tpots = {run: [] for run in runs}
    for dtype, loop in runs:
        bare_tpot(models[dtype].model, prompt, 4, loop)  # warm-up
    for _ in range(args.rounds):
        for dtype, loop in runs:  # interleaved, so machine noise hits every run alike
            tpots[dtype, loop].append(bare_tpot(models[dtype].model, prompt, args.tokens, loop))
    text_ids = reference.tokenizer(agreement_text())["input_ids"]
    base_tok_s = 1 / median(tpots["float32", "generate"])
    print(f"{len(text_ids)}-token agreement text; {args.rounds} interleaved rounds of {args.tokens} new tokens")
    print(
        "vs fp32: decode tok/s against float32 through generate(); same tokens: the lean loop's greedy reply "
        "against generate()'s for the same precision\n"
    )
    print(
        f"{'dtype':<10}{'loop':<10}{'weight MB':>10}{'TPOT ms':>10}{'tok/s':>8}{'vs fp32':>9}{'top-1 agree':>13}"
        f"{'same tokens':>13}"
    )
    best = None
    for dtype, model in models.items():
        agree = top1_agreement(reference.model, model.model, text_ids)
        own_loops = [loop for loop in loops if (dtype, loop) in tpots]
        with torch.inference_mode():
            replies = {
                loop: bare_reply(model.model, prompt, args.tokens, loop)[0, prompt.shape[1] :].tolist()
                for loop in own_loops
            }
        same = sum(a == b for a, b in zip(replies["generate"], replies["lean"])) if len(own_loops) == 2 else None
        for loop in own_loops:
            tok_s = 1 / median(tpots[dtype, loop])
            speedup = tok_s / base_tok_s
            print(
                f"{dtype:<10}{loop:<10}{model.weight_bytes / 1e6:>10.0f}{median(tpots[dtype, loop]) * 1000:>10.1f}"
                f"{tok_s:>8.1f}{speedup:>8.2f}x{agree:>12.1%}"
                + (
                    f"{same:>9}/{args.tokens}"
                    if loop == "lean" and same is not None
                    else f"{'(kernels)':>13}"
                    if loop == "lean"
                    else ""
                )
            )
            if agree >= TARGET_AGREEMENT and (best is None or speedup > best[2]):
                best = (dtype, loop, speedup, tok_s, agree)
    dtype, loop, speedup, tok_s, agree = best
    verdict = "MET" if speedup >= TARGET_SPEEDUP else "NOT MET"
    print(
        f"\nfastest with >= {TARGET_AGREEMENT:.0%} agreement: {dtype} on the {loop} loop, {speedup:.2f}x float32 "
        f"generate() (target >= {TARGET_SPEEDUP:.0f}x): {verdict}"
    )
    print(
        f"stretch: {tok_s:.0f} tok/s against llama.cpp's ~{STRETCH_TOK_S:.0f} here: "
        f"{'MET' if tok_s >= STRETCH_TOK_S else 'NOT MET'} ({tok_s / STRETCH_TOK_S:.0%} of it)"
    )
    report.figure("fastest_over_float32_generate", speedup, f">= {TARGET_SPEEDUP:g}", speedup >= TARGET_SPEEDUP)
    report.figure("fastest", f"{dtype} on the {loop} loop")
    report.figure("fastest_tok_s", tok_s, f">= {STRETCH_TOK_S:g} (stretch)", tok_s >= STRETCH_TOK_S)


if __name__ == "__main__":
    main()
