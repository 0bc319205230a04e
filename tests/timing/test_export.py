"""Trace export: one row per token with times since request start, and the definitions inside the file."""

import csv
import io
import json

from core.timing.events import FinishedEvent, StopReason, TokenEvent
from core.timing.export import traces_to_csv, traces_to_json
from core.timing.trace import ReplyTrace

MS = 1_000_000


def sample_trace():
    trace = ReplyTrace(request_start_ns=10 * MS, prompt_tokens=4)
    for index, (text, at) in enumerate([("Hé", 110), ("llo,\n", 160), (" 🌍", 230)]):
        trace.record(TokenEvent(index, 100 + index, text, at * MS))
    trace.record(FinishedEvent(StopReason.EOS, 3, 231 * MS))
    return trace


def test_json_export_holds_rows_metrics_and_definitions():
    document = json.loads(traces_to_json([sample_trace()], context={"model": "m"}))
    assert (
        "request start to the first generated token" in document["definitions"]["ttft_s"]
        and "(E2E - TTFT) / (N - 1)" in document["definitions"]["tpot_s"]
    )
    reply = document["replies"][0]
    assert reply["text"] == "Héllo,\n 🌍" and reply["stop_reason"] == "eos"
    assert [row["t_s"] for row in reply["tokens"]] == [0.1, 0.15, 0.22]
    assert [round(row["interval_s"], 6) for row in reply["tokens"]] == [0.1, 0.05, 0.07]
    assert reply["metrics"]["ttft_s"] == 0.1 and reply["metrics"]["output_tokens"] == 3


def test_csv_export_round_trips_text_and_names_definitions():
    text = traces_to_csv([sample_trace(), sample_trace()])
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert any("tpot_s" in line for line in comments) and any("interval_s" in line for line in comments)
    rows = list(csv.DictReader(io.StringIO(text.split("\n", len(comments))[-1])))
    assert len(rows) == 6 and {row["turn"] for row in rows} == {"0", "1"}
    assert [row["text"] for row in rows[:3]] == ["Hé", "llo,\n", " 🌍"]
    assert float(rows[0]["interval_s"]) == 0.1 and float(rows[2]["t_s"]) == 0.22


def test_json_export_carries_the_prefill_progress_with_its_definition():
    from core.timing.events import PrefillProgress

    trace = ReplyTrace(request_start_ns=10 * MS, prompt_tokens=4)
    for done, at in ((0, 20), (1, 60), (2, 100)):
        trace.record(PrefillProgress(done, 2, at * MS))
    trace.record(TokenEvent(0, 1, "a", 110 * MS))
    trace.record(FinishedEvent(StopReason.EOS, 1, 111 * MS))
    document = json.loads(traces_to_json([trace]))
    assert document["replies"][0]["prefill_progress"] == [
        {"t_s": 0.01, "fraction": 0.0},
        {"t_s": 0.05, "fraction": 0.5},
        {"t_s": 0.09, "fraction": 1.0},
    ]
    assert "decoder layer" in document["definitions"]["prefill_progress"]
