"""Verdicts, configuration checks and the bandwidth helpers on hand-made numbers: no model needed."""

import pytest

import core.settings
from core.errors import InvalidSettingsError
from core.lab.bandwidth import ceiling_row, last_level_cache_bytes
from core.lab.config import LabConfig, parse_int_list
from core.lab.precision_sweep import agreement, precision_order
from core.lab.results import LabResults, LabResultsError, results_from_json
from core.lab.verdicts import judge


def prompt_row(tokens, ttft, tpot, n=50, residual_pct=0.1, steady=0.5):
    return {
        "prompt_tokens": tokens,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "new_tokens": n,
        "residual_pct": residual_pct,
        "steady_residual_pct": steady,
    }


def results(**sweeps) -> LabResults:
    return LabResults(config={}, **sweeps)


def test_claim_one_reads_like_the_issue_example():
    verdict = judge(results(prompt=[prompt_row(15, 0.05, 0.020), prompt_row(1505, 1.4, 0.022)]))[0]
    assert verdict["holds"] is True
    assert verdict["sentence"].startswith(
        "Long prompts slow the first token, not the rest: TTFT grew 28× from 15 to 1,505 prompt tokens"
    )
    assert "TPOT changed 1.1×" in verdict["sentence"] and verdict["sentence"].endswith("Holds.")


def test_claim_one_fails_when_decode_slows_too():
    verdict = judge(results(prompt=[prompt_row(15, 0.05, 0.020), prompt_row(1505, 1.4, 0.040)]))[0]
    assert verdict["holds"] is False
    assert verdict["sentence"].endswith(f"Does not hold: the claim asks that {verdict['criterion']}.")


def test_a_figure_next_to_its_threshold_is_shown_on_the_side_it_is():
    """TTFT grew 1.956×, against the 2× the claim needs: it read "grew 2.0×" beside "Does not hold"."""
    verdict = judge(results(prompt=[prompt_row(15, 0.1077, 0.020), prompt_row(55, 0.2107, 0.021)]))[0]
    assert verdict["holds"] is False and "TTFT grew 1.96× from 15 to 55" in verdict["sentence"]
    assert "TTFT grows at least 2× from the shortest to the longest prompt" in verdict["sentence"]


def test_claim_two_compares_speedup_with_byte_savings():
    precision = [
        {"dtype": "float32", "weight_bytes": 400, "decode_tok_s": 10.0},
        {"dtype": "bfloat16", "weight_bytes": 200, "decode_tok_s": 19.0},
        {"dtype": "int4", "error": "no kernel"},
    ]
    bandwidth = [ceiling_row("float32", 400, 10.0, 8000.0)]
    verdict = judge(results(precision=precision, bandwidth=bandwidth))[1]
    assert verdict["holds"] is True
    assert "bfloat16 has 2.0× fewer weight bytes and decodes 1.9× as fast" in verdict["evidence"]
    assert "50% (float32)" in verdict["evidence"] and "int4 could not be measured" in verdict["evidence"]
    precision[1]["decode_tok_s"] = 11.0
    assert judge(results(precision=precision))[1]["holds"] is False


def test_claim_three_needs_step_time_to_stay_flat():
    def row(batch, step):
        return {"batch_size": batch, "step_time_s": step, "aggregate_tok_s": batch / step, "per_seq_tok_s": 1 / step}

    cheap = judge(results(batch=[row(1, 0.05), row(8, 0.055), row(32, 0.07)]))[2]
    assert cheap["holds"] is True and "rose 23×" in cheap["evidence"]
    costly = judge(results(batch=[row(1, 0.05), row(8, 0.06), row(32, 0.5)]))[2]
    assert costly["holds"] is False and "nearly free up to batch 8" in costly["evidence"]


def test_claim_four_is_judged_on_the_steady_residual():
    assert judge(results(prompt=[prompt_row(15, 0.05, 0.02)]))[3]["holds"] is True
    off = judge(results(prompt=[prompt_row(15, 0.05, 0.02, steady=-7.0)]))[3]
    # The evidence names the bound it missed: "within 7.0%" beside "Does not hold" read as a contradiction.
    assert off["holds"] is False and "off E2E by at most 7.0% at every prompt length, against the 5%" in off["evidence"]
    noisy_medians = judge(results(prompt=[prompt_row(15, 0.05, 0.02, residual_pct=12.0)]))[3]
    assert noisy_medians["holds"] is True and "within 12.0% (worst at 15 tokens)" in noisy_medians["evidence"]


def test_claims_without_data_are_not_tested():
    verdicts = judge(results())
    assert [v["holds"] for v in verdicts] == [None] * 6  # the four claims, the history and the roofline
    assert all(v["sentence"].endswith("Not tested.") and v["evidence"].startswith("needs") for v in verdicts)


def test_dtypes_default_to_the_loaders_choices_at_run_time(monkeypatch):
    monkeypatch.setattr(core.settings, "DTYPE_CHOICES", ("native", "float32", "bfloat16", "int3"))
    assert LabConfig().resolved_dtypes() == ("native", "float32", "bfloat16", "int3")
    assert LabConfig().to_dict()["dtypes"] == ["native", "float32", "bfloat16", "int3"]


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"sweeps": ("prompt", "speed")}, "unknown sweep 'speed'"),
        ({"sweeps": ()}, "unknown sweep"),
        ({"prompt_words": (10, 0)}, "prompt words must be a whole number"),
        ({"new_tokens": 1}, "new tokens must be a whole number from 2"),
        ({"repeats": 0}, "repeats"),
        ({"batch_sizes": (1, 0)}, "batch sizes"),
        ({"batch_sizes": (2, 2)}, "must not repeat"),
        ({"dtypes": ("float8",)}, "dtype must be one of: native, float32, bfloat16, int8, int4; got 'float8'"),
        ({"dtypes": ()}, "at least one dtype"),
    ],
)
def test_bad_configs_are_refused_with_a_message(changes, words):
    with pytest.raises(InvalidSettingsError, match=words):
        LabConfig(**changes)


def test_lists_parse_or_say_which_part_is_wrong():
    assert parse_int_list(" 10, 100 ,500", "prompt words") == (10, 100, 500)
    for text, words in (("abc", "'abc' is not a whole number"), ("1,,2", "comma-separated"), ("", "comma")):
        with pytest.raises(InvalidSettingsError, match=words):
            parse_int_list(text, "prompt words")


def test_agreement_counts_positions_and_the_matching_prefix():
    reference = list(range(40))
    assert agreement(reference, reference) == {
        "compared_tokens": 32,
        "token_agreement": 1.0,
        "matching_prefix_tokens": 32,
    }
    changed = reference[:5] + [99] + reference[6:]
    assert agreement(changed, reference)["token_agreement"] == 31 / 32
    assert agreement(changed, reference)["matching_prefix_tokens"] == 5
    assert agreement(reference, None)["token_agreement"] is None
    assert precision_order(["int8", "bfloat16", "float32"]) == ["float32", "int8", "bfloat16"]


def test_last_level_cache_is_the_largest_reported(tmp_path):
    for index, size in enumerate(("48K", "2048K", "32768K")):
        (tmp_path / f"index{index}").mkdir()
        (tmp_path / f"index{index}" / "size").write_text(size + "\n")
    assert last_level_cache_bytes(tmp_path) == 32 * 1024 * 1024
    assert last_level_cache_bytes(tmp_path / "missing") is None


def test_ceiling_row_divides_bandwidth_by_bytes():
    row = ceiling_row("int8", 250_000_000, 30.0, 25e9)
    assert row["ceiling_tok_s"] == 100.0 and row["fraction_of_ceiling"] == 0.3


def test_loading_something_else_says_what_it_is():
    with pytest.raises(LabResultsError, match="not a Latency Lab result"):
        results_from_json('{"format": "latencylab-trace/1"}')
    with pytest.raises(LabResultsError, match="not valid JSON"):
        results_from_json("{oops")
    with pytest.raises(LabResultsError, match="'prompt' entry must be a list"):
        results_from_json('{"format": "latencylab-lab/1", "prompt": 3}')


def test_a_busy_machine_is_called_out():
    from core.lab.machine import contention_warning

    assert contention_warning({"cpu_share": 0.95, "torch_threads": 2}) is None
    assert contention_warning({}) is None
    warning = contention_warning(
        {"cpu_share": 0.56, "torch_threads": 2, "load_average_start": 0.5, "load_average_end": 3.40234375}
    )
    assert warning.startswith("Warning: this run got only 56% of 2 cores' time") and "3.40 at the end" in warning


def history_rows(on_ms, off_ms, prompts=(49, 109, 229, 465)):
    return [
        {
            "turn": turn,
            "prompt_tokens": tokens,
            "cached_tokens": 0 if turn == 1 else prompts[turn - 2] - 5,
            "prefilled_tokens": tokens if turn == 1 else tokens - prompts[turn - 2] + 5,
            "ttft_on_s": on / 1000,
            "ttft_off_s": off / 1000,
        }
        for turn, (tokens, on, off) in enumerate(zip(prompts, on_ms, off_ms), start=1)
    ]


def test_the_history_claim_holds_when_ttft_follows_the_new_tokens():
    verdict = judge(results(history=history_rows((203, 150, 170, 220), (203, 436, 977, 1957))))[4]
    assert verdict["key"] == "history" and verdict["holds"] is True
    assert verdict["sentence"].startswith(
        "With the prompt cache, TTFT follows the new tokens, not the history: over "
        "4 turns the prompt grew from 49 to 465 tokens (9.5×); with the prompt cache "
        "TTFT went from 203 ms to 220 ms (1.1×)"
    )
    assert "without it, from 203 ms to 1,957 ms (9.6×)" in verdict["sentence"]


def test_the_history_claim_fails_when_ttft_grows_with_the_history_anyway():
    verdict = judge(results(history=history_rows((203, 436, 977, 1957), (203, 436, 977, 1957))))[4]
    assert verdict["holds"] is False and "Does not hold: the claim asks that over a chat whose" in verdict["sentence"]


def test_the_history_claim_is_not_tested_without_growth_or_rows():
    assert judge(results())[4]["holds"] is None
    flat = judge(results(history=history_rows((100, 100), (100, 110), prompts=(100, 120))))[4]
    assert flat["holds"] is None and "did not grow enough" in flat["evidence"]


def size_row(name, gigabytes, tok_s):
    return {
        "model": name,
        "weight_bytes": int(gigabytes * 1e9),
        "decode_tok_s": tok_s,
        "read_bytes_s": gigabytes * 1e9 * tok_s,
    }


@pytest.mark.parametrize(
    ("small_tok_s", "holds"),
    [(36.0, True), (102.0, False)],  # 1B: 6.2x the bytes and 5.5x slower; 135M: 43x the bytes, 15x slower
    ids=["in-proportion", "small-model-overhead-bound"],
)
def test_the_size_claim_compares_the_smallest_and_the_largest_model(small_tok_s, holds):
    rows = [size_row("7b.gguf", 4.18, 6.6), size_row("1b.gguf", 0.67, small_tok_s)]
    if not holds:
        rows[1] = size_row("135m.gguf", 0.096, small_tok_s)  # 43x the bytes, only 15x slower
    sweep = LabResults(config={"sweeps": ["size"]}, size=rows, bandwidth_measurement={"bytes_per_s": 31.8e9})
    (verdict,) = [v for v in judge(sweep) if v["key"] == "size"]
    assert verdict["holds"] is holds
    evidence = verdict["evidence"]
    assert evidence.index("7b.gguf") > evidence.index(rows[1]["model"])  # smallest first
    assert "of the memory's 31.8 GB/s" in evidence
    assert ("less than half the rate the largest did" in evidence) is (not holds)


def test_the_size_claim_waits_for_two_sizes():
    sweep = LabResults(config={"sweeps": ["size"]}, size=[size_row("a.gguf", 1.0, 10.0)])
    (verdict,) = [v for v in judge(sweep) if v["key"] == "size"]
    assert verdict["holds"] is None and "needs the size sweep" in verdict["evidence"]
    assert not [v for v in judge(LabResults(config={})) if v["key"] == "size"]  # not asked for: no verdict
