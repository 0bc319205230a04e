"""Command-line text arguments: an empty prompt is refused, bytes that are not UTF-8 become U+FFFD with a warning."""

from __future__ import annotations

import argparse
import re
import sys

# Python hands undecodable argv bytes over as lone surrogates (surrogateescape); no tokenizer takes them.
_SURROGATES = re.compile("[\ud800-\udfff]")


def text_argument(value: str, what: str = "the argument") -> str:
    cleaned, count = _SURROGATES.subn("\ufffd", value)
    if count:
        print(
            f"latencylab: warning: {count} byte(s) of {what} are not UTF-8; each is read as U+FFFD",
            file=sys.stderr,
        )
    return cleaned


def prompt_argument(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("the prompt is empty; give the question to ask")
    return text_argument(value)
