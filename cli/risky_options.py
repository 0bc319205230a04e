"""Options that weaken the loader's safety, each refused unless asked for by name, and warned about when it is."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TextIO

WARNINGS = {
    "trust_remote_code": "--trust-remote-code lets a model folder run its own Python code on this machine. "
    "Use it only for models whose code you trust.",
    "allow_pickle": "--allow-pickle lets the loader read pickle checkpoints (.bin, .pt), which can run arbitrary "
    "code when loaded. Use it only for files you trust; safetensors and GGUF need no such flag.",
}


def add_risky_options(parser: argparse.ArgumentParser, default: Callable[[object], object]) -> None:
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        default=default(False),
        help="allow a model folder's own Python code to run (off by default; prints a warning)",
    )
    parser.add_argument(
        "--allow-pickle",
        action="store_true",
        default=default(False),
        help="allow pickle checkpoints (.bin); by default only safetensors or GGUF load",
    )


def warn_about_risky_options(args: argparse.Namespace, stream: TextIO) -> list[str]:
    given = [name for name in WARNINGS if getattr(args, name, False)]
    for name in given:
        print(f"latencylab: warning: {WARNINGS[name]}", file=stream)
    return given
