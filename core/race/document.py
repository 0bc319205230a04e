"""A race as one JSON file: both replies' full reports (as `ask --json`, with the waterfall) and traces, the budget
and the verdict; `race --json` prints it, the window exports it, and both open it again for playback."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.chats.chat_schema import finite_float, no_constant
from core.errors import LatencyLabError
from core.race.config import MODE_WORDS, RaceConfig
from core.race.sides import labels, side_summary
from core.race.verdict import Verdict, make_verdict, side_facts
from core.timing.budget import DEFINITION as BUDGET_DEFINITION
from core.timing.budget import budget_document, judge
from core.timing.export import TRACE_DEFINITION, json_text, reply_report
from core.timing.metrics import DEFINITIONS
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import TraceFileError, trace_from_dict
from core.timing.waterfall import definitions as waterfall_definitions
from core.timing.waterfall import waterfall_document

if TYPE_CHECKING:
    from core.race.runner import RaceResult

RACE_FORMAT = "latencylab-race/1"
MAX_RACE_BYTES = 64 * 1024 * 1024
RACE_DEFINITIONS = {
    "first_text_s": "When text first appeared, in seconds since Send: TTFT when streaming, E2E when not.",
    "finished_s": "When the last token arrived, in seconds since Send: E2E.",
    "reader_wait_s": "How long a reader at 250 words a minute, starting when text first appeared, had read everything "
    "shown and waited for more, up to the last token; 0 when the text kept ahead of them.",
    "mode": "each alone: A ran, then B, each alone on the machine, and both are played back from Send at their own "
    "measured times. live: both ran at the same time, sharing the machine.",
    "trace": TRACE_DEFINITION,
}


class RaceFileError(LatencyLabError):
    """The file is not a race this version can open."""


@dataclass(frozen=True)
class RecordedSide:
    """One side as a race file holds it: enough to play it back and judge it again."""

    name: str
    label: str
    summary: str
    streaming: bool
    state: str
    trace: ReplyTrace | None
    notes: tuple[str, ...] = ()
    model: str | None = None


@dataclass(frozen=True)
class RaceRecord:
    """A race read back (or just run): what was asked, how, both sides, and its verdict recomputed from the traces."""

    prompt: str
    mode: str
    stopped: bool
    status: str
    a: RecordedSide
    b: RecordedSide
    config: RaceConfig
    verdict: Verdict | None

    @property
    def sides(self) -> tuple[RecordedSide, RecordedSide]:
        return self.a, self.b


def race_document(result: RaceResult) -> dict:
    config = result.config
    verdict = result.verdict()
    label_a, label_b = result.labels
    ran = [(run.trace, run.side.streaming) for run in result.sides if run.trace is not None]
    summary, _ = budget_document([trace for trace, _ in ran], [streaming for _, streaming in ran], config.budget)
    return {
        "format": RACE_FORMAT,
        "mode": config.mode,
        "mode_words": MODE_WORDS[config.mode],
        "prompt": config.prompt,
        "stopped": result.stopped,
        "stopped_during": result.stopped_during,
        "status": result.status_line,
        "verdict": verdict.to_dict() if verdict else None,
        "budget": summary,
        "a": _side_report(result.a, label_a, config),
        "b": _side_report(result.b, label_b, config),
        "config": config.to_dict(),
        "definitions": {**DEFINITIONS, **RACE_DEFINITIONS, "budget": BUDGET_DEFINITION, **waterfall_definitions()},
    }


def race_json(result: RaceResult) -> str:
    return json_text(race_document(result), ensure_ascii=False, indent=1)


def _side_report(run, label: str, config: RaceConfig) -> dict:
    side = run.side
    report = {
        "name": side.name,
        "label": label,
        "summary": side_summary(side),
        "streaming": side.streaming,
        "state": run.state,
        "error": run.error,
        "notes": list(run.notes),
        "decode_loop": run.decode_loop,
    }
    if run.trace is None:
        return {**report, "model": side.model, "settings": side.settings.to_dict()}
    trace = run.trace
    return {
        **report,
        **reply_report(run.model_facts.to_dict() if run.model_facts else {"model": side.model}, trace, side.settings),
        "decode_loop": run.decode_loop,
        "waterfall": waterfall_document(trace),
        "budget": judge(trace, side.streaming, config.budget).to_dict(),
    }


def read_race(data: bytes) -> RaceRecord:
    """A race file read and checked; RaceFileError saying what is wrong."""
    if len(data) > MAX_RACE_BYTES:
        raise RaceFileError(f"the file is larger than {MAX_RACE_BYTES // 2**20} MB; a race file is smaller")
    try:
        document = json.loads(data.decode("utf-8"), parse_float=finite_float, parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as error:
        raise RaceFileError(f"the file is not JSON text ({type(error).__name__})") from None
    if not is_race(document):
        found = document.get("format") if isinstance(document, dict) else None
        raise RaceFileError(f"not a Latency Lab race (format is {found!r}, expected {RACE_FORMAT!r})")
    try:
        config = RaceConfig.from_dict(_dict(document.get("config"), "config"))
    except LatencyLabError as error:
        raise RaceFileError(f"config: {error}") from None
    names = dict(zip(("a", "b"), labels(config.a, config.b)))  # from the settings, whatever the file says
    sides = tuple(_recorded(document.get(key), key, getattr(config, key), names[key]) for key in ("a", "b"))
    verdict = None
    finished = [
        (side, side.trace)
        for side in sides
        if side.trace is not None and side.trace.stop_reason in ("eos", "max_tokens")
    ]
    if len(finished) == len(sides):
        verdict = make_verdict(
            *(side_facts(side.name, side.label, trace, side.streaming, config.budget) for side, trace in finished)
        )
    return RaceRecord(
        config.prompt,
        config.mode,
        document.get("stopped") is True,
        _text(document, "status"),
        sides[0],
        sides[1],
        config,
        verdict,
    )


def is_race(document: object) -> bool:
    return isinstance(document, dict) and document.get("format") == RACE_FORMAT


def _recorded(report: object, key: str, side, label: str) -> RecordedSide:
    report = _dict(report, key)
    trace = None
    if report.get("trace") is not None:
        try:
            trace = trace_from_dict(report["trace"], f"{key}.trace")
        except TraceFileError as error:
            raise RaceFileError(str(error)) from None
    notes = report.get("notes")
    if not isinstance(notes, list):
        notes = []
    return RecordedSide(
        side.name,
        label,
        side_summary(side),
        side.streaming,
        _text(report, "state"),
        trace,
        tuple(note for note in notes if isinstance(note, str)),
        _text(report, "model") or None,
    )


def _text(report: dict, key: str) -> str:
    """A field shown as text: what is not text is not shown."""
    value = report.get(key)
    return value if isinstance(value, str) else ""


def _dict(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise RaceFileError(f"{where} is missing or not an object")
    return value
