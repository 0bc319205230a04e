"""Reading a response as it passes: chunks against tokens, each server's counts and timings, bounded memory."""

from __future__ import annotations

import json

from core.proxy import meter as meter_module
from core.proxy.exchange import Exchange
from core.proxy.meter import ResponseMeter
from core.proxy.routes import OLLAMA_CHAT, OLLAMA_GENERATE, OPENAI_CHAT, OPENAI_COMPLETIONS, api_of
from tests.remote.scripted_server import openai_chunk

MS = 1_000_000


def _sse(*payloads) -> list[bytes]:
    return [f"data: {p if isinstance(p, str) else json.dumps(p)}\n\n".encode() for p in payloads]


def _record(meter: ResponseMeter, start_ns: int = 0):
    exchange = Exchange(1, "POST", "/v1/chat/completions", meter.api, None, None, keep_bodies=False, start_ns=start_ns)
    exchange.meter = meter
    return exchange.record()


def test_tpot_counts_the_servers_tokens_not_its_chunks():
    meter = ResponseMeter(OPENAI_CHAT)
    meter.begin(200, "text/event-stream; charset=utf-8", "", True)
    bodies = _sse(
        openai_chunk(role="assistant"),
        openai_chunk("Hello there"),
        openai_chunk(" you"),
        openai_chunk(" all", finish="stop"),
        {
            "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 4}},
        },
        "[DONE]",
    )
    for stamp_ms, body in zip((5, 10, 20, 40, 41, 41), bodies):
        meter.feed(body, stamp_ms * MS)
    meter.finish(42 * MS)
    record = _record(meter)
    assert record.chunks == 3 and record.output_tokens == 7 and not record.tokens_are_chunks
    assert (record.prompt_tokens, record.cached_tokens, record.finish_reason) == (9, 4, "stop")
    assert record.ttft_s == 0.010 and record.e2e_s == 0.040
    assert record.tpot_s == (0.040 - 0.010) / 6  # (E2E - TTFT) / (N - 1), N from usage
    assert record.itl_s == (0.010, 0.020) and record.itl_count == 2 and record.itl_max_s == 0.020


def test_without_a_count_from_the_server_chunks_stand_in_and_say_so():
    meter = ResponseMeter(OPENAI_COMPLETIONS)
    meter.begin(200, "text/event-stream", "", True)
    for stamp_ms, body in enumerate(_sse({"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}]}), start=1):
        meter.feed(body, stamp_ms * MS)
    meter.finish(3 * MS)
    record = _record(meter)
    assert record.output_tokens == 2 and record.tokens_are_chunks and record.tpot_s == 0.001


def test_llama_cpp_timings_and_cache_are_read_from_the_last_chunk():
    meter = ResponseMeter(OPENAI_CHAT)
    meter.begin(200, "text/event-stream", "", True)
    last = openai_chunk(finish="stop")
    last["timings"] = {"prompt_n": 3, "prompt_ms": 12.5, "predicted_n": 5, "predicted_ms": 40.0, "cache_n": 11}
    for body in _sse(openai_chunk("x"), openai_chunk("y"), last):
        meter.feed(body, 1)
    meter.finish(2)
    record = _record(meter)
    assert record.output_tokens == 5 and not record.tokens_are_chunks  # llama.cpp's predicted_n
    assert record.cached_tokens == 11 and record.server_timings["prompt_ms"] == 12.5
    assert record.prompt_tokens == 14  # no usage: what llama.cpp computed and what its cache gave (it read "?")


def test_ollama_lines_carry_counts_durations_and_tool_calls():
    meter = ResponseMeter(OLLAMA_CHAT)
    meter.begin(200, "application/x-ndjson", "", True)
    lines = [
        {"model": "llama3", "message": {"role": "assistant", "content": "Hi"}, "done": False},
        {"message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}},
        {
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 26,
            "eval_count": 3,
            "eval_duration": 30_000_000,
            "prompt_eval_duration": 8_000_000,
        },
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    meter.feed(data[:30], 10 * MS)  # a line split across reads
    meter.feed(data[30:], 20 * MS)
    meter.finish(21 * MS)
    record = _record(meter)
    assert record.model == "llama3" and record.chunks == 2 and record.output_tokens == 3
    assert record.prompt_tokens == 26 and record.server_timings["per_token_ms"] == 10.0
    assert record.finish_reason == "stop" and record.ttft_s == 0.020  # the first line was whole only at 20 ms


def test_a_reply_not_streamed_has_its_ttft_at_the_end_and_no_tpot():
    meter = ResponseMeter(OLLAMA_GENERATE)
    meter.begin(200, "application/json; charset=utf-8", "", False)
    body = json.dumps({"response": "All at once.", "done": True, "eval_count": 4, "prompt_eval_count": 8}).encode()
    meter.feed(body[:10], 5 * MS)
    meter.feed(body[10:], 6 * MS)
    meter.finish(7 * MS)
    record = _record(meter)
    assert not record.streamed and record.ttft_s == record.e2e_s == 0.007
    assert record.tpot_s is None and record.output_tokens == 4 and record.chunks == 1


def test_the_servers_error_is_named_in_one_line():
    meter = ResponseMeter(OPENAI_CHAT)
    meter.begin(500, "application/json", "", True)
    meter.feed(b'{"error": {"message": "out of\\nmemory"}}', 1)
    meter.finish(2)
    assert _record(meter).error == "out of memory"


def test_malformed_output_is_named_and_reading_stops_without_raising():
    cases = [
        ("text/event-stream", b"this is no event\n\n"),
        ("text/event-stream", b"data: {not json\n\n"),
        ("text/event-stream", b"data: [1, 2]\n\n"),
        ("application/x-ndjson", b"\xff\xfe\n"),
        ("application/json", b"<html>oops</html>"),
        ("text/event-stream", b"data: " + b"[" * 100_000 + b"\n\n"),
    ]
    for content_type, body in cases:
        meter = ResponseMeter(OPENAI_CHAT)
        meter.begin(200, content_type, "", True)
        meter.feed(body, 1)
        meter.feed(b"data: more\n\n", 2)
        meter.finish(3)
        record = _record(meter)
        assert record.meter_note, (content_type, body[:20])
        assert record.chunks == 0


def test_a_compressed_body_passes_unread():
    meter = ResponseMeter(OPENAI_CHAT)
    meter.begin(200, "text/event-stream", "gzip", True)
    meter.feed(b"\x1f\x8b\x08", 1)
    meter.finish(2)
    assert "gzip" in _record(meter).meter_note


def test_an_endless_stream_keeps_a_bounded_number_of_gaps(monkeypatch):
    monkeypatch.setattr(meter_module, "ITL_KEPT", 16)
    meter = ResponseMeter(OPENAI_CHAT, keep_text=True)
    monkeypatch.setattr(meter_module, "MAX_KEPT_CHARS", 100)
    meter.begin(200, "text/event-stream", "", True)
    (event,) = _sse(openai_chunk("0123456789"))
    for stamp in range(1000):
        meter.feed(event, stamp * MS)
    record = _record(meter)
    assert record.chunks == 1000 and record.itl_count == 999 and len(record.itl_s) == 16
    assert len(meter.text) == 100


def test_a_whole_body_past_its_bound_is_passed_unread(monkeypatch):
    monkeypatch.setattr(meter_module, "MAX_WHOLE_BYTES", 64)
    meter = ResponseMeter(OPENAI_CHAT)
    meter.begin(200, "application/json", "", False)
    for _ in range(10):
        meter.feed(b" " * 32, 1)
    meter.finish(2)
    assert "not read" in _record(meter).meter_note and len(meter._whole) == 0


def test_generation_endpoints_are_metered_and_the_rest_pass():
    assert api_of("POST", "/v1/chat/completions") == OPENAI_CHAT
    assert api_of("POST", "/openai/v1/completions?x=1") == OPENAI_COMPLETIONS
    assert api_of("POST", "/api/chat") == OLLAMA_CHAT and api_of("POST", "/api/generate/") == OLLAMA_GENERATE
    assert api_of("GET", "/v1/chat/completions") is None and api_of("POST", "/api/tags") is None
    assert api_of("POST", "/v1/embeddings") is None
