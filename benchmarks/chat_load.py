"""How long opening a long saved chat takes: 500 replies of ~200 tokens, the app's loader against the candidates.

Run: .venv/bin/python benchmarks/chat_load.py [--replies 500] [--tokens 200] [--repeats 7] [--json FILE]

The chat is built the way the window builds one (every event a streamed local reply records: the prompt ready,
compute started, prefill progress for 30 layers, the prompt cache's report, each token with its arrival and
paint stamps, the CPU use, the finish) and saved with the app's own encoder. Each loader then reads the same
bytes into traces, best of --repeats, the loaders taking turns so a machine whose load drifts shifts all alike:

- app: core.chats.record.decode_document, what the window runs on opening a chat (validation included);
- json.loads alone: the standard library's parse with no checks, the floor for any loader built on it;
- msgspec: msgspec.json.decode straight into ReplyTrace (types only, its own checks);
- pydantic: a TypeAdapter over ReplyTrace, validate_json in strict mode (types only).

The two library candidates are typed from ReplyTrace's own fields, so they decode what the app's trace holds.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Any

import _common
import msgspec
import pydantic

from core.chats.record import ChatRecord, ReplyRecord, decode_document, encode_document
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PrefillProgress,
    PromptCacheReport,
    PromptReady,
    StopReason,
    TokenEvent,
)
from core.timing.trace import ReplyTrace

WORDS = ("the", " light", "house", " keeper", " saw", " a", " ship", ",", " and", " waved", ".", "\n")
LAYERS = 30
SETTINGS = {"max_new_tokens": 256, "temperature": 0.7, "top_p": 0.95, "seed": None, "decode_loop": "lean"}


def streamed_trace(turn: int, tokens: int) -> ReplyTrace:
    """One reply as a streamed local reply records it, stamps ~25 ms apart."""
    start = 10**12 + turn * 10**10
    trace = ReplyTrace(start, 0)
    trace.record(PromptReady(40 + 30 * turn, None, "lean", start + 2_000_000))
    trace.record(ComputeStarted(start + 3_000_000))
    trace.record(PromptCacheReport(40 + 30 * turn, 30 * turn, "the chat's history was reused", None, "local"))
    for layer in range(LAYERS + 1):
        trace.record(PrefillProgress(layer, LAYERS, start + 4_000_000 + layer * 1_000_000))
    stamp = start + 40_000_000
    for index in range(tokens):
        stamp += 25_000_000 + (index * 7919) % 3_000_000
        trace.record(
            TokenEvent(index, 1000 + index % 4000, WORDS[index % len(WORDS)], stamp), arrival_ns=stamp + 80_000
        )
        trace.painted_ns.append(stamp + 4_000_000)
    trace.record(CpuUsage(cpu_s=4.9, wall_s=5.1, threads=2))
    trace.record(FinishedEvent(StopReason.MAX_TOKENS, tokens, stamp + 100_000))
    trace.window_cpu_s = 0.2
    return trace


def saved_chat(replies: int, tokens: int) -> bytes:
    record = ChatRecord.new("Lighthouses")
    record.settings = {**SETTINGS, "streaming": True}
    for turn in range(replies):
        trace = streamed_trace(turn, tokens)
        record.messages += [Message("user", f"Tell me more, part {turn}."), Message("assistant", trace.text)]
        context = ReplyContext(True, dict(SETTINGS), "lean", None, False, 2 * turn + 1, 2 * turn, "tiny")
        record.replies.append(ReplyRecord(trace, context))
    return encode_document(record.to_document())


class MsgspecReply(msgspec.Struct):
    context: dict
    trace: ReplyTrace


class MsgspecDocument(msgspec.Struct):
    messages: list[dict]
    replies: list[MsgspecReply]


@dataclass
class PydanticReply:
    context: dict
    trace: ReplyTrace


@dataclass
class PydanticDocument:
    messages: list[dict]
    replies: list[PydanticReply]


def msgspec_loader():
    decoder = msgspec.json.Decoder(MsgspecDocument)
    return lambda data: decoder.decode(data).replies


def pydantic_loader():
    adapter = pydantic.TypeAdapter(PydanticDocument)
    return lambda data: adapter.validate_json(data, strict=True).replies


def best_of(loaders: dict[str, Any], data: bytes, repeats: int) -> dict[str, float]:
    best = dict.fromkeys(loaders, float("inf"))
    for _ in range(repeats):
        for name, load in loaders.items():
            started = time.perf_counter()
            load(data)
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=500)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "chat_load")

    data = saved_chat(args.replies, args.tokens)
    print(f"a saved chat of {args.replies} replies x {args.tokens} tokens: {len(data) / 2**20:.1f} MB")
    loaders = {
        "app": lambda data: decode_document(data).replies,
        "json.loads alone": json.loads,
        "msgspec": msgspec_loader(),
        "pydantic": pydantic_loader(),
    }
    for name, load in loaders.items():  # each reads it whole once before the timing
        assert len(load(data) if name != "json.loads alone" else load(data)["replies"]) == args.replies, name
    for name, seconds in best_of(loaders, data, args.repeats).items():
        print(f"  {name:18s} {seconds * 1000:7.1f} ms")
        report.figure(f"{name}_ms", round(seconds * 1000, 1))


if __name__ == "__main__":
    main()
