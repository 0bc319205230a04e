"""Each finding of a reply's diagnosis on traces made to show its cause, and its absence on traces that do not: the
rules as written, apart from any machine (tests/diagnosis/test_induced_causes.py induces them on the real model)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.diagnosis.diagnose import HEALTHY, diagnose
from core.diagnosis.quant_sizes import step_weight_bytes
from core.roofline.ceilings import Ceiling, Ceilings
from core.roofline.counts import ArithmeticShape, reply_decode_counts
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PromptCacheReport,
    ServerReport,
    SpeculationReport,
    StopReason,
)
from core.timing.trace import ReplyTrace
from tests.support.made_traces import MS, made_trace, quiet_cpu


def kinds(trace, **context) -> list[str]:
    return [finding.kind for finding in diagnose(trace, **context)]


def test_a_quiet_reply_says_nothing_slowed_it():
    findings = diagnose(made_trace([10.0] * 30))
    assert [finding.kind for finding in findings] == [HEALTHY]
    assert findings[0].summary.startswith("Nothing slowed this reply")
    assert findings[0].summary == "Nothing slowed this reply (TTFT 50 ms, TPOT 10 ms)."


def test_a_healthy_reply_with_ceilings_gives_their_shares():
    shape = tiny_shape()
    finding = diagnose(made_trace([10.0] * 30), shape.to_dict(), dram(1e14))[0]
    # Far below the memory's speed: nothing outside was found, but "nothing slowed it" would not be true.
    assert finding.kind == HEALTHY
    assert (
        finding.summary == "Nothing outside the model slowed this reply: decode ran at 1% of this machine's ceilings."
    )
    near = diagnose(made_trace([10.0] * 30), shape.to_dict(), dram(shape.step_weight_bytes() / 0.010 / 0.65))[0]
    assert near.summary.startswith("Nothing slowed this reply: decode ran at 65% of this machine's ceilings")


def test_a_broken_prompt_cache_names_where_and_how_many_tokens():
    cache = PromptCacheReport(1240, 60, "your message 2 edited at token 60", break_at=60, status="broke")
    findings = diagnose(made_trace([10.0] * 10, ttft_ms=2100, prompt_tokens=1240, cache=cache))
    assert findings[0].kind == "prompt_cache"
    assert findings[0].summary == (
        "TTFT 2.1 s: 1,180 of 1,240 prompt tokens were prefilled, because your message 2 edited at token 60."
    )
    assert findings[0].figure == 1180


def test_a_reused_history_or_a_first_turn_is_no_cache_finding():
    reused = PromptCacheReport(400, 390, "the chat's history was reused from the cache", status="hit")
    first = PromptCacheReport(30, 0, "nothing cached yet: the first reply since the model loaded", status="empty")
    assert "prompt_cache" not in kinds(made_trace([10.0] * 10, cache=reused))
    assert "prompt_cache" not in kinds(made_trace([10.0] * 10, cache=first))


def test_a_cache_loss_that_cost_little_of_the_reply_is_not_blamed():
    cache = PromptCacheReport(100, 90, "your message 2 edited at token 90", break_at=90, status="broke")
    assert "prompt_cache" not in kinds(made_trace([10.0] * 200, ttft_ms=20, prompt_tokens=100, cache=cache))


def test_a_long_prompt_that_took_most_of_the_reply():
    findings = diagnose(made_trace([10.0] * 10, ttft_ms=3000, prompt_tokens=3000))
    assert findings[0].kind == "prefill" and "3,000 tokens prefilled in 3.0 s" in findings[0].summary


def test_other_programs_load_is_named_with_the_share_they_took():
    cpu = CpuUsage(0.39 * 2 * 0.35, 0.35, 2, 0, 0, 0, [], [], [], 0)
    findings = diagnose(made_trace([10.0] * 30, cpu=cpu))
    assert findings[0].kind == "contention"
    assert findings[0].summary == "Other programs took 61% of the CPU during this reply: its TPOT is not the model's."


def test_other_programs_are_measured_on_the_machine_not_guessed_from_the_engines_share():
    # The engine got 40% of its cores while other programs used 55% of the machine: they took it.
    busy = CpuUsage(0.4 * 2 * 0.35, 0.35, 2, 0, 0, 0, [], [], [], 0, 0.55 * 2 * 0.35, 2)
    finding = diagnose(made_trace([10.0] * 30, cpu=busy))[0]
    assert finding.kind == "contention" and finding.figure == pytest.approx(0.55)
    assert "other programs used 55% of the machine's 2 cores" in finding.evidence
    # The same low share with the machine otherwise idle: the engine was waiting (on the disk), not crowded out.
    waiting = CpuUsage(0.4 * 2 * 0.35, 0.35, 2, 40, 0, 0, [40] + [0] * 30, [1] * 31, [], 0, 0.01, 2)
    assert "contention" not in kinds(made_trace([10.0] * 30, cpu=waiting))


def test_a_prompt_read_while_the_weights_came_from_disk_is_the_disks_finding_not_the_prompts():
    faults = [200] + [0] * 10
    cold = CpuUsage(2.0, 3.2, 2, 200, 0, 0, faults, [1] * 11, [], 1_000_000_000, 0.0, 2)
    found = kinds(made_trace([10.0] * 10, ttft_ms=3000, prompt_tokens=36, cpu=cold))
    assert "page_faults" in found and "prefill" not in found


def test_weights_read_from_disk_are_named_with_the_faults_and_bytes():
    tokens = 31
    faults = [40] + [2] * 30
    cpu = CpuUsage(0.6, 0.35, 2, 100, 0, 0, faults, [1] * tokens, [], 98_000_000)
    finding = diagnose(made_trace([10.0] * 30, cpu=cpu))[0]
    assert finding.kind == "page_faults"
    assert (
        "98 MB read from disk, 100 major page faults (40 before the first token, 60 during decode)" in finding.summary
    )


def test_weights_read_from_disk_say_whether_the_model_fit_in_free_memory():
    faults = [40] + [2] * 30
    tight = CpuUsage(0.6, 0.35, 2, 100, 0, 0, faults, [1] * 31, [], 98_000_000, 0.0, 2, 2_000_000_000)
    shape = {**tiny_shape().to_dict(), "weight_bytes": 3_900_000_000}
    finding = next(f for f in diagnose(made_trace([10.0] * 30, cpu=tight), shape) if f.kind == "page_faults")
    assert finding.cause == "the model did not fit in free memory: 2.0 GB available for 3.9 GB of weights"
    roomy = CpuUsage(0.6, 0.35, 2, 100, 0, 0, faults, [1] * 31, [], 98_000_000, 0.0, 2, 20_000_000_000)
    finding = next(f for f in diagnose(made_trace([10.0] * 30, cpu=roomy), shape) if f.kind == "page_faults")
    assert finding.cause.startswith("the model's file was not all in the page cache (read cold, or pushed out)")


def test_a_few_stray_faults_are_not_the_disk():
    cpu = CpuUsage(0.6, 0.35, 2, 8, 0, 0, [8] + [0] * 30, [1] * 31, [], 1_000_000)
    assert "page_faults" not in kinds(made_trace([10.0] * 30, cpu=cpu))


def test_stalled_tokens_are_explained_by_what_the_counters_saw_at_each():
    intervals = [10.0] * 30
    intervals[9], intervals[19], intervals[24] = 80.0, 90.0, 70.0  # tokens 10, 20 and 25
    preemptions = [1] * 31
    preemptions[10] = 9
    faults = [0] * 31
    faults[20] = 3
    start = int(50 * MS + sum(intervals[:24]) * MS)
    cpu = CpuUsage(0.6, 0.35, 2, 3, 0, 0, faults, preemptions, [(start + 5 * MS, 60 * MS)], 0)
    finding = diagnose(made_trace(intervals, cpu=cpu))[0]
    assert finding.kind == "stalls"
    assert finding.summary.startswith("3 tokens took over 5x the median interval (at ")
    assert "at 1 the engine's threads were descheduled" in finding.cause
    assert "at 1 weights were read from disk" in finding.cause
    assert "at 1 Python's garbage collector paused the engine (60 ms)" in finding.cause
    assert "show nothing" not in finding.cause


def test_a_stall_no_counter_explains_is_said_so_not_guessed():
    intervals = [10.0] * 30
    intervals[5] = 100.0
    finding = diagnose(made_trace(intervals))[0]
    assert finding.kind == "stalls" and finding.cause == "the engine's counters show no cause for it"
    assert "descheduled" not in finding.cause and "garbage" not in finding.cause


def test_accepted_drafts_near_zero_intervals_make_no_stall():
    # Speculation: bursts of drafts at ~0 ms, the model's own tokens at 10-25 ms; none is a stall.
    intervals = [0.01, 0.01, 0.01, 25.0] * 8
    drafted = {index for index in range(1, 33) if index % 4 != 0}
    trace = made_trace(intervals, drafted=drafted)
    trace.record(SpeculationReport("ngram", 32, 24, 8))
    assert "stalls" not in kinds(trace)


def test_a_speculating_replys_bursts_are_not_stalls_its_passes_hold_its_steps():
    # Seen on the real model: a pass's time lands on the first token it gives; the rest of its burst, the model's own
    # token after its drafts included, comes microseconds later. Passes take 25 ms, ordinary steps 10 ms: most of the
    # model's own tokens end a burst, so their median interval is microseconds, and without the passes' marks every
    # pass that kept nothing and every ordinary step looked like a stall.
    intervals, drafted, marks = [], set(), []
    token = 1
    for kind in ["burst"] * 8 + ["rejected", "step", "rejected", "step"]:
        if kind == "step":
            intervals.append(10.0)
            token += 1
        elif kind == "rejected":
            marks.append((token, 4, 4))  # nothing kept: the model's own token carries the pass
            intervals.append(25.0)
            token += 1
        else:
            marks.append((token, 4, 1))  # tokens token..token+2 kept drafts, token+3 the model's own
            intervals += [25.0, 0.01, 0.01, 0.01]
            drafted |= {token, token + 1, token + 2}
            token += 4
    trace = made_trace(intervals, drafted=drafted)
    trace.record(SpeculationReport("ngram", 40, 24, 10, verify_s=0.25, steps=2, step_s=0.02, pass_marks=marks))
    assert "stalls" not in kinds(trace)
    trace.speculation = SpeculationReport("ngram", 40, 24, 10)  # no marks (an older chat): steps cannot be told
    assert "stalls" not in kinds(trace)


def test_speculation_that_cost_more_than_it_saved():
    report = SpeculationReport("ngram", 400, 48, 100, verify_s=2.0, steps=50, step_s=0.5)
    trace = made_trace([10.0] * 30)
    trace.record(report)
    finding = diagnose(trace)[0]
    assert finding.kind == "speculation"
    assert finding.summary.startswith("Drafts were accepted 12% of the time; speculation cost more than it saved")


def test_speculation_that_paid_is_no_finding():
    report = SpeculationReport("ngram", 100, 90, 25, verify_s=0.5, steps=20, step_s=0.2)
    trace = made_trace([10.0] * 30)
    trace.record(report)
    assert "speculation" not in kinds(trace)


def test_a_servers_queue_and_the_network_are_set_apart_from_its_prefill():
    server = ServerReport("vLLM", 40, 31, 5 * MS, 31, {"prompt_ms": 300.0, "queue_ms": 800.0})
    trace = made_trace([10.0] * 30, ttft_ms=1200, server=server)
    trace.cpu = None
    finding = diagnose(trace)[0]
    assert finding.kind == "server_wait"
    assert finding.summary == (
        "Of the 1.2 s TTFT, the server reports 300 ms prefill and 800 ms in its queue; 100 ms was the network and "
        "templating."
    )


def test_a_server_whose_prefill_was_the_wait_gets_the_prompts_finding_from_its_own_account():
    """A remote reply of 1.5 s, 1.1 s of it the server's prefill, was said to have nothing slowing it."""
    server = ServerReport("llama.cpp", 40, 31, 5 * MS, 31, {"prompt_ms": 1100.0})
    trace = made_trace([10.0] * 30, ttft_ms=1200, server=server)
    trace.cpu = None
    findings = diagnose(trace)
    assert [finding.kind for finding in findings] == ["prefill"]
    assert "40 tokens prefilled in 1.1 s" in findings[0].summary and "73% of its 1.5 s" in findings[0].summary


def test_a_server_that_gives_no_prompt_time_or_a_short_one_gets_no_prompt_finding():
    """Its TTFT holds its queue and the network too: only the server's own account of the pass is the prompt's."""
    quick = made_trace(
        [10.0] * 30, ttft_ms=1200, server=ServerReport("llama.cpp", 40, 31, 5 * MS, 31, {"prompt_ms": 90.0})
    )
    silent = made_trace([10.0] * 30, ttft_ms=1200, server=ServerReport("vLLM", 40, 31, 5 * MS, 31, {}))
    for trace in (quick, silent):
        trace.cpu = None
        assert "prefill" not in kinds(trace)


def dram(bytes_per_s: float):
    """Ceilings with DRAM's read bandwidth alone, as a cached measurement holds it."""
    ceiling = Ceiling("dram", "DRAM", "byte/s", bytes_per_s, bytes_per_s, 5, "a read loop")
    return Ceilings({"dram": ceiling}, "cpu", 2, 32 * 1024 * 1024, "2026-12-04", 0.0, False)


def tiny_shape(weight_bytes: int | None = None) -> ArithmeticShape:
    shape = ArithmeticShape(
        layers=32, width=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008, vocab=32000, weight_bytes=0
    )
    q8 = step_weight_bytes(shape, "Q8_0")
    return ArithmeticShape(**{**shape.to_dict(), "weight_bytes": int(weight_bytes or q8), "windows": ()})


def test_a_memory_bound_decode_names_a_smaller_file_from_the_quant_table():
    shape = tiny_shape()  # a 7B's shape in Q8_0: 7.2 GB a token
    step = shape.step_weight_bytes()
    tpot_s = step / 25e9  # 25 GB/s of a 29.6 GB/s DRAM
    ceilings = dram(29.6e9)
    trace = made_trace([tpot_s * 1000] * 30)
    finding = diagnose(trace, shape.to_dict(), ceilings)[0]
    assert finding.kind == "memory_bound"
    read = reply_decode_counts(shape, trace.prompt_tokens, trace.output_tokens).bytes  # the weights and the KV cache
    expected = read / (read - step + step_weight_bytes(shape, "Q4_K_M"))
    assert 1.6 < expected < 1.9  # 8.5 bits a weight against Q4_K_M's mix of 4.5 and 6.56
    assert f"Q4_K_M of this model would be about {expected:.1f}x faster here" in finding.summary


def test_a_decode_past_the_measured_ceiling_blames_the_measurement_not_the_file():
    shape = tiny_shape()
    ceilings = dram(19.8e9)  # measured on a slow day: this decode reads 25 GB/s
    trace = made_trace([shape.step_weight_bytes() / 25e9 * 1000] * 30)
    finding = diagnose(trace, shape.to_dict(), ceilings)[0]
    assert finding.kind == "memory_bound"
    assert "past the ceiling measured on 2026-12-04, so that measurement was low" in finding.evidence


def test_a_memory_bound_decode_of_an_already_small_file_is_healthy():
    shape = tiny_shape(step_weight_bytes(tiny_shape(), "Q4_K_M"))
    ceilings = dram(29.6e9)
    trace = made_trace([shape.step_weight_bytes() / 25e9 * 1000] * 30)
    assert kinds(trace, arithmetic=shape.to_dict(), ceilings=ceilings) == [HEALTHY]


def test_findings_are_ranked_by_the_time_they_took():
    cache = PromptCacheReport(1240, 60, "your message 2 edited at token 60", break_at=60, status="broke")
    cpu = CpuUsage(0.2, 0.4, 2, 0, 0, 0, [], [], [], 0)  # 75% taken over 0.3 s of decode: about 0.23 s
    trace = made_trace([10.0] * 30, ttft_ms=2100, prompt_tokens=1240, cache=cache, cpu=cpu)
    assert kinds(trace) == ["prompt_cache", "contention"]


def test_a_reply_with_no_token_has_nothing_to_explain():
    trace = ReplyTrace(request_start_ns=0, prompt_tokens=3)
    trace.record(FinishedEvent(StopReason.STOPPED, 0, MS))
    assert diagnose(trace) == []


def test_decode_that_waited_for_packing_left_by_the_load_is_its_own_finding_not_a_stall():
    intervals = [10.0] * 30
    intervals[0] = 900.0  # token 1: the first decode step, which packed the rest of the weights first
    cpu = replace(quiet_cpu(31, 1.2), packing_pauses=[(51 * MS, 880 * MS)])
    findings = diagnose(made_trace(intervals, cpu=cpu))
    assert [finding.kind for finding in findings] == ["packing"]
    (finding,) = findings
    assert finding.summary == "Decode waited 880 ms while the engine packed the weights its load had left for later."
    assert finding.evidence == "880 ms of packing inside the interval before token 1"
    assert finding.cost_s == pytest.approx(0.88) and "once after a load" in finding.advice


def test_a_short_packing_is_not_said_and_packing_outside_a_slow_tokens_interval_explains_nothing():
    intervals = [10.0] * 30
    intervals[0] = 12.0
    cpu = replace(quiet_cpu(31, 0.4), packing_pauses=[(51 * MS, 2 * MS)])  # a few matrices: nothing anyone sees
    assert kinds(made_trace(intervals, cpu=cpu)) == [HEALTHY]
    intervals[0], intervals[9] = 10.0, 100.0
    cpu = replace(quiet_cpu(31, 0.4), packing_pauses=[(20 * MS, 25 * MS)])  # before the first token: the prompt's pass
    finding = diagnose(made_trace(intervals, cpu=cpu))[0]
    assert finding.kind == "stalls" and finding.cause == "the engine's counters show no cause for it"


def test_a_reply_that_waited_for_the_engine_names_the_wait():
    """Seen in a black-box pass: a message sent while a race still ran waited 3.4 s of a 3.5 s TTFT, and the
    diagnosis said nothing outside the model had slowed it."""
    from core.timing.events import PromptReady

    trace = made_trace([10.0] * 20, ttft_ms=3500.0)
    trace.record(PromptReady(40, None, "lean", 2 * MS))
    trace.record(ComputeStarted(3400 * MS))
    (finding,) = diagnose(trace)
    assert finding.kind == "queue" and finding.cost_s == pytest.approx(3.398)
    assert finding.summary == "This reply waited 3.4 s for the engine before its prompt was read: 97% of its TTFT."
    quick = made_trace([10.0] * 20)  # a TTFT of 50 ms, 28 ms of it waiting: under 0.1 s, no one notices it
    quick.record(PromptReady(40, None, "lean", 2 * MS))
    quick.record(ComputeStarted(30 * MS))
    assert kinds(quick) == [HEALTHY]
