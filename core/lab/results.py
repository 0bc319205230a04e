"""A lab run's results: rows per sweep, machine facts and verdicts, saved to and loaded from JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from core.atomic_file import atomic_write_text
from core.bounded_read import NotReadable, read_named_file
from core.errors import LatencyLabError
from core.lab.config import SWEEPS
from core.lab.result_checks import results_problem
from core.lab.roofline_rows import ROOFLINE_DEFINITIONS
from core.timing.metrics import DEFINITIONS

FORMAT = "latencylab-lab/1"
# Far above any run of the sweeps (a full run writes tens of kB); a larger file is not lab results.
MAX_RESULTS_BYTES = 64 * 2**20

LAB_DEFINITIONS = {
    "ttft_s": DEFINITIONS["ttft_s"],
    "tpot_s": DEFINITIONS["tpot_s"],
    "e2e_s": DEFINITIONS["e2e_s"],
    "decode_tok_s": DEFINITIONS["decode_tok_s"],
    "prefill_tok_s": DEFINITIONS["prefill_tok_s"],
    "repeats": "Each row's times are medians over this many timed runs, taken after one unrecorded warm-up run; "
    "every run decodes exactly new_tokens tokens (EOS is forbidden until then), greedily.",
    "prompt": "Prompt sweep: the chapter's raw prompt 'Repeat after me. ' + 'word ' * prompt_words, tokenized "
    "without a chat template.",
    "residual_s": "E2E - (TTFT + TPOT x (N - 1)), from the medians of E2E, TTFT and TPOT, each taken on its own over "
    "the runs. Per run it would be zero by definition of TPOT; from the medians it is not.",
    "residual_pct": "residual_s as a percentage of E2E.",
    "itl_p50_s": "Median over the runs of each run's median gap between consecutive tokens.",
    "steady_residual_pct": "Per run, 100 x (E2E - (TTFT + median inter-token gap x (N - 1))) / E2E, then the median "
    "over runs. The gap's median does not use E2E, so this tests whether one typical step "
    "time predicts the total; the median over runs ignores one disturbed run.",
    "weight_bytes": "Bytes of the model's weights as loaded (quantised formats count their packed bytes).",
    "token_agreement": "Share of the first compared_tokens (at most 32) greedy tokens identical to float32's at "
    "the same position, on the same chat prompt.",
    "matching_prefix_tokens": "How many greedy tokens match float32's before the first difference.",
    "step_time_s": "Batch sweep: the median gap between consecutive decode steps (median over runs of each run's "
    "median); one step yields one token for every sequence, so this is each sequence's time per "
    "output token. The median ignores the few steps that other processes on the CPU stretch.",
    "mean_step_time_s": "Batch sweep: (last step stamp - first step stamp) / (N - 1), the batch analogue of TPOT.",
    "per_seq_tok_s": "1 / step_time_s: what one user of the batch sees.",
    "aggregate_tok_s": "batch_size / step_time_s: tokens per second summed over the batch.",
    "bandwidth_bytes_s": "Memory read bandwidth: the best pass of a STREAM-style sum over a buffer far larger "
    "than the last-level cache.",
    "ceiling_tok_s": "bandwidth_bytes_s / weight_bytes: the decode rate if every token read every weight once "
    "at full bandwidth and did nothing else.",
    "fraction_of_ceiling": "decode_tok_s / ceiling_tok_s.",
    "history": "History sweep: a chat of history_turns turns (about 30 new tokens each: the last reply and a new "
    "question), each reply exactly new_tokens long; every prompt timed with the prompt cache on (only the "
    "tokens after the cached history prefilled) and again with it off (the whole chat prefilled), medians "
    "over the repeats.",
    "ttft_on_s": "History sweep: TTFT of the turn with the prompt cache on.",
    "ttft_off_s": "History sweep: TTFT of the same prompt with the prompt cache off.",
    "cached_tokens": "History sweep: prompt tokens the prompt cache gave at this turn (cache on).",
    "speculation": "Speculation sweep: prompt lookup with at most draft_tokens drafts a step (0: none), on a copying "
    "prompt and a free one, each reply exactly new_tokens long; TPOT is the median over the repeats.",
    "tpot_ratio": "Speculation sweep: TPOT over TPOT without speculation on the same prompt.",
    "acceptance": "Speculation sweep: accepted drafts / drafts checked.",
    "tokens_per_pass": "Speculation sweep: (accepted drafts + verify passes) / verify passes: the tokens one pass "
    "over the weights gave, where it checked drafts.",
    "same_reply": "Speculation sweep: the reply is token for token the one without speculation (greedy).",
    "size": "Size sweep: the precision sweep's question on each of the models named, one loaded at a time, each "
    "reply exactly new_tokens long after one unrecorded warm-up; TPOT is the median over the repeats.",
    "read_bytes_s": "Size sweep: weight_bytes x decode_tok_s, the bytes of weights decode read a second; the chapter "
    "says this stays near the memory's bandwidth whatever the model's size.",
    **ROOFLINE_DEFINITIONS,
    "ceilings": "This machine's ceilings (bandwidth sweep): GEMM FLOP/s per precision, DRAM read bandwidth over a "
    "buffer at least 4x the last-level cache, and the last-level cache's own; each with its method. "
    "Measured once per CPU and cached, unless other programs loaded the machine meanwhile (then flagged "
    "'loaded' and not cached).",
    "cpu_share": "machine.cpu_share: the process's CPU time during the run / (wall time x torch threads). Well "
    "below 1 means other programs competed for the CPU and the timings are disturbed.",
}


class LabResultsError(LatencyLabError):
    """A results file could not be read as a lab result."""


@dataclass
class LabResults:
    config: dict
    machine: dict = field(default_factory=dict)
    model: dict | None = None
    bandwidth_measurement: dict | None = None
    ceilings: dict | None = None  # core.roofline.ceilings.Ceilings.to_dict()
    prompt: list[dict] = field(default_factory=list)
    precision: list[dict] = field(default_factory=list)
    batch: list[dict] = field(default_factory=list)
    bandwidth: list[dict] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    speculation: list[dict] = field(default_factory=list)
    size: list[dict] = field(default_factory=list)
    verdicts: list[dict] = field(default_factory=list)
    cancelled: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # sweeps that do not apply (against a server), and why
    started_at: str | None = None
    duration_s: float | None = None

    def rows(self, sweep: str) -> list[dict]:
        return getattr(self, sweep)

    def row_count(self) -> int:
        return sum(len(self.rows(sweep)) for sweep in SWEEPS)

    def failed_sweeps(self) -> list[str]:
        """The sweeps that ran and measured nothing: every row of theirs is an error (each model failed to load)."""
        return [sweep for sweep in SWEEPS if self.rows(sweep) and all("error" in row for row in self.rows(sweep))]

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "cancelled": self.cancelled,
            "error": self.error,
            "notes": self.notes,
            "config": self.config,
            "model": self.model,
            "machine": {**self.machine, "bandwidth": self.bandwidth_measurement},
            "ceilings": self.ceilings,
            "definitions": LAB_DEFINITIONS,
            **{sweep: self.rows(sweep) for sweep in SWEEPS},
            "verdicts": self.verdicts,
        }

    @classmethod
    def from_dict(cls, document: dict) -> LabResults:
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            found = document.get("format") if isinstance(document, dict) else type(document).__name__
            raise LabResultsError(f"this is not a Latency Lab result (expected format {FORMAT!r}, found {found!r}).")
        for sweep in (*SWEEPS, "verdicts"):
            rows = document.get(sweep, [])
            if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
                raise LabResultsError(f"the {sweep!r} entry must be a list of objects.")
        problem = results_problem(document)
        if problem:
            raise LabResultsError(f"{problem}.")
        machine = dict(document.get("machine") or {})
        bandwidth = machine.pop("bandwidth", None)
        return cls(
            config=document.get("config") or {},
            machine=machine,
            model=document.get("model"),
            bandwidth_measurement=bandwidth,
            ceilings=document.get("ceilings") if isinstance(document.get("ceilings"), dict) else None,
            **{sweep: document.get(sweep, []) for sweep in SWEEPS},
            verdicts=document.get("verdicts", []),
            cancelled=bool(document.get("cancelled", False)),
            error=document.get("error"),
            notes=[str(note) for note in document.get("notes") or []],
            started_at=document.get("started_at"),
            duration_s=document.get("duration_s"),
        )


def results_to_json(results: LabResults) -> str:
    return json.dumps(results.to_dict(), ensure_ascii=False, indent=1)


def results_from_json(text: str) -> LabResults:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise LabResultsError(f"the file is not valid JSON: {error}") from None
    except RecursionError:
        raise LabResultsError("the file's JSON is nested too deeply to be lab results") from None
    return LabResults.from_dict(document)


def results_to_csv(results: LabResults) -> str:
    """One table for all sweeps: a 'sweep' column, then every key any row uses; verdicts come last as rows."""
    tagged = [{"sweep": sweep, **row} for sweep in SWEEPS for row in results.rows(sweep)]
    tagged += [{"sweep": "verdict", **verdict} for verdict in results.verdicts]
    columns: list[str] = []
    for row in tagged:
        columns.extend(key for key in row if key not in columns)
    buffer = io.StringIO()
    for key, definition in LAB_DEFINITIONS.items():
        buffer.write(f"# {key}: {definition}\n")
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in tagged:
        writer.writerow(
            {key: json.dumps(value) if isinstance(value, (list, dict)) else value for key, value in row.items()}
        )
    return buffer.getvalue()


def save_results_json(results: LabResults, path: str | Path) -> None:
    atomic_write_text(Path(path), results_to_json(results))


def save_results_csv(results: LabResults, path: str | Path) -> None:
    atomic_write_text(Path(path), results_to_csv(results))


def load_results_json(path: str | Path) -> LabResults:
    try:
        text = read_named_file(path, MAX_RESULTS_BYTES).decode("utf-8")
    except NotReadable as refused:
        raise LabResultsError(f"could not read {Path(path).name}: {refused}") from None
    except UnicodeDecodeError as error:
        raise LabResultsError(f"could not read {Path(path).name}: it is not UTF-8 text ({error.reason})") from None
    return results_from_json(text)
