"""Races on the real embedded model: streaming against not, native against float32, the prompt cache on and off
over a shared history, and a race stopped midway. Every check follows from the traces; nothing is timed."""

from __future__ import annotations

import json
import threading

import pytest

from core.race.config import RaceConfig
from core.race.document import race_json, read_race
from core.race.playback import Track
from core.race.runner import RaceObserver, run_race
from core.race.sides import parse_side
from core.timing.events import TokenEvent

PROMPT = "Name three colours of the rainbow."
SHORT = ["max_new_tokens=6"]
# Long enough that not streaming is felt (over FELT_S later) even at this model's ~8 ms a token on a fast CPU.
FELT = ["max_new_tokens=24"]
FELT_PROMPT = "Describe a rainbow in two sentences."


@pytest.fixture
def models(native_model, embedded_model):
    """The session's loaded models by precision: a race loads nothing of its own here."""
    return {"native": native_model, "float32": embedded_model}


def loader(models):
    return lambda side: models[side.dtype]


def test_streaming_against_not_streaming_the_verdicts_fields_follow_from_the_two_traces(models):
    config = RaceConfig(
        FELT_PROMPT, parse_side("A", ["streaming=on", *FELT]), parse_side("B", ["streaming=off", *FELT])
    )
    result = run_race(config, loader(models))
    a, b = result.a.trace, result.b.trace
    assert a.stop_reason in ("eos", "max_tokens") and b.stop_reason in ("eos", "max_tokens")
    assert a.text == b.text and a.text  # greedy, one model: the same reply, shown two ways
    # Each side started from a prompt cache holding nothing of the other's, so B prefilled the whole prompt too.
    assert a.cached_tokens == 0 and b.cached_tokens == 0
    verdict = result.verdict()
    assert verdict.a.first_text_s == a.metrics().ttft_s  # streaming: text at the first token
    assert verdict.b.first_text_s == b.metrics().e2e_s  # not streaming: the whole reply at the last
    assert (verdict.a.finished_s, verdict.b.finished_s) == (a.metrics().e2e_s, b.metrics().e2e_s)
    assert (verdict.a.tpot_s, verdict.b.tpot_s) == (a.metrics().tpot_s, b.metrics().tpot_s)
    first, second = sorted([("A", verdict.a.first_text_s), ("B", verdict.b.first_text_s)], key=lambda item: item[1])
    assert verdict.text_first == first[0] and verdict.text_first_by_s == pytest.approx(second[1] - first[1])
    assert verdict.b.reader_wait_s == 0.0  # everything at once: nothing left to wait for
    assert "A (streaming)" in verdict.sentence or "B (not streaming)" in verdict.sentence
    # The file holds both full reports and opens again with the same traces and verdict.
    document = json.loads(race_json(result))
    assert document["a"]["ttft_s"] == a.metrics().ttft_s and document["b"]["text"] == b.text
    assert document["a"]["waterfall"]["segments"] and document["verdict"]["sentence"] == verdict.sentence
    record = read_race(race_json(result).encode("utf-8"))
    assert Track.of(record.a.trace, True).times_s == tuple(a.token_times_s())
    assert Track.of(record.b.trace, False).times_s == tuple(b.token_times_s())


def test_native_against_float32_race_on_their_own_models(models):
    config = RaceConfig(PROMPT, parse_side("A", ["dtype=native", *SHORT]), parse_side("B", ["dtype=float32", *SHORT]))
    result = run_race(config, loader(models))
    assert result.labels == ("native", "float32")
    assert result.a.model_facts.dtype.startswith("native") and result.b.model_facts.dtype == "float32"
    assert result.verdict() is not None
    document = json.loads(race_json(result))
    assert document["a"]["dtype"].startswith("native") and document["b"]["dtype"] == "float32"


def test_with_a_shared_history_the_prompt_cache_side_prefills_only_the_new_turn(models):
    history = (
        ("user", "Tell me one fact about the sea."),
        ("assistant", "The sea covers most of the Earth and holds most of its water."),
    )
    config = RaceConfig(
        PROMPT,
        parse_side("A", ["prompt_cache=on", *SHORT]),
        parse_side("B", ["prompt_cache=off", *SHORT]),
        history=history,
    )
    result = run_race(config, loader(models))
    a, b = result.a.trace, result.b.trace
    assert a.prompt_tokens == b.prompt_tokens
    assert a.cached_tokens > 0 and a.prefilled_tokens < b.prefilled_tokens
    assert b.cached_tokens == 0 and "off" in b.cache_reason
    assert any("held the shared history" in note for note in result.a.notes)
    assert result.labels == ("prompt cache on", "prompt cache off")


@pytest.mark.parametrize("stop_in", ["A", "B"])
def test_a_race_stopped_midway_keeps_what_ran_and_says_so(models, stop_in):
    cancel = threading.Event()

    def on_event(side, event):
        if side == stop_in and isinstance(event, TokenEvent):
            cancel.set()  # Stop pressed as the side's first token arrives

    config = RaceConfig(PROMPT, parse_side("A", ["max_new_tokens=24"]), parse_side("B", ["max_new_tokens=24"]))
    result = run_race(config, loader(models), cancel=cancel, observer=RaceObserver(event=on_event))
    assert result.stopped and result.stopped_during == stop_in and result.verdict() is None
    stopped = result.a if stop_in == "A" else result.b
    assert stopped.trace.stop_reason == "stopped" and 1 <= stopped.trace.output_tokens < 24
    if stop_in == "B":
        assert result.a.trace.stop_reason in ("eos", "max_tokens")  # A had run whole: kept
    else:
        assert result.b.trace is None and result.b.state == "not run"
    assert result.status_line.startswith(f"stopped during {stop_in}: what ran is kept")
    document = json.loads(race_json(result))
    assert document["stopped"] is True and document["verdict"] is None
    assert document[stop_in.lower()]["stop_reason"] == "stopped"
    assert read_race(race_json(result).encode("utf-8")).stopped
