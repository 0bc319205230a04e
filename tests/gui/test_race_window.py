"""The race window: a race played back on each side's own token times, a race stopped midway, a race file opened
again from File → Replay; and the chat's budget: each reply marked, "N of M replies within budget", the history
plot and the export carrying it."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from core.chats.record import ReplyRecord
from core.chats.reply_context import ReplyContext
from core.race.config import RaceConfig
from core.race.document import race_json
from core.race.runner import RaceResult, SideRun
from core.race.sides import parse_side
from core.settings import LatencyBudget
from core.timing.events import FinishedEvent, StopReason, TokenEvent
from core.timing.reading import visible_steps
from core.timing.trace import ReplyTrace
from gui.race.race_controller import RaceState

RACE_TIMEOUT_MS = 600_000
MS = 1_000_000


def trace_of(stamps_ms: list[int], texts: list[str], start_ns: int = 0) -> ReplyTrace:
    trace = ReplyTrace(request_start_ns=start_ns, prompt_tokens=9)
    for index, (text, at) in enumerate(zip(texts, stamps_ms)):
        trace.record(TokenEvent(index, index, text, start_ns + at * MS))
    trace.record(FinishedEvent(StopReason.EOS, len(texts), start_ns + stamps_ms[-1] * MS + 1))
    return trace


def set_up_race(race, prompt: str, a: dict, b: dict) -> None:
    race.prompt_box.setText(prompt)
    for form, values in ((race.form_a, a), (race.form_b, b)):
        form.dtype_box.setCurrentText("float32")  # the window fixture's model: the race loads nothing more
        form.max_new_tokens.setValue(values.get("max_new_tokens", 6))
        form.streaming.setChecked(values.get("streaming", True))


def test_a_race_plays_both_sides_back_from_send_each_on_its_own_token_times(qtbot, window):
    race = window.open_race()
    set_up_race(race, "Name three colours of the rainbow.", {"streaming": True}, {"streaming": False})
    with qtbot.waitSignal(race.race_shown, timeout=RACE_TIMEOUT_MS) as shown:
        race.run()
    record = shown.args[0]
    assert record.verdict is not None and race.controller.state is RaceState.PLAYBACK
    assert race.banner.text().startswith("PLAYBACK of measured runs")
    assert race.pane_a.interval_plot.getPlotItem().titleLabel.text.startswith("PLAYBACK")
    for pane, side in ((race.pane_a, record.a), (race.pane_b, record.b)):
        # The curve steps where the recorded reply showed text: each token's own time (A), or all at E2E (B).
        assert pane.step_times_s() == [at for at, _ in visible_steps(side.trace, side.streaming)]
        assert pane.shown_text() == side.trace.text
        assert pane.budget_label.text()  # within or over budget, in words
    assert race.pane_b.step_times_s() == [record.b.trace.metrics().e2e_s]
    assert record.verdict.sentence in race.verdict.sentence and "Verdict:" in race.verdict.text()
    assert "replies within budget" in race.verdict.text() or "reply within budget" in race.verdict.text()


def test_a_race_stopped_midway_in_the_window_keeps_what_ran_and_says_so(qtbot, window):
    race = window.open_race()
    set_up_race(race, "Tell me a long story about a lighthouse.", {"max_new_tokens": 8}, {"max_new_tokens": 200})

    def stop_when_b_speaks(side, event):
        if side == "B" and isinstance(event, TokenEvent):
            race.stop()

    race.controller.races.event_arrived.connect(stop_when_b_speaks)
    with qtbot.waitSignal(race.race_shown, timeout=RACE_TIMEOUT_MS) as shown:
        race.run()
    record = shown.args[0]
    assert record.stopped and record.verdict is None
    assert record.a.trace.stop_reason in ("eos", "max_tokens") and record.b.trace.stop_reason == "stopped"
    assert race.banner.text().startswith("NO VERDICT")
    assert "No verdict: stopped during B: what ran is kept" in race.verdict.text()
    assert race.pane_a.shown_text() == record.a.trace.text  # A's whole run, as measured
    assert not race.play_button.isEnabled() and race.export_button.isEnabled()


def hand_made_race() -> RaceResult:
    a, b = parse_side("A", ["streaming=on"]), parse_side("B", ["streaming=off"])
    result = RaceResult(RaceConfig("Why?", a, b), SideRun(a), SideRun(b))
    result.a.trace = trace_of([120, 160, 200], ["Hel", "lo", "!"], start_ns=5_000 * MS)
    result.b.trace = trace_of([100, 150, 190], ["Hel", "lo", "!"], start_ns=9_000 * MS)
    return result


def test_a_race_file_opens_again_from_replay_and_plays_back(qtbot, bare_window, tmp_path):
    path = tmp_path / "race.json"
    path.write_text(race_json(hand_made_race()), encoding="utf-8")
    race = bare_window.open_replay(path)
    assert race is not None and race.windowTitle().startswith("Race")
    with qtbot.waitSignal(race.race_shown, timeout=10_000):
        pass
    assert race.banner.text().startswith("PLAYBACK")
    assert race.pane_a.step_times_s() == pytest.approx([0.12, 0.16, 0.2])
    assert race.pane_b.step_times_s() == pytest.approx([0.19])
    assert race.pane_a.shown_text() == race.pane_b.shown_text() == "Hello!"
    assert race.verdict.sentence.startswith("A (streaming) showed text 70 ms sooner")
    again = tmp_path / "again.json"
    race.controller.export_race(again)
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    broken = json.loads(path.read_text(encoding="utf-8"))
    broken["a"]["trace"]["token_texts"] = [1, 2, 3]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken), encoding="utf-8")
    assert bare_window.open_replay(bad) is None
    assert "Cannot replay bad.json: a.trace.token_texts must hold only text" in bare_window.statusBar().currentMessage()
    race.close()
    assert not race.controller.frame_timer.isActive()


def test_a_race_file_stopped_before_b_ran_opens_whole_with_no_verdict(qtbot, bare_window, tmp_path):
    """B never ran, so there is nothing to play back: the race is drawn as it ended, and no clock runs on."""
    from gui.race.launch import race_window

    result = hand_made_race()
    result.b.trace, result.stopped, result.stopped_during = None, True, "A"
    path = tmp_path / "stopped.json"
    path.write_text(race_json(result), encoding="utf-8")
    race = race_window(bare_window)
    with qtbot.waitSignal(race.race_shown, timeout=10_000) as shown:
        assert bare_window.open_replay(path) is race
    assert shown.args[0].verdict is None
    assert race.banner.text().startswith("NO VERDICT")
    assert race.pane_a.shown_text() == "Hello!" and race.pane_b.state_label.text() == "not run"
    assert not race.controller.frame_timer.isActive() and not race.stop_button.isEnabled()
    assert not race.play_button.isEnabled() and race.export_button.isEnabled()
    race.close()


def test_the_chat_marks_each_reply_against_the_budget_and_tallies_them(qtbot, bare_window, tmp_path):
    meter = bare_window.meter
    bare_window.budget_keeper.set_budget(LatencyBudget(1.0, 0.18))
    quick = trace_of([200, 300, 400], ["a", "b", "c"])
    slow = trace_of([1500, 1600, 1700], ["a", "b", "c"])  # text after 1.5 s: over a 1 s budget
    for trace in (quick, slow, quick):
        bare_window.saved_chats.records.append(ReplyRecord(trace, ReplyContext(streaming=True)))
        meter.add_history(trace, streaming=True)
    meter.refresh()
    assert meter.budget_line.tally == "2 of 3 replies within budget"
    assert meter.history_plot.over_budget_points == 1
    bare_window.budget_keeper.set_budget(LatencyBudget(2.0, 0.18))  # the same replies judged again
    assert meter.budget_line.tally == "3 of 3 replies within budget" and meter.history_plot.over_budget_points == 0
    path = tmp_path / "traces.json"
    bare_window.export_traces_json(path)
    exported = json.loads(path.read_text(encoding="utf-8"))
    assert exported["budget"]["line"] == "3 of 3 replies within budget" and exported["budget"]["ttft_s"] == 2.0
    assert [reply["budget"]["within"] for reply in exported["replies"]] == [True, True, True]


def test_a_real_reply_in_the_chat_is_marked_and_counted(qtbot, window):
    window.budget_keeper.set_budget(LatencyBudget(3600.0, 60.0))  # within, however loaded the machine is
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, "Say hello.")
    with qtbot.waitSignal(window.reply_finished, timeout=RACE_TIMEOUT_MS):
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    assert "[within budget: text after" in window.chat_panel.transcript.toPlainText()
    assert window.meter.budget_line.tally == "1 of 1 reply within budget"


@pytest.mark.model
@pytest.mark.engine_process
def test_a_race_runs_in_the_engine_process_as_the_app_runs_it(qtbot, open_window):
    """Requests and the race's events cross the process boundary as plain data; closing mid-race leaves nothing."""
    window = open_window()
    with qtbot.waitSignal(window.model_ready, timeout=RACE_TIMEOUT_MS):
        window.start_loading("embedded", "native")
    race = window.open_race()
    race.prompt_box.setText("Name three colours of the rainbow.")
    for form, streaming in ((race.form_a, True), (race.form_b, False)):
        form.dtype_box.setCurrentText("native")
        form.max_new_tokens.setValue(4)
        form.streaming.setChecked(streaming)
    with qtbot.waitSignal(race.race_shown, timeout=RACE_TIMEOUT_MS) as shown:
        race.run()
    record = shown.args[0]
    assert record.verdict is not None and record.a.trace.text == record.b.trace.text
    assert race.pane_b.step_times_s() == [record.b.trace.metrics().e2e_s]
    race.form_b.max_new_tokens.setValue(200)
    with qtbot.waitSignal(race.controller.races.started, timeout=RACE_TIMEOUT_MS):
        race.run()
    window.close()  # mid-race: the race window stops its clock, the engine ends
    assert not race.controller.frame_timer.isActive() and not window.models.engine.alive


def test_the_budget_persists_and_a_bad_saved_one_falls_back_to_the_defaults(bare_window):
    from gui.settings.budget_store import BudgetKeeper, load_budget, open_settings

    bare_window.budget_keeper.set_budget(LatencyBudget(0.5, 0.05))
    assert load_budget() == LatencyBudget(0.5, 0.05) and BudgetKeeper().budget == LatencyBudget(0.5, 0.05)
    store = open_settings()
    store.setValue("budget_ttft_s", "-3")
    store.sync()
    assert load_budget() == LatencyBudget()


def test_a_race_after_the_chats_history_reuses_it_with_the_prompt_cache_on(qtbot, window):
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, "Tell me one fact about the sea.")
    with qtbot.waitSignal(window.reply_finished, timeout=RACE_TIMEOUT_MS):
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    race = window.open_race()
    assert race.history_check.isEnabled() and race.history_check.text() == "after this chat's 2 messages"
    race.history_check.setChecked(True)
    set_up_race(race, "And one about mountains?", {"max_new_tokens": 4}, {"max_new_tokens": 4})
    race.form_a.prompt_cache.setChecked(True)
    race.form_b.prompt_cache.setChecked(False)
    with qtbot.waitSignal(race.race_shown, timeout=RACE_TIMEOUT_MS) as shown:
        race.run()
    record = shown.args[0]
    assert record.config.history == tuple((m.role, m.content) for m in window.session.messages)
    a, b = record.a.trace, record.b.trace
    assert a.prompt_tokens == b.prompt_tokens and a.cached_tokens > 0 and b.cached_tokens == 0
    assert "held the shared history" in race.pane_a.notes_label.text()


def test_esc_hides_the_race_window_and_stops_its_race(qtbot, window):
    """A race left running behind a hidden window made the chat's next reply wait seconds for the engine."""
    race = window.open_race()
    set_up_race(race, "Tell me a long story about a lighthouse.", {"max_new_tokens": 200}, {"max_new_tokens": 200})

    def escape_when_a_speaks(side, event):
        if side == "A" and isinstance(event, TokenEvent) and race.isVisible():
            qtbot.keyClick(race, Qt.Key.Key_Escape)

    race.controller.races.event_arrived.connect(escape_when_a_speaks)
    with qtbot.waitSignal(race.race_shown, timeout=RACE_TIMEOUT_MS) as shown:
        race.run()
    record = shown.args[0]
    assert not race.isVisible() and record.stopped and record.a.trace.stop_reason == "stopped"
    assert not race.controller.running
