"""Metric functions on hand-made traces, including the N = 0 and N = 1 edge cases."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.timing.metrics import compute_metrics, inter_token_latencies, percentile, percentiles

MS = 1_000_000


def test_no_tokens_leaves_every_latency_undefined():
    metrics = compute_metrics(request_start_ns=5 * MS, timestamps_ns=[], prompt_tokens=12)
    assert metrics.output_tokens == 0
    assert metrics.prompt_tokens == 12
    assert metrics.ttft_s is None and metrics.e2e_s is None and metrics.tpot_s is None
    assert metrics.itl_s == () and metrics.itl_p50_s is None and metrics.itl_p99_s is None
    assert metrics.prefill_tok_s is None and metrics.decode_tok_s is None


def test_one_token_has_ttft_equal_to_e2e_and_no_tpot():
    metrics = compute_metrics(0, [250 * MS], prompt_tokens=50)
    assert metrics.ttft_s == pytest.approx(0.25)
    assert metrics.e2e_s == pytest.approx(0.25)
    assert metrics.tpot_s is None and metrics.decode_tok_s is None
    assert metrics.itl_s == ()
    assert metrics.prefill_tok_s == pytest.approx(200.0)


def test_a_reply_that_came_whole_has_no_pace_and_no_prefill_rate():
    """20 tokens in one body (not streamed): TPOT read 0.0 ms and the prefill rate counted the decode in its time."""
    metrics = compute_metrics(0, [333 * MS], prompt_tokens=8, output_tokens=20)
    assert metrics.ttft_s == metrics.e2e_s == pytest.approx(0.333) and metrics.output_tokens == 20
    assert metrics.tpot_s is None and metrics.decode_tok_s is None and metrics.prefill_tok_s is None


def test_hand_made_trace_follows_the_vllm_definitions():
    start = 1_000 * MS
    stamps = [start + 100 * MS, start + 150 * MS, start + 210 * MS, start + 260 * MS]
    metrics = compute_metrics(start, stamps, prompt_tokens=20)
    assert metrics.ttft_s == pytest.approx(0.100)
    assert metrics.e2e_s == pytest.approx(0.260)
    assert metrics.tpot_s == pytest.approx((0.260 - 0.100) / 3)
    assert metrics.itl_s == pytest.approx((0.050, 0.060, 0.050))
    assert metrics.itl_p50_s == pytest.approx(0.050)
    assert metrics.itl_p90_s == pytest.approx(0.058)
    assert metrics.prefill_tok_s == pytest.approx(200.0)
    assert metrics.decode_tok_s == pytest.approx(3 / 0.160)


def test_percentile_matches_numpy_linear_interpolation():
    values = [0.5, 0.1, 0.3, 0.9, 0.7]
    assert percentile(values, 99) == pytest.approx(float(np.percentile(values, 99)))
    assert percentile([], 50) is None


@given(st.lists(st.floats(min_value=0, max_value=60, allow_nan=False), min_size=1, max_size=300))
@example([0.25, 0.25, 0.25])  # between equal values: exactly that value
@example([1e-9, 30.0])
def test_percentiles_are_numpys_to_the_bit(values):
    qs = (0, 1, 25, 50, 90, 99, 100)
    assert percentiles(values, qs) == tuple(np.percentile(values, qs).tolist())


def test_percentiles_of_nothing_are_none():
    assert percentiles([], (50, 90, 99)) == (None, None, None)


@given(st.integers(0, 10**12), st.lists(st.integers(1, 10**9), min_size=0, max_size=60), st.integers(0, 10**6))
@example(0, [15592607, 1], 0)  # float seconds cancelled here: TPOT came out 1.0000000012 ns
def test_metrics_are_consistent_for_any_increasing_trace(start, gaps, prompt_tokens):
    stamps, now = [], start
    for gap in gaps:
        now += gap
        stamps.append(now)
    metrics = compute_metrics(start, stamps, prompt_tokens)
    assert metrics.output_tokens == len(stamps)
    assert len(metrics.itl_s) == max(len(stamps) - 1, 0)
    if len(stamps) >= 2:
        # Each metric against the gaps the trace was built from, not against the other metrics.
        assert math.isclose(metrics.ttft_s, gaps[0] / 1e9, rel_tol=1e-9)
        assert math.isclose(metrics.e2e_s, sum(gaps) / 1e9, rel_tol=1e-9)
        assert math.isclose(metrics.tpot_s, sum(gaps[1:]) / (len(gaps) - 1) / 1e9, rel_tol=1e-9)
        assert math.isclose(metrics.itl_p50_s, float(np.median(gaps[1:])) / 1e9, rel_tol=1e-9)
        assert math.isclose(sum(metrics.itl_s), metrics.e2e_s - metrics.ttft_s, rel_tol=1e-9, abs_tol=1e-9)
        assert min(metrics.itl_s) <= metrics.itl_p50_s <= metrics.itl_p90_s <= metrics.itl_p99_s <= max(metrics.itl_s)
    if stamps:
        assert 0 < metrics.ttft_s <= metrics.e2e_s


def test_inter_token_latencies_are_the_gaps():
    assert inter_token_latencies([0, 2 * 10**9, 5 * 10**9]) == (2.0, 3.0)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200))
def test_running_median_equals_the_median_of_everything_so_far(values):
    from core.timing.running_median import RunningMedian

    running = RunningMedian()
    for count, value in enumerate(values, start=1):
        assert running.add(value) == pytest.approx(float(np.median(values[:count])))


def test_the_prefill_rate_counts_the_tokens_computed_not_those_the_prompt_cache_gave():
    """Seen in the window: 174 prompt tokens, 173 from the cache, TTFT 21.8 ms read 7,979 prefill tok/s."""
    from core.timing.events import PromptCacheReport, TokenEvent
    from core.timing.trace import ReplyTrace

    trace = ReplyTrace(request_start_ns=0, prompt_tokens=174)
    trace.record(PromptCacheReport(174, 173, "the chat's history was reused from the cache"))
    trace.record(TokenEvent(0, 7, "x", int(21.8 * MS)))
    trace.record(TokenEvent(1, 7, "y", int(31.8 * MS)))
    assert trace.metrics().prefill_tok_s == pytest.approx(1 / 0.0218)
    assert trace.metrics().prompt_tokens == 174  # the prompt is still the whole prompt
    trace.record(PromptCacheReport(174, 174, "all of it"))  # nothing computed: no rate to give
    assert trace.metrics().prefill_tok_s is None
    assert compute_metrics(0, [100 * MS], prompt_tokens=20).prefill_tok_s == pytest.approx(200.0)  # no cache: all
