"""A trace to plain data and back: generated from ReplyTrace's fields, a file checked against their types by msgspec.

Chats save this, exports and race files carry it, and all of them read it back here. The fields' types (with the
bounds of core/timing/bounds.py) are the schema; what no one field's type can say (lists that run beside the
tokens, a fraction that never falls, a server's timings) is checked in consistency_problem below.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from core.errors import LatencyLabError
from core.timing.bounds import INT64
from core.timing.trace import ReplyTrace

# The layout saved before the reports were kept as they came (latencylab-chat/1): each report's fields copied
# into the trace, under these names. Frozen: a field added since is saved within its report.
_FLAT_CACHE = {
    "cached_tokens": "cached_tokens",
    "cache_reason": "reason",
    "cache_break_at": "break_at",
    "cache_source": "source",
    "cache_ready_ns": "timestamp_ns",
}
_FLAT_CPU = {"engine_cpu_s": "cpu_s", "engine_wall_s": "wall_s", "engine_threads": "threads"}
_FLAT_ONLY = {*_FLAT_CACHE, *_FLAT_CPU, "server_output_tokens", "first_byte_ns"}
_MSGSPEC_WORDS = {"object": "dict", "array": "list"}
_ITEMS = {"str": "text", "int": "whole numbers", "float": "numbers", "array": "lists"}
_WHERE = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>.*)`)?$", re.DOTALL)


class TraceFileError(LatencyLabError):
    """A saved or exported trace is not one this version can read; the message names the field."""


def trace_to_dict(trace: ReplyTrace) -> dict:
    """Every field, the reports as objects of their own fields: plain data json.dumps writes."""
    return msgspec.to_builtins(trace)


def trace_from_dict(data: Any, where: str) -> ReplyTrace:
    """A trace read back from trace_to_dict's data (or the older flat layout); TraceFileError naming the first field
    that is wrong, `where` leading its path."""
    if isinstance(data, dict) and not _FLAT_ONLY.isdisjoint(data):
        data = _from_flat(data)
    try:
        trace = msgspec.convert(data, ReplyTrace)
    except msgspec.ValidationError as error:
        raise TraceFileError(in_words(error, where)) from None
    problem = consistency_problem(trace, where)
    if problem:
        raise TraceFileError(problem)
    return trace


def consistency_problem(trace: ReplyTrace, where: str) -> str | None:
    """What is wrong across the fields of a trace whose fields each hold their type; None when nothing is."""
    stamps = len(trace.timestamps_ns)
    if not len(trace.token_ids) == len(trace.token_texts) == stamps:
        return f"{where}: token_ids, token_texts and timestamps_ns differ in length"
    if trace.arrivals_ns and len(trace.arrivals_ns) != stamps:
        return f"{where}: arrivals_ns and timestamps_ns differ in length"
    if len(trace.painted_ns) > stamps:
        return f"{where}: painted_ns has more stamps than there are tokens"
    if trace.chunk_of and len(trace.chunk_of) != stamps:
        return f"{where}: chunk_of and timestamps_ns differ in length"
    for name in ("reasoning_indices", "drafted_indices"):
        if any(not 0 <= index < stamps for index in getattr(trace, name)):
            return f"{where}.{name} points past the tokens"
    speculation = trace.speculation
    if speculation is not None and not 0 <= speculation.accepted <= speculation.drafted:
        return f"{where}.speculation: more drafts accepted than drafted"
    fractions = [fraction for _, fraction in trace.prefill_progress]
    falls = next((index for index in range(1, len(fractions)) if fractions[index] < fractions[index - 1]), None)
    if falls is not None:
        return f"{where}.prefill_progress[{falls}]: the fraction falls"
    if trace.server is not None:
        return _timings_problem(trace.server.timings, f"{where}.server.timings")
    return None


def in_words(error: msgspec.ValidationError, where: str) -> str:
    """msgspec's account of a wrong field, said as the rest of the app says it: 'x.y must be int, not str'."""
    found = _WHERE.match(str(error))
    assert found is not None  # the pattern matches any text
    message, path = found["message"], where + (found["path"] or "")
    if message.startswith("Object missing required field `"):
        return f"{path}.{message.split('`')[1]} is missing"
    if message.startswith("Expected `") and ", got `" in message:
        wanted, got = message.split("`")[1], message.split("`")[3]
        if got == "null" and not path.endswith("]"):
            return f"{path} is missing"
        if path.endswith("]"):  # an item of a list
            parent, index = path[: path.rindex("[")], path[path.rindex("[") :]
            return f"{parent} must hold only {_ITEMS.get(wanted, _words(wanted))} ({index} is {_words(got)})"
        return f"{path} must be {_words(wanted)}, not {_words(got)}"
    if message.endswith((f"= {INT64}", f"= -{INT64}")):
        if path.endswith("]"):
            return f"{path[: path.rindex('[')]} holds a number past 64 bits"
        return f"{path} is past 64 bits"
    if message.startswith("Expected `array` of length <= "):
        return f"{path} holds more than {int(message.rsplit(' ', 1)[1]):,} entries"
    if message.startswith("Invalid enum value "):
        return f"{path} {message.removeprefix('Invalid enum value ')} is unknown"
    if message.startswith("Expected `"):  # a bound: "Expected `float` >= 0.0"
        return f"{path} must be {_words(message.split('`')[1])}{message.split('`', 2)[2]}"
    return f"{path}: {message}"


def _words(msgspec_types: str) -> str:
    return " or ".join(_MSGSPEC_WORDS.get(kind, kind) for kind in msgspec_types.split(" | "))


def _timings_problem(timings: dict | None, where: str) -> str | None:
    """A server's timings: its name for where they came from, and numbers (the meter divides and formats them)."""
    for key, value in (timings or {}).items():
        if value is None:
            continue
        if key == "source":
            if not isinstance(value, str):
                return f"{where}.source must be text or null, not {type(value).__name__}"
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{where}.{key} must be a number or null, not {type(value).__name__}"
        elif isinstance(value, int) and not -INT64 <= value <= INT64:
            return f"{where}.{key} is past 64 bits"
    return None


def _from_flat(data: dict) -> dict:
    """The flat layout's report fields gathered back into their reports (nothing else about the trace changes)."""
    nested = {key: value for key, value in data.items() if key not in _FLAT_ONLY}
    cache = {field: data.get(flat) for flat, field in _FLAT_CACHE.items() if data.get(flat) is not None}
    if "cached_tokens" in cache or "reason" in cache:
        nested["cache"] = {"prompt_tokens": data.get("prompt_tokens"), "cached_tokens": None, "reason": "", **cache}
    if data.get("engine_cpu_s") is not None:
        nested["cpu"] = {field: data.get(flat) for flat, field in _FLAT_CPU.items()}
        nested["cpu"]["wall_s"] = nested["cpu"]["wall_s"] or 0.0  # as cpu_share read a missing one
        nested["cpu"]["threads"] = nested["cpu"]["threads"] or 0
    server = data.get("server")
    if isinstance(server, dict):  # the types are msgspec's to check
        nested["server"] = {
            "kind": server.get("kind", "server"),
            "prompt_tokens": server.get("prompt_tokens"),
            "output_tokens": data.get("server_output_tokens", server.get("output_tokens")),
            "first_byte_ns": data.get("first_byte_ns"),
            "chunks": server.get("chunks") or 0,
            "timings": server.get("timings"),
        }
    return nested
