"""The roofline's verdict and the batch sweep's reason, on hand-made numbers: the wording follows the numbers."""

from __future__ import annotations

import pytest

from core.lab.results import LabResults
from core.lab.roofline_rows import batch_row_fields, prompt_row_fields
from core.lab.verdicts import judge
from core.roofline.placement import decode_sentence, place_reply, prefill_sentence
from tests.support.roofline_facts import ARITHMETIC, MIB, ceilings_document


def ceilings(llc_bytes=300 * MIB) -> dict:
    """This Xeon's, as the issue measured them: DRAM 31 GB/s, the last-level cache 55, bfloat16 GEMMs 2.1 TFLOP/s."""
    return ceilings_document(
        {"gemm_float32": 265e9, "gemm_bfloat16": 2.1e12, "dram": 31e9, "llc": 55e9}, llc_bytes=llc_bytes
    )


def prompt_row(tokens, ttft, tpot, n=50):
    row = {
        "prompt_tokens": tokens,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "new_tokens": n,
        "residual_pct": 0.1,
        "steady_residual_pct": 0.1,
    }
    return {**row, **prompt_row_fields(row, ARITHMETIC)}


def batch_row(batch, step):
    row = {
        "batch_size": batch,
        "step_time_s": step,
        "aggregate_tok_s": batch / step,
        "per_seq_tok_s": 1 / step,
        "prompt_tokens": 15,
        "new_tokens": 50,
    }
    return {**row, **batch_row_fields(row, ARITHMETIC)}


def lab(prompt=(), batch=(), llc_bytes=300 * MIB) -> LabResults:
    return LabResults(
        config={},
        model={"arithmetic": ARITHMETIC},
        ceilings=ceilings(llc_bytes),
        prompt=list(prompt),
        batch=list(batch),
    )


def roofline(results: LabResults) -> dict:
    return next(verdict for verdict in judge(results) if verdict["key"] == "roofline")


def batch(results: LabResults) -> dict:
    return next(verdict for verdict in judge(results) if verdict["key"] == "batch")


def test_decode_here_is_bound_by_the_cores_arithmetic_not_memory():
    # The figures: 135 tok/s reads about 13 GB/s, 42% of DRAM, a quarter of the cache it really reads.
    verdict = roofline(lab([prompt_row(15, 0.05, 1 / 135), prompt_row(1240, 0.5, 1 / 120)]))
    assert verdict["holds"] is False
    evidence = verdict["evidence"]
    assert "prefill of 1,240 tokens ran at 633 GFLOP/s, 30% of the bfloat16 GEMM ceiling" in evidence
    assert "decode read 13.4 GB/s at 135 tok/s: 43% of DRAM (31.0 GB/s) and 24% of the last-level cache" in evidence
    assert "which holds the 98 MB of weights" in evidence
    assert "bound by the cores' block arithmetic" in evidence and "bound by memory" not in evidence


def test_decode_that_reads_near_the_ceiling_is_bound_by_memory():
    verdict = roofline(lab([prompt_row(15, 0.05, 98e6 / 50e9), prompt_row(1240, 0.5, 0.01)]))
    assert verdict["holds"] is True and "decode is bound by memory, as the chapter says" in verdict["evidence"]
    assert verdict["sentence"].endswith("Holds.")


def test_weights_beyond_the_cache_are_judged_against_dram():
    verdict = roofline(lab([prompt_row(15, 0.05, 98e6 / 28e9), prompt_row(1240, 0.5, 0.01)], llc_bytes=32 * MIB))
    assert "91% of DRAM" in verdict["evidence"] and "last-level cache" not in verdict["evidence"]
    assert verdict["holds"] is True


def test_a_prompt_too_short_for_the_ridge_is_said_to_be_bound_by_memory():
    verdict = roofline(lab([prompt_row(2, 0.05, 0.0074), prompt_row(4, 0.06, 0.0074)]))
    assert "left of the ridge, so memory, not arithmetic, bounds it" in verdict["evidence"]
    assert verdict["holds"] is False


def test_without_ceilings_the_roofline_is_not_tested():
    results = LabResults(config={}, model={"arithmetic": ARITHMETIC}, prompt=[prompt_row(15, 0.05, 0.0074)])
    assert roofline(results)["holds"] is None


def test_batching_costs_arithmetic_here_and_the_reason_says_how_many_cores_would_free_it():
    # Batch 8 took 42 ms a step: 4.9 ms more per sequence, against 1.8 ms to read the weights from the cache.
    verdict = batch(lab(batch=[batch_row(1, 0.0074), batch_row(8, 0.042)]))
    assert verdict["holds"] is False
    assert (
        "each extra sequence added 4.9 ms of arithmetic to a step, while reading the 98 MB of weights from the "
        "last-level cache takes 1.8 ms at its ceiling"
    ) in verdict["evidence"]
    assert "which here it never does" in verdict["evidence"]
    assert "batching up to 8 would be nearly free with about 26 cores sharing this DRAM (here 2)" in verdict["evidence"]


def test_batching_that_hides_under_the_weight_read_is_free_up_to_where_the_numbers_say():
    verdict = batch(lab(batch=[batch_row(1, 0.0074), batch_row(8, 0.0090)]))
    assert verdict["holds"] is True and "here up to about batch 7" in verdict["evidence"]


def test_a_replys_placement_in_words():
    placement = place_reply(ARITHMETIC, ceilings(), 1240, 64, 0.5, 1 / 120)
    assert placement["prefill"]["share_of_ceiling"] == pytest.approx(316.5e9 / 0.5 / 2.1e12, rel=1e-3)
    assert prefill_sentence(placement).startswith("This reply's prefill: 316.5 GFLOP for 1,240 tokens in 500 ms")
    assert "30% of this machine's bfloat16 GEMM ceiling" in prefill_sentence(placement)
    sentence = decode_sentence(placement)
    assert "of DRAM's read bandwidth" in sentence and "The weights fit in the last-level cache" in sentence
    bare = place_reply(ARITHMETIC, None, 1240, 64, 0.5, 1 / 120)
    assert bare["prefill"]["share_of_ceiling"] is None and "no ceilings measured" in prefill_sentence(bare)
    assert place_reply(None, ceilings(), 10, 2, 0.1, 0.01) is None


def test_a_reply_faster_than_its_ceiling_says_the_ceiling_was_measured_low():
    # DRAM measured at 19.8 GB/s on a slow day; a 7B step then read 4.18 GB in 110 ms (38 GB/s).
    document = ceilings_document({"gemm_bfloat16": 2.1e12, "dram": 19.8e9, "llc": 90e9}, llc_bytes=32 * MIB)
    document["measured_at"] = "2026-12-07T04:17:17+00:00"
    seven_b = {**ARITHMETIC, "weight_bytes": 4_180_000_000}
    sentence = decode_sentence(place_reply(seven_b, document, 50, 32, 2.0, 0.110))
    assert "past the ceiling measured on 2026-12-07, so that measurement was low" in sentence
    assert "measures it again" in sentence
    within = decode_sentence(place_reply(seven_b, document, 50, 32, 2.0, 0.250))
    assert "past the ceiling" not in within
