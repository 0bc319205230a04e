"""The race's logic on traces made by hand (no model): budgets at their edges, the reader's wait, the verdict's
fields, the sides' settings and their refusals, and the race file read back."""

from __future__ import annotations

import contextlib
import json

import pytest

from core.errors import InvalidSettingsError
from core.race.config import RaceConfig
from core.race.document import RaceFileError, race_json, read_race
from core.race.playback import Track
from core.race.runner import RaceResult, SideRun
from core.race.sides import RaceSide, check_race, labels, parse_side
from core.race.verdict import make_verdict, side_facts
from core.settings import DRAFT_TOKENS, READER_TPOT_S, READING_CHARS_PER_S, LatencyBudget
from core.timing.budget import budget_document, judge, tally_line
from core.timing.events import CpuUsage, FinishedEvent, StopReason, TokenEvent
from core.timing.reading import reader_wait_s, visible_steps
from core.timing.trace import ReplyTrace

MS = 1_000_000
S = 1_000_000_000


def trace_of(
    stamps_ns: list[int], texts: list[str] | None = None, start_ns: int = 0, stop: StopReason = StopReason.EOS
) -> ReplyTrace:
    texts = texts if texts is not None else ["ab"] * len(stamps_ns)
    trace = ReplyTrace(request_start_ns=start_ns, prompt_tokens=7)
    for index, (text, stamp) in enumerate(zip(texts, stamps_ns)):
        trace.record(TokenEvent(index, index, text, start_ns + stamp))
    trace.record(FinishedEvent(stop, len(stamps_ns), start_ns + (stamps_ns[-1] if stamps_ns else 0) + 1))
    return trace


# -- budgets ------------------------------------------------------------------------------------


def test_the_default_budget_is_one_second_and_a_250_wpm_readers_pace():
    budget = LatencyBudget()
    assert budget.ttft_s == 1.0
    assert budget.tpot_s == pytest.approx(0.18)  # 60 s / (250 words / 0.75 words a token)
    assert budget.tpot_s == pytest.approx(READER_TPOT_S)


@pytest.mark.parametrize(
    "first_ns, within",
    [(1 * S, True), (1 * S + 1, False), (1 * S - 1, True)],
    ids=["exactly-at", "1ns-over", "1ns-under"],
)
def test_the_wait_before_text_is_judged_right_at_the_edge(first_ns, within):
    trace = trace_of([first_ns, first_ns + 100 * MS])
    mark = judge(trace, streaming=True, budget=LatencyBudget(1.0, 0.18))
    assert mark.wait_within is within and mark.within is within
    assert mark.line.startswith("within budget" if within else "over budget")


@pytest.mark.parametrize("gap_ns, within", [(180 * MS, True), (180 * MS + 1, False)], ids=["exactly-at", "1ns-over"])
def test_tpot_is_judged_right_at_the_edge_over_the_whole_reply(gap_ns, within):
    # Five tokens: TPOT = (E2E - TTFT) / 4 is exactly the budget, or 0.25 ns a token over it.
    stamps = [100 * MS + step * gap_ns for step in range(4)] + [100 * MS + 4 * 180 * MS + (gap_ns - 180 * MS)]
    mark = judge(trace_of(stamps), streaming=True, budget=LatencyBudget(1.0, 0.18))
    assert mark.wait_within is True
    assert mark.tpot_within is within and mark.within is within


def test_without_streaming_the_whole_reply_is_the_wait_and_tpot_reaches_no_reader():
    trace = trace_of([200 * MS, 900 * MS, 1000 * MS + 1])
    mark = judge(trace, streaming=False, budget=LatencyBudget(1.0, 0.001))
    assert mark.wait_s == pytest.approx(1.000000001) and mark.within is False
    assert mark.tpot_within is None  # a slow TPOT cannot be read along when nothing shows until the end
    assert judge(trace, streaming=True, budget=LatencyBudget(1.0, 0.001)).tpot_within is False


def test_a_reply_with_no_token_is_not_judged_and_the_tally_says_how_many_were():
    budget = LatencyBudget(1.0, 0.18)
    fast, slow, empty = trace_of([100 * MS, 110 * MS]), trace_of([2 * S, 3 * S]), trace_of([])
    marks = [judge(fast, True, budget)] * 7 + [judge(slow, True, budget)] * 2 + [judge(empty, True, budget)]
    assert marks[-1].within is None
    assert tally_line(marks) == "7 of 9 replies within budget"
    summary, per_reply = budget_document([fast, slow, empty], [True, True, True], budget)
    assert (summary["within"], summary["judged"]) == (1, 2) and summary["line"] == "1 of 2 replies within budget"
    assert [mark["within"] for mark in per_reply] == [True, False, None]


def test_a_budget_out_of_range_is_refused_in_one_line():
    with pytest.raises(InvalidSettingsError, match="TTFT budget"):
        LatencyBudget(0.0, 0.18)
    with pytest.raises(InvalidSettingsError, match="TPOT budget"):
        LatencyBudget(1.0, -1.0)


# -- what the reader saw ------------------------------------------------------------------------


def test_a_reader_never_waits_for_text_that_comes_as_fast_as_they_read():
    per_token = int(READING_CHARS_PER_S)  # 25 characters, one token a second: exactly the reader's pace
    trace = trace_of([1 * S, 2 * S, 3 * S], ["x" * per_token] * 3)
    steps = visible_steps(trace, streaming=True)
    assert steps == [(1.0, 25), (2.0, 50), (3.0, 75)]
    assert reader_wait_s(steps) == 0.0


def test_a_reader_waits_for_text_that_comes_slower_than_they_read():
    # The reading line starts at the first text and never pauses: 25 characters are read by 2 s, the staircase
    # stays below the line until 3 s (1 s); 50 are read by 3 s, below again until 5 s (2 s).
    trace = trace_of([1 * S, 3 * S, 5 * S], ["x" * 25] * 3)
    assert reader_wait_s(visible_steps(trace, streaming=True)) == pytest.approx(3.0)
    # Without streaming everything shows at once, at the end: no wait after it, and one step.
    assert visible_steps(trace, streaming=False) == [(5.0, 75)]
    assert reader_wait_s(visible_steps(trace, streaming=False)) == 0.0


# -- the verdict --------------------------------------------------------------------------------


def test_the_verdicts_fields_follow_from_the_two_traces():
    budget = LatencyBudget()
    streamed = trace_of([300 * MS, 400 * MS, 3200 * MS], ["x" * 25] * 3)
    whole = trace_of([250 * MS, 350 * MS, 3100 * MS], ["x" * 25] * 3)
    a = side_facts("A", "not streaming", whole, False, budget)
    b = side_facts("B", "streaming", streamed, True, budget)
    assert (a.first_text_s, a.finished_s) == (pytest.approx(3.1), pytest.approx(3.1))  # E2E: all at once
    assert (b.first_text_s, b.finished_s) == (pytest.approx(0.3), pytest.approx(3.2))
    assert b.ttft_s == streamed.metrics().ttft_s and b.tpot_s == streamed.metrics().tpot_s
    verdict = make_verdict(a, b)
    assert verdict.text_first == "B" and verdict.text_first_by_s == pytest.approx(2.8)
    assert verdict.finished_first == "A" and verdict.finished_first_by_s == pytest.approx(0.1)
    assert verdict.sentence.startswith(
        "B (streaming) showed text 2.8 s sooner; A (not streaming) finished 0.10 s sooner; nothing in B's own "
        "measurements slowed it: the difference is its configuration (streaming); while B streamed"
    )
    # B's reader read 25 characters in 1 s after 0.3 s, then waited for the third token from 1.3 s to 3.2 s.
    assert b.reader_wait_s == pytest.approx(3.2 - (0.3 + 50 / READING_CHARS_PER_S))


def test_moments_closer_than_a_person_can_feel_are_called_the_same():
    budget = LatencyBudget()
    a = side_facts("A", "native", trace_of([500 * MS, 600 * MS]), True, budget)
    b = side_facts("B", "float32", trace_of([510 * MS, 3 * S]), True, budget)
    verdict = make_verdict(a, b)
    assert verdict.text_first == "A" and verdict.text_first_by_s == pytest.approx(0.01)
    assert "at about the same moment (10 ms apart)" in verdict.sentence
    assert "A (native) finished 2.4 s sooner" in verdict.sentence


def test_the_verdict_says_why_the_slower_side_was_slower_from_its_own_diagnosis():
    budget = LatencyBudget()
    fast = trace_of([100 * MS, 200 * MS, 300 * MS, 400 * MS, 500 * MS, 600 * MS])
    slow = trace_of([100 * MS, 400 * MS, 700 * MS, 1000 * MS, 1300 * MS, 1600 * MS])
    slow.record(CpuUsage(0.6, 1.5, 2))  # its threads got a fifth of their cores
    verdict = make_verdict(side_facts("A", "native", fast, True, budget), side_facts("B", "busy", slow, True, budget))
    assert verdict.b.slowed_by == "Other programs took 80% of the CPU during this reply: its TPOT is not the model's."
    assert "A (native) finished 1.0 s sooner; why B was slower: Other programs took 80% of the CPU" in verdict.sentence
    assert verdict.to_dict()["b"]["slowed_by"] == verdict.b.slowed_by


# -- the sides ----------------------------------------------------------------------------------


def test_sides_take_the_common_options_names_and_switches_take_on_or_off():
    base = RaceSide("A", settings=RaceSide("A").settings)
    a = parse_side("A", ["streaming=on", "max_new_tokens=32", "dtype=float32"], base)
    b = parse_side("B", ["streaming=off", "prompt_cache=off", "temperature=0.7", "seed=3", "top_p=0.9"], base)
    assert (a.streaming, a.settings.max_new_tokens, a.dtype) == (True, 32, "float32")
    assert (b.streaming, b.settings.prompt_cache, b.settings.temperature, b.settings.seed) == (False, False, 0.7, 3)
    assert labels(a, b) == ("streaming, float32", "not streaming, native")
    server = parse_side("B", ["model=http://127.0.0.1:8080/v1", "served_model=tiny", "protocol=openai"], base)
    assert server.remote and server.model == "http://127.0.0.1:8080/v1#model=tiny&protocol=openai"


@pytest.mark.parametrize(
    "pairs, says",
    [
        (["streaming=yes"], "streaming takes on or off"),
        (["colour=blue"], "unknown key 'colour'"),
        (["streaming"], "takes KEY=VALUE pairs"),
        (["streaming=on", "streaming=off"], "gives streaming twice"),
        (["max_new_tokens=0"], "max new tokens must be a whole number from 1"),
        (["temperature=hot"], "temperature must be a number"),
        (["temperature=0.0001"], r"temperature must be 0 \(greedy\) or at least"),
        (["dtype=float64"], "dtype must be one of"),
        (["model=http://127.0.0.1:8080/v1", "protocol=grpc"], "protocol must be one of"),
        (["speculation=medusa"], "speculation must be one of"),
        (["speculation=ngram", "draft_tokens=0"], "draft tokens must be a whole number from 1"),
    ],
)
def test_bad_settings_are_refused_in_one_line_naming_the_side(pairs, says):
    with pytest.raises(InvalidSettingsError, match=says) as refused:
        parse_side("B", pairs)
    assert "\n" not in str(refused.value) and ("B" in str(refused.value) or "--b" in str(refused.value))


@pytest.mark.parametrize(
    "a_pairs, b_pairs, live, says",
    [
        ([], ["model=http://127.0.0.1:8080/v1", "dtype=float32"], False, "dtype applies only to a local model"),
        (["served_model=tiny"], [], False, "served_model applies only with a server URL"),
        ([], ["streaming=off"], True, "both are local models"),
        ([], ["model=http://127.0.0.1:8080/v1", "speculation=ngram"], False, "speculation applies only to a local"),
    ],
)
def test_clashing_settings_are_refused_in_one_line(a_pairs, b_pairs, live, says):
    a, b = parse_side("A", a_pairs), parse_side("B", b_pairs)
    with pytest.raises(InvalidSettingsError, match=says):
        check_race(a, b, live)


def test_speculation_on_against_off_is_what_sets_the_sides_apart():
    a, b = parse_side("A", ["speculation=ngram", "draft_tokens=3"]), parse_side("B", ["speculation=off"])
    assert a.settings.speculation == "ngram" and a.settings.draft_tokens == 3 and b.settings.speculation == "off"
    assert labels(a, b) == ("speculation (ngram, 3 drafts)", "no speculation")
    drafted = parse_side("A", ["draft_model=/models/small.gguf"])  # a draft model given is speculation asked for
    assert drafted.settings.speculation == "draft" and drafted.settings.draft_model == "/models/small.gguf"
    assert labels(drafted, b)[0] == f"speculation (draft model small.gguf, {int(DRAFT_TOKENS.default)} drafts)"


def test_a_live_race_of_a_local_model_against_a_server_is_allowed():
    check_race(parse_side("A", []), parse_side("B", ["model=http://127.0.0.1:8080/v1"]), live=True)


# -- the file -----------------------------------------------------------------------------------


def hand_made_result(stopped: bool = False) -> RaceResult:
    a, b = parse_side("A", ["streaming=on"]), parse_side("B", ["streaming=off"])
    result = RaceResult(RaceConfig("Why?", a, b), SideRun(a), SideRun(b))
    result.a.trace = trace_of([300 * MS, 341 * MS, 402 * MS], ["Hel", "lo", "!"], start_ns=7 * S)
    if stopped:
        result.b.trace = trace_of([280 * MS], ["Hel"], start_ns=9 * S, stop=StopReason.STOPPED)
        result.stopped, result.stopped_during = True, "B"
    else:
        result.b.trace = trace_of([280 * MS, 333 * MS, 390 * MS], ["Hel", "lo", "!"], start_ns=9 * S)
    return result


def test_a_race_file_opens_again_with_each_sides_own_token_times_and_the_same_verdict():
    result = hand_made_result()
    record = read_race(race_json(result).encode("utf-8"))
    assert record.a.trace.timestamps_ns == result.a.trace.timestamps_ns
    assert record.b.trace.token_times_s() == result.b.trace.token_times_s()
    assert record.verdict.sentence == result.verdict().sentence
    assert (record.a.streaming, record.b.streaming) == (True, False)
    document = json.loads(race_json(result))
    for side in ("a", "b"):  # ask --json's fields, the waterfall and the budget, per side
        assert {"ttft_s", "tpot_s", "e2e_s", "token_times_s", "waterfall", "budget", "text"} <= set(document[side])
    assert document["verdict"]["text_first"] == result.verdict().text_first


def test_playback_keeps_each_traces_own_token_times():
    result = hand_made_result()
    for run in result.sides:
        track = Track.of(run.trace, run.side.streaming)
        assert track.times_s == tuple(run.trace.token_times_s())  # seconds since its own Send, unchanged
        assert [track.due(at) for at in track.times_s] == [1, 2, 3]
        assert track.due(track.times_s[0] - 1e-9) == 0
    streamed, whole = (Track.of(run.trace, run.side.streaming) for run in result.sides)
    assert streamed.shown_text(2) == "Hello" and whole.shown_text(2) == "" and whole.shown_text(3) == "Hello!"


def test_a_stopped_race_keeps_what_ran_and_says_so_in_its_file():
    result = hand_made_result(stopped=True)
    assert result.verdict() is None
    assert result.status_line.startswith("stopped during B: what ran is kept (A finished; B stopped after 1 token)")
    document = json.loads(race_json(result))
    assert document["stopped"] is True and document["verdict"] is None
    assert document["a"]["output_tokens"] == 3 and document["b"]["stop_reason"] == "stopped"
    record = read_race(race_json(result).encode("utf-8"))
    assert record.stopped and record.verdict is None and record.a.trace.output_tokens == 3


@pytest.mark.parametrize(
    "data, says",
    [
        (b"\xff\xfe", "not JSON"),
        (b'{"format": "latencylab-trace/1"}', "not a Latency Lab race"),
        (b'{"format": "latencylab-race/1"}', "config is missing"),
    ],
)
def test_bad_race_files_are_refused_saying_why(data, says):
    with pytest.raises(RaceFileError, match=says):
        read_race(data)


def test_a_race_file_with_a_damaged_trace_is_refused_naming_the_field():
    document = json.loads(race_json(hand_made_result()))
    document["b"]["trace"]["timestamps_ns"] = "soon"
    with pytest.raises(RaceFileError, match="b.trace.timestamps_ns"):
        read_race(json.dumps(document).encode("utf-8"))


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            yield from _paths(item, (*path, index))


def test_every_field_of_a_race_file_of_the_wrong_type_is_refused_or_read_never_a_crash():
    document = json.loads(race_json(hand_made_result()))
    skipped = {("definitions",)}
    for path in _paths(document):
        if path[:1] in skipped or not path:
            continue
        for wrong in (None, 1.5, -1, "x", [], {}, True, [1.5], {"a": 1}):
            changed = json.loads(json.dumps(document))
            parent = changed
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = wrong
            with contextlib.suppress(RaceFileError):
                read_race(json.dumps(changed).encode("utf-8"))
