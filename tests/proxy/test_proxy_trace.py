"""A proxied request as a reply's trace: the meter's figures from it are the record's, its counts the server's."""

from __future__ import annotations

import httpx
import pytest

from core.diagnosis.diagnose import diagnose
from core.proxy.record import ProxyRecord
from core.proxy.trace import reply_trace
from core.timing.events import StopReason
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

LLAMA_TIMINGS = {"prompt_n": 9, "prompt_ms": 40.0, "predicted_n": 6, "predicted_ms": 30.0, "cache_n": 3}
# Six tokens in three chunks, the last chunk with usage and llama.cpp's timings.
CHUNKS = [
    openai_chunk("one two"),
    openai_chunk(" three four"),
    openai_chunk(" five six", finish="length"),
    {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6}, "timings": LLAMA_TIMINGS},
    "[DONE]",
]


def _proxied(proxy_to, **options):
    with ScriptedServer(Script(chunks=CHUNKS, pace_s=0.0)) as server:
        proxy, recorder = proxy_to(server.url, **options)
        httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True}, timeout=10)
        return recorder.finished()[0]


def test_the_trace_gives_the_records_figures_and_counts_tokens_not_chunks(proxy_to):
    record = _proxied(proxy_to)
    trace = reply_trace(record)
    metrics = trace.metrics()
    assert record.chunks == 3 and record.output_tokens == 6
    assert len(trace.timestamps_ns) == 3 and trace.output_tokens == 6 and trace.chunks == 3
    assert metrics.ttft_s == pytest.approx(record.ttft_s, abs=1e-9)
    assert metrics.e2e_s == pytest.approx(record.e2e_s, abs=1e-9)
    assert metrics.tpot_s == pytest.approx(record.tpot_s, abs=1e-9)
    assert trace.server.kind == "llama.cpp" and trace.prompt_tokens == 12
    assert trace.cached_tokens == 3 and trace.cache_source == "llama.cpp timings.cache_n"
    assert trace.stop_reason == StopReason.MAX_TOKENS.value and trace.text == ""  # bodies were not kept: no text
    assert diagnose(trace, None, None)  # the diagnosis reads it as it reads a remote reply


def test_kept_bodies_give_the_trace_its_text_and_an_error_its_stop(proxy_to):
    record = _proxied(proxy_to, keep_bodies=True)
    assert reply_trace(record).text == "one two three four five six"
    with ScriptedServer(Script(chunks=[openai_chunk("a"), openai_chunk("b")], cut_after=1)) as server:
        proxy, recorder = proxy_to(server.url)
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True}, timeout=10)
        cut = reply_trace(recorder.finished()[0])
    assert cut.stop_reason == StopReason.ERROR.value and "cut the reply short" in cut.error


def _record(id: int, model: str = "m", **figures) -> ProxyRecord:
    return ProxyRecord(id, 0.0, "POST", "/v1/chat/completions", "openai-chat", 200, model, True, None, None, None,
                       None, **figures)  # fmt: skip


def test_the_pace_alone_is_the_median_of_the_latest_requests_to_the_same_model_with_none_beside_them():
    shared = _record(100, tpot_s=0.040, in_flight_at_start=1, max_in_flight=3)
    others = [
        *(_record(id, tpot_s=0.001 * id) for id in range(1, 21)),  # alone: the latest 16 are ids 5..20
        _record(21, tpot_s=0.5, max_in_flight=1),  # shared too
        _record(22, model="other", tpot_s=0.5),  # another model
        _record(23, tpot_s=0.5, error="the server cut the reply short"),
        _record(24, tpot_s=0.5, tokens_are_chunks=True),  # a chunk's pace, not a token's
        _record(25, tpot_s=None),  # one token: no pace
        shared,
    ]
    sharing = reply_trace(shared, others).sharing
    assert (sharing.others_at_start, sharing.others_most, sharing.alone_count) == (1, 3, 16)
    assert sharing.alone_tpot_s == pytest.approx(0.0125)  # the median of 5..20 ms
    nothing_alone = reply_trace(shared, [shared, others[20]]).sharing
    assert nothing_alone.alone_tpot_s is None and nothing_alone.alone_count == 0
