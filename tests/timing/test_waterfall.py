"""The waterfall's segments: they tile request start to the first token, and a stop gets its own."""

import pytest

from core.timing.events import FinishedEvent, PromptCacheReport, ServerReport, StopReason, TokenEvent
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import TraceFileError, trace_from_dict, trace_to_dict
from core.timing.waterfall import BEFORE_FIRST_TOKEN, REMOTE_BEFORE_FIRST_TOKEN, decode_figures, segments

MS = 1_000_000


def stamped_trace(cache_ready_ns=None, **stamps):
    trace = ReplyTrace(request_start_ns=100 * MS, prompt_tokens=10, **stamps)
    if cache_ready_ns is not None:
        trace.record(
            PromptCacheReport(10, 4, "the chat's history was reused from the cache", timestamp_ns=cache_ready_ns)
        )
    for index, at in enumerate((400, 450, 500)):
        trace.record(TokenEvent(index, index, "x", at * MS), arrival_ns=(at + 2) * MS)
    trace.painted_ns = [420 * MS, 420 * MS, 520 * MS]
    trace.record(FinishedEvent(StopReason.STOPPED, 3, 505 * MS))
    return trace


def test_the_segments_before_the_first_token_add_up_to_the_ttft():
    trace = stamped_trace(prompt_ready_ns=110 * MS, compute_started_ns=130 * MS, cache_ready_ns=131 * MS)
    found = {segment.name: segment for segment in segments(trace)}
    assert list(found)[:4] == list(BEFORE_FIRST_TOKEN)
    assert [round(found[name].duration_s, 6) for name in BEFORE_FIRST_TOKEN] == [0.01, 0.02, 0.001, 0.269]
    assert sum(found[name].duration_s for name in BEFORE_FIRST_TOKEN) == pytest.approx(trace.metrics().ttft_s)
    assert round(found["delivery"].duration_s, 6) == 0.002 and round(found["paint"].duration_s, 6) == 0.018
    assert "stop_to_last_token" not in found and "cancel" not in found  # no Stop was pressed


def test_a_missing_stamp_merges_its_neighbours_and_the_sum_still_holds():
    trace = stamped_trace(compute_started_ns=130 * MS)
    found = segments(trace)
    assert [segment.name for segment in found][:2] == ["queue", "prefill"]
    assert found[0].start_s == 0 and found[1].end_s == pytest.approx(trace.metrics().ttft_s)


def test_a_stop_gets_the_stop_to_last_token_and_cancel_segments():
    trace = stamped_trace(prompt_ready_ns=110 * MS, compute_started_ns=130 * MS, stop_requested_ns=440 * MS)
    found = {segment.name: segment for segment in segments(trace)}
    assert round(found["stop_to_last_token"].duration_s, 6) == 0.06  # to the token stamped at 500 ms
    assert round(found["cancel"].duration_s, 6) == 0.065  # to the engine's finish at 505 ms
    figures = decode_figures(trace)
    assert figures["delivery_p50_s"] == pytest.approx(0.002) and figures["e2e_s"] == pytest.approx(0.4)
    assert figures["paint_p50_s"] == pytest.approx(0.018)


def test_the_stamps_survive_a_save_and_bad_ones_are_refused():
    trace = stamped_trace(prompt_ready_ns=110 * MS, compute_started_ns=130 * MS, stop_requested_ns=440 * MS)
    restored = trace_from_dict(trace_to_dict(trace), "trace")
    assert segments(restored) == segments(trace)
    with pytest.raises(TraceFileError, match="painted_ns"):
        trace_from_dict({**trace_to_dict(trace), "painted_ns": [1, 2, 3, 4]}, "trace")
    with pytest.raises(TraceFileError, match="compute_started_ns"):
        trace_from_dict({**trace_to_dict(trace), "compute_started_ns": "soon"}, "trace")


def test_over_a_network_the_first_byte_splits_the_wait_and_the_sum_is_still_the_ttft():
    trace = stamped_trace(prompt_ready_ns=105 * MS)
    trace.record(ServerReport("llama.cpp", 10, 3, 160 * MS, 3))
    found = {segment.name: segment for segment in segments(trace)}
    assert list(found)[:3] == list(REMOTE_BEFORE_FIRST_TOKEN)
    assert [round(found[name].duration_s, 6) for name in REMOTE_BEFORE_FIRST_TOKEN] == [0.005, 0.055, 0.24]
    assert sum(found[name].duration_s for name in REMOTE_BEFORE_FIRST_TOKEN) == pytest.approx(trace.metrics().ttft_s)
