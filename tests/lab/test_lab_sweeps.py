"""A short lab run on the real embedded model: the JSON's structure and its internal consistency."""

import csv
import io
import json
import threading

import pytest

import core.lab.batch_sweep
import core.lab.measure
from core.generation.local_reply import LocalReply
from core.lab.bandwidth import last_level_cache_bytes
from core.lab.config import LabConfig
from core.lab.measure import StepStamper
from core.lab.results import results_from_json, results_to_csv, results_to_json
from core.lab.runner import LabObserver, run_lab
from core.timing.events import TokenEvent

pytestmark = pytest.mark.model

SHORT, LONG = 10, 400
NEW_TOKENS = 6
REPEATS = 3  # an odd count, so each median is one real run and one disturbed run cannot move it


@pytest.fixture(scope="module")
def lab_run(embedded_model):
    """One short run of every sweep, with what the observer saw while it ran."""
    rows_seen, progress_seen = [], []
    config = LabConfig(
        prompt_words=(SHORT, LONG),
        new_tokens=NEW_TOKENS,
        repeats=REPEATS,
        dtypes=("float32", "bfloat16"),
        batch_sizes=(1, 2),
        history_turns=3,
    )
    observer = LabObserver(
        progress=lambda fraction, message: progress_seen.append(fraction),
        row_measured=lambda sweep, row: rows_seen.append((sweep, row)),
    )
    results = run_lab(config, loaded=embedded_model, observer=observer)
    return results, json.loads(results_to_json(results)), rows_seen, progress_seen


def test_json_has_one_list_per_sweep_and_six_verdicts(lab_run):
    results, document, rows_seen, progress_seen = lab_run
    assert document["format"] == "latencylab-lab/1"
    assert not document["cancelled"] and document["error"] is None
    sweeps = ("prompt", "precision", "batch", "bandwidth", "history")
    for sweep in sweeps:
        assert isinstance(document[sweep], list) and document[sweep], sweep
    assert [sweep for sweep, _ in rows_seen].count("prompt") == 2
    measured = [(sweep, row) for sweep, row in rows_seen if sweep != "ceilings"]
    assert len(measured) == sum(len(document[sweep]) for sweep in sweeps)
    # The roofline's roof comes first: the ceilings, then again with the model's shape once it is loaded.
    roofs = [row for sweep, row in rows_seen if sweep == "ceilings"]
    assert rows_seen[0][0] == "ceilings" and roofs[-1]["arithmetic"]["layers"] == 30
    assert roofs[-1]["ceilings"] == document["ceilings"]
    assert progress_seen == sorted(progress_seen) and progress_seen[-1] == 1.0
    verdicts = document["verdicts"]
    assert [v["key"] for v in verdicts] == ["prompt", "precision", "batch", "total", "history", "roofline"]
    for verdict in verdicts:
        assert {"claim", "holds", "evidence"} <= set(verdict)
        assert isinstance(verdict["holds"], bool)  # every sweep ran, so every claim was tested
        said = "Holds." if verdict["holds"] else f"Does not hold: the claim asks that {verdict['criterion']}."
        assert verdict["sentence"].endswith(said)
    assert document["config"]["dtypes"] == ["float32", "bfloat16"]
    assert document["model"]["dtype"] == "float32" and document["machine"]["logical_cores"] >= 1
    assert document["machine"]["cpu_share"] > 0 and document["machine"]["cpu_s"] > 0


def test_prompt_rows_rise_with_length_and_add_up(lab_run):
    _, document, _, _ = lab_run
    short, long = document["prompt"]
    assert short["prompt_words"] == SHORT and long["prompt_words"] == LONG
    assert long["prompt_tokens"] > short["prompt_tokens"] >= SHORT
    assert long["ttft_s"] > short["ttft_s"]
    for row in document["prompt"]:
        assert {"prompt_tokens", "ttft_s", "tpot_s", "decode_tok_s", "e2e_s", "residual_s"} <= set(row)
        assert row["new_tokens"] == NEW_TOKENS and len(row["ttft_runs_s"]) == REPEATS
        # Within one run TPOT is defined from E2E and TTFT, so the chapter's formula is exact there.
        for ttft, tpot, e2e in zip(row["ttft_runs_s"], row["tpot_runs_s"], row["e2e_runs_s"]):
            assert ttft + tpot * (NEW_TOKENS - 1) == pytest.approx(e2e, rel=1e-9)
        predicted = row["ttft_s"] + row["tpot_s"] * (NEW_TOKENS - 1)
        assert row["predicted_e2e_s"] == pytest.approx(predicted)
        assert row["residual_s"] == pytest.approx(row["e2e_s"] - predicted)
        assert row["residual_pct"] == pytest.approx(100 * row["residual_s"] / row["e2e_s"])
        assert row["decode_tok_s"] == pytest.approx(1 / row["tpot_s"])
        assert row["steady_residual_pct"] == sorted(row["steady_residual_runs_pct"])[1] and row["itl_p50_s"] > 0
        # Each field is the median of its own runs, not taken from one run.
        assert row["ttft_s"] == sorted(row["ttft_runs_s"])[1] and row["e2e_s"] == sorted(row["e2e_runs_s"])[1]


def test_precision_rows_count_bytes_and_agree_with_float32(lab_run, embedded_model):
    _, document, _, _ = lab_run
    rows = {row["dtype"]: row for row in document["precision"]}
    assert set(rows) == {"float32", "bfloat16"}
    assert rows["float32"]["weight_bytes"] == embedded_model.weight_bytes
    assert rows["float32"]["weight_bytes"] == 2 * rows["bfloat16"]["weight_bytes"]
    assert rows["float32"]["token_agreement"] == 1.0 and rows["float32"]["compared_tokens"] == NEW_TOKENS
    assert 0.0 <= rows["bfloat16"]["token_agreement"] <= 1.0
    for row in rows.values():
        assert row["ttft_s"] > 0 and row["decode_tok_s"] > 0


def test_batch_rows_relate_step_time_and_throughput(lab_run):
    _, document, _, _ = lab_run
    assert [row["batch_size"] for row in document["batch"]] == [1, 2]
    for row in document["batch"]:
        assert row["per_seq_tok_s"] == pytest.approx(1 / row["step_time_s"])
        assert row["aggregate_tok_s"] == pytest.approx(row["batch_size"] / row["step_time_s"])


def test_each_ceiling_is_bandwidth_over_bytes(lab_run):
    _, document, _, _ = lab_run
    measured = document["machine"]["bandwidth"]
    assert measured["bytes_per_s"] >= measured["median_bytes_per_s"] > 0
    cache = last_level_cache_bytes()
    if cache:
        assert measured["buffer_bytes"] >= 4 * cache  # STREAM's rule, as the DRAM ceiling reads it
    assert measured["bytes_per_s"] == document["ceilings"]["ceilings"]["dram"]["value"]
    precision = {row["dtype"]: row for row in document["precision"]}
    assert [row["dtype"] for row in document["bandwidth"]] == list(precision)
    for row in document["bandwidth"]:
        assert row["bandwidth_bytes_s"] == measured["bytes_per_s"]
        assert row["ceiling_tok_s"] == pytest.approx(row["bandwidth_bytes_s"] / row["weight_bytes"], rel=1e-12)
        assert row["decode_tok_s"] == precision[row["dtype"]]["decode_tok_s"]
        assert row["fraction_of_ceiling"] == pytest.approx(row["decode_tok_s"] / row["ceiling_tok_s"])


def test_json_loads_back_and_csv_holds_every_row(lab_run):
    results, document, _, _ = lab_run
    assert results_from_json(json.dumps(document)).to_dict() == document
    text = results_to_csv(results)
    table = list(
        csv.DictReader(io.StringIO("".join(line for line in text.splitlines(True) if not line.startswith("#"))))
    )
    sweeps = [row["sweep"] for row in table]
    for sweep in ("prompt", "precision", "batch", "bandwidth", "history"):
        assert sweeps.count(sweep) == len(document[sweep])
    assert sweeps.count("verdict") == 6
    assert float(table[0]["ttft_s"]) == document["prompt"][0]["ttft_s"]


class CountingReply(LocalReply):
    """Counts the tokens each generation yields, to see where a cancelled measurement stopped."""

    tokens: list[int] = []

    def __iter__(self):
        CountingReply.tokens.append(0)
        for event in super().__iter__():
            if isinstance(event, TokenEvent):
                CountingReply.tokens[-1] += 1
            yield event


class RecordingStamper(StepStamper):
    made: list["RecordingStamper"] = []

    def __init__(self):
        super().__init__()
        RecordingStamper.made.append(self)


def cancel_when(cancel, predicate):
    def progress(fraction, message):
        if predicate(message):
            cancel.set()

    return progress


def test_cancel_keeps_finished_rows_and_stops_the_running_measurement(embedded_model, monkeypatch):
    monkeypatch.setattr(core.lab.measure, "LocalReply", CountingReply)
    CountingReply.tokens = []
    cancel = threading.Event()
    config = LabConfig(sweeps=("prompt", "batch"), prompt_words=(5, 10), new_tokens=60, repeats=1)
    # Cancel just as the second prompt length starts: its 60-token measurement must stop at once.
    observer = LabObserver(progress=cancel_when(cancel, lambda message: message.startswith("prompt sweep: 10 words")))
    results = run_lab(config, loaded=embedded_model, observer=observer, cancel=cancel)
    assert results.cancelled and results.error is None
    assert [row["prompt_words"] for row in results.prompt] == [5] and results.batch == []
    warm_up, first, second = CountingReply.tokens
    assert first == 60 and second < 10  # stopped within a token or two, far short of 60
    assert [v["holds"] for v in results.verdicts][:3] == [None, None, None]


def test_cancel_stops_a_batch_measurement_within_a_step(embedded_model, monkeypatch):
    monkeypatch.setattr(core.lab.batch_sweep, "StepStamper", RecordingStamper)
    RecordingStamper.made = []
    cancel = threading.Event()
    config = LabConfig(sweeps=("batch",), batch_sizes=(1, 2), new_tokens=60, repeats=1)
    observer = LabObserver(progress=cancel_when(cancel, lambda message: message.startswith("batch sweep: batch 2")))
    results = run_lab(config, loaded=embedded_model, observer=observer, cancel=cancel)
    assert results.cancelled and [row["batch_size"] for row in results.batch] == [1]
    assert len(RecordingStamper.made[1].stamps_ns) == 60
    assert len(RecordingStamper.made[-1].stamps_ns) <= 1


def test_a_prompt_longer_than_the_context_is_an_error_not_a_crash(embedded_model):
    config = LabConfig(sweeps=("prompt",), prompt_words=(3, 9000), new_tokens=2, repeats=1)
    results = run_lab(config, loaded=embedded_model)
    assert not results.cancelled and "context window" in results.error
    assert results.prompt == []  # checked before any measurement, so no time is spent on the short one


@pytest.mark.parametrize("loop", ["lean", "generate"])
def test_the_lab_decodes_on_the_loop_it_is_given(embedded_model, monkeypatch, loop):
    used = []

    class RecordingReply(LocalReply):
        def start(self, request_start_ns=None):
            used.append(self.decode_loop)
            return super().start(request_start_ns)

    monkeypatch.setattr(core.lab.measure, "LocalReply", RecordingReply)
    config = LabConfig(sweeps=("prompt",), prompt_words=(5,), new_tokens=3, repeats=1, decode_loop=loop)
    results = run_lab(config, loaded=embedded_model)
    assert results.error is None and len(results.prompt) == 1
    assert used and set(used) == {loop} and results.config["decode_loop"] == loop


def test_the_native_batch_sweep_decodes_each_batch_together_on_the_kernels(native_model, monkeypatch):
    import core.generation.decode.kernel_batch as kernel_batch

    batches, original = [], kernel_batch.decode_together

    def recording(model, ids, batch_size, new_tokens, **options):
        stamps = original(model, ids, batch_size, new_tokens, **options)
        batches.append((batch_size, len(stamps)))
        return stamps

    monkeypatch.setattr(kernel_batch, "decode_together", recording)
    config = LabConfig(sweeps=("batch",), batch_sizes=(1, 3), new_tokens=NEW_TOKENS, repeats=1)
    results = run_lab(config, loaded=native_model)
    assert batches == [(1, 4), (1, NEW_TOKENS), (3, NEW_TOKENS)]  # the warm-up, then one run of each batch
    assert [row["batch_size"] for row in results.batch] == [1, 3]
    for row in results.batch:
        assert row["aggregate_tok_s"] == pytest.approx(row["batch_size"] / row["step_time_s"])


def test_cancel_stops_a_native_batch_within_a_step(native_model, monkeypatch):
    import core.generation.decode.kernel_batch as kernel_batch

    steps, original = [], kernel_batch.decode_together
    monkeypatch.setattr(
        kernel_batch,
        "decode_together",
        lambda *args, **options: steps.append(len(stamps := original(*args, **options))) or stamps,
    )
    cancel = threading.Event()
    config = LabConfig(sweeps=("batch",), batch_sizes=(1, 2), new_tokens=60, repeats=1)
    observer = LabObserver(progress=cancel_when(cancel, lambda message: message.startswith("batch sweep: batch 2")))
    results = run_lab(config, loaded=native_model, observer=observer, cancel=cancel)
    assert results.cancelled and [row["batch_size"] for row in results.batch] == [1]
    assert steps[1] == 60 and steps[-1] <= 1


def test_history_rows_reuse_the_chat_with_the_cache_and_not_without(lab_run):
    _, document, _, _ = lab_run
    rows = document["history"]
    assert [row["turn"] for row in rows] == [1, 2, 3]
    assert rows[0]["prompt_tokens"] < rows[1]["prompt_tokens"] < rows[2]["prompt_tokens"]
    for before, row in zip(rows, rows[1:]):
        assert row["cached_tokens"] >= before["prompt_tokens"]  # the previous turn, up to its reply's last token
        assert row["prefilled_tokens"] == row["prompt_tokens"] - row["cached_tokens"] < 40
        assert len(row["ttft_on_runs_s"]) == len(row["ttft_off_runs_s"]) == REPEATS
    assert all(row["ttft_on_s"] > 0 and row["ttft_off_s"] > 0 for row in rows)


def test_the_speculation_sweep_times_each_draft_length_and_judges_the_claim(native_model):
    """Prompt lookup on the copying and the free prompt, k = 0, 1, 2, 4, 8: same replies, drafts accepted on the copy."""
    config = LabConfig(sweeps=("speculation",), new_tokens=24, repeats=1)
    results = run_lab(config, loaded=native_model)
    rows = results.speculation
    assert [(row["prompt"], row["draft_tokens"]) for row in rows] == [
        (prompt, k) for prompt in ("copying", "free") for k in (0, 1, 2, 4, 8)
    ]
    assert all(row["same_reply"] for row in rows if row["draft_tokens"])
    copying = [row for row in rows if row["prompt"] == "copying" and row["draft_tokens"]]
    assert all(row["accepted"] > 0 and row["tokens_per_pass"] > 1 for row in copying)
    assert all(row["verify_passes"] == 0 and row["tpot_ratio"] == 1 for row in rows if not row["draft_tokens"])
    (verdict,) = [v for v in results.verdicts if v["key"] == "speculation"]
    assert "copying: with" in verdict["evidence"] and isinstance(verdict["holds"], bool)
    document = json.loads(results_to_json(results))
    assert results_from_json(json.dumps(document)).speculation == rows
