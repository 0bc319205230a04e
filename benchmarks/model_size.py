"""The chapter's first consequence at real size: decode tok/s against weight bytes over one family's sizes.

Generates (once; tools/real_size.py) real-shaped files with random weights, one quant type, several sizes, and runs
the lab's size sweep on them, one model loaded at a time, beside this machine's DRAM ceiling: tok/s ≈ bandwidth /
model bytes predicts each row's decode rate, and the verdict says whether speed fell in proportion to the bytes.
Run: .venv/bin/python benchmarks/model_size.py [--files qwen2.5-0.5b,llama-3.2-1b,llama-3.2-3b,llama-2-7b]
     [--type Q4_K_M] [--new-tokens 24] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="qwen2.5-0.5b,llama-3.2-1b,llama-3.2-3b,llama-2-7b")
    parser.add_argument("--type", default="Q4_K_M", help="the quant type of every file")
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "model_size")
    sys.path.insert(0, str(ROOT))
    from core.errors import InvalidSettingsError
    from core.lab.config import LabConfig
    from core.lab.runner import run_lab
    from tools.real_size import real_size_file

    if len(args.files.split(",")) < 2:
        parser.error("--files: name two or more files, the sweep compares them")
    paths = [str(real_size_file(name, args.type)) for name in args.files.split(",")]
    try:
        config = LabConfig(
            sweeps=("bandwidth", "size"), size_models=tuple(paths), new_tokens=args.new_tokens, repeats=args.repeats
        )
    except InvalidSettingsError as error:  # one file, a bad count: the lab's own words, not a traceback
        parser.error(str(error))
    results = run_lab(config)
    bandwidth = (results.bandwidth_measurement or {}).get("bytes_per_s")
    print(f"DRAM ceiling: {bandwidth / 1e9:.1f} GB/s" if bandwidth else "DRAM ceiling: not measured")
    print(
        f"{'model':<34} {'weights GB':>10} {'TPOT ms':>8} {'tok/s':>7} {'bw/bytes':>8} {'read GB/s':>9} {'of DRAM':>7}"
    )
    for row in results.size:
        if row.get("error"):
            print(f"{row['model']:<34} {row['error']}")
            continue
        predicted = bandwidth / row["weight_bytes"] if bandwidth else float("nan")
        share = row["read_bytes_s"] / bandwidth if bandwidth else float("nan")
        print(
            f"{row['model']:<34} {row['weight_bytes'] / 1e9:>10.2f} {row['tpot_s'] * 1e3:>8.1f} "
            f"{row['decode_tok_s']:>7.1f} {predicted:>8.1f} {row['read_bytes_s'] / 1e9:>9.1f} {share:>7.0%}"
        )
        report.figure(f"{row['model']}_tok_s", round(row["decode_tok_s"], 2))
        report.figure(f"{row['model']}_dram_share", round(share, 3))
    (verdict,) = [v for v in results.verdicts if v["key"] == "size"]
    print(verdict["sentence"])
    report.figure("size_claim_holds", verdict["holds"])


if __name__ == "__main__":
    main()
