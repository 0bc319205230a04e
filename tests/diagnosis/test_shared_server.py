"""A proxied request that shared the server: weighed against the same model's requests alone where there are some,
said plainly where there are none, and never called a reply nothing slowed."""

from __future__ import annotations

import pytest

from core.diagnosis.diagnose import diagnose
from core.timing.events import ServerReport, SharingReport
from tests.support.made_traces import made_trace

TOKENS = 21  # a first token, then 20 intervals


def proxied(interval_ms: float, sharing: SharingReport, timings: dict | None = None, ttft_ms: float = 50.0):
    server = ServerReport("llama.cpp", 40, TOKENS, None, TOKENS, timings)
    trace = made_trace([interval_ms] * (TOKENS - 1), ttft_ms=ttft_ms, server=server)
    trace.cpu = None  # a server's reply: the proxy measures no CPU of the engine's
    trace.sharing = sharing
    return trace


def test_a_request_four_times_as_slow_as_alone_is_found_sharing_with_the_time_it_lost():
    trace = proxied(40.0, SharingReport(others_at_start=3, others_most=4, alone_tpot_s=0.010, alone_count=6))
    (finding,) = [finding for finding in diagnose(trace) if finding.kind == "shared_server"]
    assert finding.summary.startswith("This request shared the server with up to 4 other requests: it decoded at 40 ms")
    assert "40 ms a token, against 10 ms" in finding.summary and "(4.0× as slow)" in finding.summary
    assert finding.summary.endswith("; its first token came 50 ms after it was sent, behind 3 already running.")
    assert "the median of the latest 6 requests" in finding.evidence
    assert finding.figure == pytest.approx(0.030)  # seconds a token
    assert finding.cost_s == pytest.approx(0.030 * (TOKENS - 1))
    assert diagnose(trace)[0].kind == "shared_server"  # the costliest: ranked first


def test_a_pace_alone_of_zero_a_burst_through_the_proxy_is_still_a_yardstick():
    trace = proxied(4.0, SharingReport(others_at_start=0, others_most=1, alone_tpot_s=0.0, alone_count=1))
    (finding,) = [finding for finding in diagnose(trace) if finding.kind == "shared_server"]
    assert "4.0 ms a token, against 0.0 ms for this model's requests alone (their chunks came in one burst)." in (
        finding.summary
    )
    assert finding.cost_s == pytest.approx(0.004 * (TOKENS - 1))


def test_sharing_with_nothing_alone_to_weigh_it_against_is_said_not_called_healthy():
    trace = proxied(40.0, SharingReport(others_at_start=0, others_most=4))
    kinds = [finding.kind for finding in diagnose(trace)]
    assert "healthy" not in kinds and "shared_server" in kinds
    (finding,) = [finding for finding in diagnose(trace) if finding.kind == "shared_server"]
    assert "no request to this model ran alone" in finding.summary and finding.cost_s is None
    assert "already running" not in finding.summary and "first token" not in finding.summary  # the others came later


def test_sharing_that_cost_nothing_measurable_is_healthy_and_says_sharing_was_checked():
    trace = proxied(10.5, SharingReport(others_at_start=1, others_most=1, alone_tpot_s=0.010, alone_count=2))
    (finding,) = diagnose(trace)
    assert finding.kind == "healthy" and "requests sharing the server" in finding.evidence


def test_a_request_alone_gets_no_sharing_finding_but_one_far_slower_than_its_model_alone_is_named():
    """A lone request at 78 ms a token, where the model's others alone ran at 14 ms, read "Nothing slowed"."""
    usual = proxied(12.0, SharingReport(others_at_start=0, others_most=0, alone_tpot_s=0.010, alone_count=2))
    assert [finding.kind for finding in diagnose(usual)] == ["healthy"]
    slow = proxied(78.0, SharingReport(others_at_start=0, others_most=0, alone_tpot_s=0.014, alone_count=3))
    (finding,) = diagnose(slow)
    assert finding.kind == "slower_server" and "(5.6× as slow)" in finding.summary
    assert "the latest 3 other requests to the same model" in finding.evidence
    assert finding.cost_s == pytest.approx(0.064 * (TOKENS - 1))


def test_a_slower_pace_that_lost_less_than_anyone_feels_is_not_blamed_on_the_server_or_the_sharing():
    """Five tokens at 0.8 ms against 0.3 ms alone (2 ms lost in all) headed the diagnosis as a server 2.5x as slow."""
    for others in (0, 2):
        sharing = SharingReport(others_at_start=0, others_most=others, alone_tpot_s=0.0003, alone_count=4)
        short = made_trace([0.8] * 4, ttft_ms=9.0, server=ServerReport("llama.cpp", 40, 5, None, 5, None))
        short.cpu, short.sharing = None, sharing
        assert [finding.kind for finding in diagnose(short)] == ["healthy"]
        long = proxied(3.0, sharing)  # 20 intervals 2.7 ms slower: 54 ms lost, felt
        assert diagnose(long)[0].kind == ("slower_server" if others == 0 else "shared_server")


def test_a_wait_outside_the_prefill_behind_requests_in_flight_is_named_the_queue():
    timings = {"source": "llama.cpp timings", "prompt_ms": 20.0}
    behind = proxied(10.0, SharingReport(others_at_start=2, others_most=2), timings, ttft_ms=900.0)
    (finding,) = [finding for finding in diagnose(behind) if finding.kind == "server_wait"]
    assert "most likely its queue, as 2 other requests were in flight through the proxy" in finding.summary
    assert finding.cause.startswith("most of the wait for the first token was its queue")
    alone = proxied(10.0, SharingReport(others_at_start=0, others_most=0), timings, ttft_ms=900.0)
    (finding,) = [finding for finding in diagnose(alone) if finding.kind == "server_wait"]
    assert "its queue, the network or templating (the server does not say which)" in finding.summary


def test_a_request_with_no_decode_pace_that_shared_the_server_says_so():
    trace = made_trace([], ttft_ms=300.0, server=ServerReport("llama.cpp", 40, 1, None, 1, None))
    trace.cpu, trace.sharing = None, SharingReport(others_at_start=2, others_most=2, alone_tpot_s=0.01, alone_count=3)
    (finding,) = diagnose(trace)
    assert finding.kind == "shared_server" and "no decode pace to weigh" in finding.summary


def test_a_reply_that_came_whole_has_its_generation_counted_as_the_servers_work_not_a_wait():
    """Not streamed: 333 ms until the body, of which the server spent 69 ms on the prompt and 258 ms writing. It was
    called 264 ms of queue, network or templating."""
    timings = {"source": "llama.cpp timings", "prompt_ms": 69.0, "generation_ms": 258.0}
    server = ServerReport("llama.cpp", 8, 20, None, 1, timings)
    trace = made_trace([], ttft_ms=333.0, server=server)
    trace.cpu, trace.sharing = None, SharingReport(others_at_start=0, others_most=0)
    assert "server_wait" not in [finding.kind for finding in diagnose(trace)]
    slow = made_trace([], ttft_ms=900.0, server=server)
    slow.cpu, slow.sharing = None, SharingReport(others_at_start=0, others_most=0)
    (finding,) = [finding for finding in diagnose(slow) if finding.kind == "server_wait"]
    assert (
        "69 ms prefill and 258 ms writing the reply (it came whole); 573 ms was outside its prefill and generation"
        in (finding.summary)
    )
    assert "no other request through the proxy ahead of it" in finding.advice and "more slots" not in finding.advice


def test_a_prompt_pass_shared_with_other_requests_is_not_blamed_on_the_prompts_length():
    """A one-token prompt whose pass the server ran in steps shared with three others took 1.08 s: "a shorter prompt"
    was the advice."""
    timings = {"source": "llama.cpp timings", "prompt_ms": 1080.0}
    trace = proxied(30.0, SharingReport(others_at_start=3, others_most=3), timings, ttft_ms=1390.0)
    trace.prompt_tokens = 1
    (finding,) = [finding for finding in diagnose(trace) if finding.kind == "prefill"]
    assert finding.cause == "the prompt's pass, in steps the server shared with up to 3 other requests"
    assert finding.advice.startswith("fewer requests at once (up to 3 other requests ran beside it)")
