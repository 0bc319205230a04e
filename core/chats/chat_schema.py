"""What a saved chat may hold beyond its messages and token lists: each free-form field's type, and the bounds.

A chat file is input: hand-edited, from another version, or crafted. record.py checks the document's structure
(messages) field by field, and core/timing/trace_codec.py each trace against its fields' types; this module adds the
tables for the dictionaries the window reads by key (a reply's context, the chat's settings), the numbers no field
may hold (not finite, past 64 bits), and the bounds on a chat's size, checked on the raw bytes before anything is
parsed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from core.errors import LatencyLabError
from core.timing.bounds import INT64

# Bounds: far beyond a chat anyone writes in this app, small enough that opening one stays under a second or two.
MAX_CHAT_FILE_BYTES = 256 * 2**20
MAX_MESSAGES = 20_000
MAX_REPLIES = 10_000

NUMBER = (int, float)
NONE = type(None)
# key -> the types its value may have; other keys are kept and never read.
REPLY_CONTEXT = {
    "streaming": (bool,),
    "settings": (dict,),
    "decode_loop": (str,),
    "notice": (str, NONE),
    "interrupted": (bool,),
    "message_index": (int, NONE),
    "after_message": (int, NONE),
    "model": (str, NONE),
}
CHAT_SETTINGS = {
    "max_new_tokens": (int,),
    "temperature": NUMBER,
    "top_p": NUMBER,
    "seed": (int, NONE),
    "decode_loop": (str,),
    "streaming": (bool,),
}
_KEYS = {"replies": re.compile(rb'"trace"\s*:'), "messages": re.compile(rb'"role"\s*:')}
_LIMITS = {"replies": MAX_REPLIES, "messages": MAX_MESSAGES}


class ChatFileError(LatencyLabError):
    """A chat file or an imported document is not a chat this version can read."""


def check_size(data: bytes) -> None:
    """Refuse a chat past the bounds from its bytes alone: parsing a 200 MB file of a million replies took
    minutes and 8.7 GB before the window appeared."""
    for what, pattern in _KEYS.items():
        count = sum(1 for _ in zip(range(_LIMITS[what] + 1), pattern.finditer(data)))
        if count > _LIMITS[what]:
            raise ChatFileError(
                f"it holds more than {_LIMITS[what]:,} {what}; Latency Lab opens chats of up to "
                f"{MAX_MESSAGES:,} messages and {MAX_REPLIES:,} replies"
            )


def check_fields(value: Any, table: dict[str, tuple], where: str) -> dict:
    """value is a dict whose known keys hold values of their types; ChatFileError naming the first that does not."""
    if not isinstance(value, dict):
        raise ChatFileError(f"{where} must be dict, not {type(value).__name__}")
    for key, kinds in table.items():
        if key in value and not _is(value[key], kinds):
            raise ChatFileError(
                f"{where}.{key} must be {' or '.join(_name(kind) for kind in kinds)}, not {type(value[key]).__name__}"
            )
    return value


def finite_float(text: str) -> float:
    """json.loads's parse_float: 1e999 would be infinity, which no field may hold."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def no_constant(name: str) -> float:
    """json.loads's parse_constant: NaN and Infinity are not JSON, and no field may hold them."""
    raise ValueError(f"{name} is not a number a chat may hold")


def whole(value: Any) -> bool:
    """A JSON whole number within 64 bits (a 400-digit count broke the metrics and the plots)."""
    return isinstance(value, int) and not isinstance(value, bool) and -INT64 <= value <= INT64


def _is(value: Any, kinds: tuple) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int):
        return int in kinds and whole(value)
    return isinstance(value, kinds)


def _name(kind: type) -> str:
    return "null" if kind is NONE else kind.__name__
