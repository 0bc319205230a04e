"""One trace codec: every field of a trace is saved, exported and loaded back equal, a chat the previous version saved
still opens with all it held, and a wrong value in any report is refused naming it."""

import dataclasses
import json
import re
from pathlib import Path
from typing import get_args

import pytest

from core.chats.record import ChatFileError, ChatRecord, ReplyRecord, decode_document, encode_document
from core.chats.reply_context import ReplyContext
from core.chats.store import ChatStore
from core.settings import GenerationSettings
from core.timing.bounds import StopReasonValue
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PrefillProgress,
    PromptCacheReport,
    PromptReady,
    ServerReport,
    SharingReport,
    SpeculationReport,
    StopReason,
    TokenEvent,
)
from core.timing.export import reply_report, traces_to_json
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import TraceFileError, trace_from_dict, trace_to_dict

FORMAT_1_CHAT = Path(__file__).parent / "data" / "chat_format_1.json"  # as the format-1 version saved it
MS = 1_000_000


def full_trace() -> ReplyTrace:
    """A trace with every field set, and every field of every report: a field added to ReplyTrace or to a report
    must be set here too (test_the_full_trace_sets_every_field says which), and the round trips below then prove
    it is saved, exported and loaded."""
    trace = ReplyTrace(request_start_ns=100 * MS, prompt_tokens=0)
    trace.record(PromptReady(12, None, "lean", 101 * MS))
    trace.record(ComputeStarted(102 * MS))
    trace.record(
        PromptCacheReport(12, 8, "the history was reused", 8, "llama.cpp timings.cache_n", 103 * MS, 23_040, "hit")
    )
    for layer in range(3):
        trace.record(PrefillProgress(layer, 2, (104 + layer) * MS))
    for index, text in enumerate(["Thinking", "Hé", "llo"]):
        stamp = (200 + 50 * index) * MS
        token = TokenEvent(index, 100 + index, text, stamp, chunk=index, reasoning=index == 0, drafted=index == 2)
        trace.record(token, stamp + MS)
    trace.painted_ns = [202 * MS, 252 * MS]
    trace.stop_requested_ns = 280 * MS
    trace.record(ServerReport("llama.cpp", 12, 3, 150 * MS, 3, {"source": "llama.cpp timings", "prompt_ms": 1.5}))
    trace.record(
        CpuUsage(
            0.75,
            1.0,
            2,
            70,
            900,
            12,
            [64, 0, 6],
            [3, 1, 8],
            [(210 * MS, 2 * MS)],
            98_000_000,
            0.5,
            2,
            20_000_000_000,
            [(205 * MS, 3 * MS)],
        )
    )
    trace.record(
        SpeculationReport("ngram", 2, 1, 1, note="a note", verify_s=0.02, steps=1, step_s=0.01, pass_marks=[(2, 2, 1)])
    )
    trace.record(FinishedEvent(StopReason.STOPPED, 3, 301 * MS, tail_text="!", error="cut short"))
    trace.window_cpu_s = 0.125
    trace.sharing = SharingReport(1, 3, 0.012, 5)
    trace.diagnosis = [Finding("stalls", "1 token took over 5x...", "a cause", "the evidence", 1.0, "advice", 0.04)]
    return trace


def unset(value: object) -> list[str]:
    """The fields of a dataclass left at their defaults (None, empty), its reports' fields included."""
    left = []
    for field in dataclasses.fields(value):  # type: ignore[arg-type]
        item = getattr(value, field.name)
        if dataclasses.is_dataclass(item):
            left += [f"{field.name}.{name}" for name in unset(item)]
        elif (
            item is None
            or item == ""
            or item == []
            or (field.default is not dataclasses.MISSING and item == field.default)
        ):
            left.append(field.name)
    return left


def test_the_full_trace_sets_every_field():
    assert unset(full_trace()) == []


def test_every_field_survives_a_chats_save_and_load(tmp_path):
    trace = full_trace()
    record = ChatRecord.new("Every field")
    record.replies = [ReplyRecord(trace, ReplyContext(streaming=True))]
    store = ChatStore(tmp_path / "chats")
    store.save(record)
    loaded = store.load(record.chat_id).replies[0].trace
    assert loaded == trace
    assert loaded.cache is not None and loaded.cache.memory_bytes == 23_040  # exported, and now saved too
    assert decode_document(encode_document(record.to_document())).replies[0].trace == trace


def test_every_field_survives_the_exports():
    trace = full_trace()
    exported = json.loads(traces_to_json([trace]))["replies"][0]
    assert trace_from_dict(exported["trace"], "replies[0].trace") == trace
    assert exported["prompt_cache"]["memory_bytes"] == 23_040 and exported["server"]["kind"] == "llama.cpp"
    assert exported["cpu"]["threads"] == 2 and exported["server"]["tokens_counted_from"] == "the server's usage"
    report = json.loads(json.dumps(reply_report({"model": "tiny"}, trace, GenerationSettings())))  # ask --json, a race
    assert trace_from_dict(report["trace"], "trace") == trace


def test_a_chat_the_previous_format_saved_opens_with_everything_it_held():
    record = decode_document(FORMAT_1_CHAT.read_bytes())
    local, remote = (reply.trace for reply in record.replies)
    assert local.text == "Hello there!." and local.stop_reason == "stopped" and local.window_cpu_s == 0.125
    assert local.cache == PromptCacheReport(
        12, 8, "the chat's history was reused from the cache", 8, "local", timestamp_ns=1_350_000
    )  # memory_bytes: the format-1 version did not save it
    assert local.cpu == CpuUsage(0.75, 1.0, 2) and local.cpu_share == pytest.approx(0.375)
    assert local.prefill_progress[-1] == (1_600_000, 1.0) and local.painted_ns == [2_100_000, 2_600_000]
    timings = {"source": "llama.cpp timings", "prompt_ms": 1.5, "cache_n": 4}
    assert remote.server == ServerReport("llama.cpp", 9, 3, 5_900_000, 2, timings)
    assert remote.server.tokens_counted_from == "the server's usage"
    assert (remote.cached_tokens, remote.cache_source) == (4, "llama.cpp timings.cache_n")
    assert remote.reasoning_text == "Thinking" and remote.chunks == 2 and remote.output_tokens == 3
    again = decode_document(encode_document(record.to_document()))  # and saved again, in the new format
    assert again == record and record.to_document()["format"] == "latencylab-chat/2"


def test_the_stop_reasons_a_trace_may_hold_are_the_enums():
    assert set(get_args(StopReasonValue)) == {reason.value for reason in StopReason}


@pytest.mark.parametrize(
    "path, value, says",
    [
        (("cache", "memory_bytes"), "lots", "trace.cache.memory_bytes must be int or null, not str"),
        (("cache", "reason"), None, "trace.cache.reason is missing"),
        (("cpu", "wall_s"), -1, "trace.cpu.wall_s must be float >= 0.0"),
        (("cpu", "threads"), 2**64, "trace.cpu.threads is past 64 bits"),
        (("server",), ["llama.cpp"], "trace.server must be dict or null, not list"),
        (("server", "kind"), None, "trace.server.kind is missing"),
        (("window_cpu_s",), 90_000, "trace.window_cpu_s must be float <= 86400.0"),
        (("stop_reason",), "exploded", "trace.stop_reason 'exploded' is unknown"),
        (("arrivals_ns",), [1], "trace: arrivals_ns and timestamps_ns differ in length"),
        (("reasoning_indices",), [7], "trace.reasoning_indices points past the tokens"),
        (("drafted_indices",), [-1], "trace.drafted_indices points past the tokens"),
        (("speculation", "accepted"), 5, "trace.speculation: more drafts accepted than drafted"),
        (("speculation", "drafted"), "many", "trace.speculation.drafted must be int, not str"),
        (("prefill_progress", 1), [1, 1.5], "trace.prefill_progress[1][1] must be float <= 1.0"),
    ],
)
def test_a_wrong_value_in_any_field_is_refused_naming_it(path, value, says):
    document = ChatRecord.new().to_document()
    document["replies"] = [{"context": {}, "trace": trace_to_dict(full_trace())}]
    target = document["replies"][0]["trace"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ChatFileError, match=r"replies\[0\]\." + re.escape(says)):
        decode_document(encode_document(document))


def test_the_previous_formats_fields_are_checked_too():
    document = json.loads(FORMAT_1_CHAT.read_text(encoding="utf-8"))
    document["replies"][0]["trace"]["cache_reason"] = 5
    with pytest.raises(ChatFileError, match=r"replies\[0\]\.trace\.cache\.reason must be str, not int"):
        decode_document(json.dumps(document).encode())


def test_a_trace_that_is_not_an_object_is_refused_saying_so():
    with pytest.raises(TraceFileError, match="^b.trace must be dict, not str$"):
        trace_from_dict("soon", "b.trace")
    with pytest.raises(TraceFileError, match="^b.trace.request_start_ns is missing$"):
        trace_from_dict({"prompt_tokens": 1}, "b.trace")
