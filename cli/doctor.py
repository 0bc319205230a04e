"""`latencylab doctor`: this machine checked before a user blames the model, one line a check, then what would make
replies faster; --json for the same as one document."""

from __future__ import annotations

import argparse
import json
import sys

from core.doctor.check import FAIL, WARN
from core.doctor.load import PROBE_S
from core.doctor.run import NOTHING_TO_DO, Report, run_doctor
from core.settings import GenerationSettings
from core.terminal_text import for_stream

MARKS = {"ok": "ok", "warn": "WARN", "info": "--", "fail": "FAIL"}


def add_doctor_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check this machine (cores, load, memory, page cache, kernels, ceilings) and the model's needs",
        description="Check what makes replies slow on this machine before blaming the model: cores and threads, "
        "other programs' load now, memory and swap, whether the model's file is in the page cache, OpenMP "
        "settings, the kernels and GEMM precision this CPU gets, the measured ceilings, and the chosen model's "
        "context, KV cache and expected decode speed. --model and --dtype choose the model (nothing is loaded).",
    )
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument("--json", action="store_true", help="print the checks as one JSON document")
    parser.add_argument(
        "--measure",
        action="store_true",
        help="measure this machine's GEMM and memory ceilings now (about 10 s) and cache them, when none are",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: GenerationSettings) -> int:
    def progress(text: str) -> None:
        if not args.json:
            print(f"  ({for_stream(text, sys.stderr)})", file=sys.stderr, flush=True)

    report = run_doctor(args.model, args.dtype, args.device, measure=args.measure, probe_s=PROBE_S, progress=progress)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(for_stream(render(report), sys.stdout))  # a server's model names are in it
    return 1 if report.failed else 0


def render(report: Report) -> str:
    """One line a check (its status, name and figure), then the advice, numbered."""
    width = max((len(check.name) for check in report.checks), default=0)
    lines = [f"latencylab doctor: {report.model}"]
    lines += [f"  {MARKS.get(check.status, '--'):4}  {check.name:{width}}  {check.figure}" for check in report.checks]
    advice = report.advice()
    warned = any(check.status in (WARN, FAIL) for check in report.checks)
    lines.append("")
    lines.append("What would make replies faster:" if advice else f"What would make replies faster: {NOTHING_TO_DO}.")
    lines += [f"  {index}. {text}" for index, text in enumerate(advice, 1)]
    if advice and not warned:
        lines.append(f"  ({NOTHING_TO_DO} now; these are suggestions)")
    return "\n".join(lines)
