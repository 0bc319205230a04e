"""The chat window on the real embedded model, driven as a user would: keyboard, buttons, toggle."""

import json
import time

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication

from core.timing.trace import ReplyTrace

pytestmark = pytest.mark.model
REPLY_TIMEOUT_MS = 120_000


def ask(qtbot, window, text, max_new_tokens=24):
    window.chat_panel.settings_panel.max_new_tokens.setValue(max_new_tokens)
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, text)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


def test_input_has_focus_and_shift_enter_adds_a_line(qtbot, window):
    assert window.focusWidget() is window.chat_panel.input_box
    qtbot.keyClicks(window.chat_panel.input_box, "line one")
    qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.chat_panel.input_box, "line two")
    assert window.chat_panel.input_box.toPlainText() == "line one\nline two"
    assert not window.generating


def test_streaming_reply_grows_token_by_token_and_cards_equal_core_metrics(qtbot, window):
    window.chat_panel.streaming_toggle.setChecked(True)
    changes = []
    window.chat_panel.transcript.textChanged.connect(lambda: changes.append(window.generating))
    trace = ask(qtbot, window, "Write three sentences about the sea.", max_new_tokens=30)
    assert isinstance(trace, ReplyTrace) and trace.output_tokens >= 10
    assert sum(changes) >= 5  # changes seen while the reply was still being generated
    assert trace.text.strip() and trace.text.strip()[:20] in window.chat_panel.transcript.toPlainText()

    plot = window.meter.interval_plot
    assert len(plot.ttft_item.getData()[0]) == 1
    assert len(plot.interval_item.getData()[0]) == trace.output_tokens - 1
    # One marker per gap, added frame by frame, each at its gap's height on the log axis.
    itl_ms = [gap * 1000 for gap in trace.metrics().itl_s]
    markers = plot.marker_item.getData()
    assert plot.marker_count() == len(itl_ms) == len(markers[0])
    assert list(markers[0]) == list(range(1, trace.output_tokens))
    assert [10**y for y in markers[1]] == pytest.approx(itl_ms, rel=1e-9)
    metrics = trace.metrics()
    cards = window.meter.cards.cards
    assert cards["ttft"].value == metrics.ttft_s and cards["tpot"].value == metrics.tpot_s
    assert cards["e2e"].value == metrics.e2e_s and cards["tokens"].value == metrics.output_tokens
    assert cards["tok_s"].value == metrics.decode_tok_s and cards["prefill"].value == metrics.prefill_tok_s
    assert cards["waited"].value == metrics.ttft_s
    assert cards["ttft"].text() == f"{metrics.ttft_s * 1000:.1f} ms"
    assert "request start to the first generated token" in cards["ttft"].toolTip()
    # The reply against this machine's ceilings (or a note saying how to measure them): its FLOPs and bytes.
    assert f"for {trace.prompt_tokens:,} tokens" in cards["ttft"].toolTip()
    assert "This reply's decode reads" in cards["tpot"].toolTip() and "a token" in cards["tok_s"].toolTip()


def test_non_streaming_reply_appears_at_once_with_a_live_indicator(qtbot, window):
    window.chat_panel.streaming_toggle.setChecked(False)
    indicator_texts = []
    window.frame_timer.timeout.connect(
        lambda: indicator_texts.append((window.chat_panel.indicator.isVisible(), window.chat_panel.indicator.text()))
    )
    seen_while_generating = []
    window.replies.token_received.connect(
        lambda _: seen_while_generating.append(window.chat_panel.transcript.toPlainText())
    )
    trace = ask(qtbot, window, "Name two planets.", max_new_tokens=20)
    # The user's turn and the reply header are drawn on Send; then nothing changes until the reply is done.
    assert len(seen_while_generating) == trace.output_tokens
    assert len(set(seen_while_generating)) == 1
    assert seen_while_generating[0].rstrip().endswith("Assistant")
    assert trace.text.strip().splitlines()[0] in window.chat_panel.transcript.toPlainText()
    assert any(visible and text.startswith("generating…") and "tokens" in text for visible, text in indicator_texts)
    assert not window.chat_panel.indicator.isVisible()
    assert window.meter.cards.cards["waited"].value == trace.metrics().e2e_s
    saw = window.meter.visible_plot.current_item.getData()[1]
    assert max(saw) == len(trace.text) and sorted(set(saw)) == [0, len(trace.text)]


def test_stop_halts_within_one_token(qtbot, window):
    window.chat_panel.settings_panel.max_new_tokens.setValue(400)

    pressed = []

    def stop_at_fifth(delivered):
        if delivered.event.index == 4:
            window.stop_generation()  # the in-process engine sets the reply's stop event right here
            pressed.append(time.perf_counter_ns())

    window.replies.token_received.connect(stop_at_fifth)
    qtbot.keyClicks(window.chat_panel.input_box, "Tell me a very long story about a castle.")
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    trace = blocker.args[0]
    # The window sees a token a moment after the engine made it; at most one more is made after the stop.
    assert trace.stop_reason == "stopped" and trace.output_tokens >= 5
    assert sum(stamp > pressed[0] for stamp in trace.timestamps_ns) <= 1
    assert "[stopped by you]" in window.chat_panel.transcript.toPlainText()


def test_escape_stops_generation(qtbot, window):
    window.chat_panel.settings_panel.max_new_tokens.setValue(400)
    qtbot.keyClicks(window.chat_panel.input_box, "Count from one to one hundred in words.")
    with qtbot.waitSignal(window.replies.token_received, timeout=REPLY_TIMEOUT_MS):
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Escape)
    assert blocker.args[0].stop_reason == "stopped" and blocker.args[0].output_tokens < 400


def test_regenerate_replaces_the_last_reply_and_new_chat_clears(qtbot, window):
    ask(qtbot, window, "Say hi.", max_new_tokens=8)
    assert window.chat_panel.transcript.toPlainText().count("Assistant") == 1
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS):
        qtbot.mouseClick(window.chat_panel.regenerate_button, Qt.MouseButton.LeftButton)
    # The chat's views count the reply that replaced the first, not both (reopened, the chat has the one)
    assert window.meter.budget_line.tally.endswith("of 1 reply within budget")
    assert len(window.meter.cache_map.rows) == 1
    assert window.chat_panel.transcript.toPlainText().count("Assistant") == 1
    assert window.chat_panel.transcript.toPlainText().count("Say hi.") == 1
    assert [m.role for m in window.session.messages] == ["user", "assistant"]
    assert len(window.saved_chats.records) == 1  # the replaced reply left the chat's record too
    replaced_chat = window.saved_chats.current_chat_id
    qtbot.mouseClick(window.chat_panel.new_chat_button, Qt.MouseButton.LeftButton)
    assert window.chat_panel.transcript.toPlainText() == "" and window.session.messages == []
    assert window.saved_chats.open_chat(
        replaced_chat
    )  # reopened, it still counts one reply, as it did before the switch
    assert window.meter.budget_line.tally.endswith("of 1 reply within budget")
    assert len(window.meter.cache_map.rows) == 1 and len(window.saved_chats.records) == 1


def test_streaming_toggle_survives_a_restart(qtbot, window, open_window):
    window.chat_panel.streaming_toggle.setChecked(True)
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    assert not window.chat_panel.streaming_toggle.isChecked()
    window.close()
    reopened = open_window(show=False)
    assert not reopened.chat_panel.streaming_toggle.isChecked()


def close_mid_reply(qtbot, window) -> float:
    """Close the window while a long reply streams; the seconds close() took."""
    window.chat_panel.settings_panel.max_new_tokens.setValue(400)
    qtbot.keyClicks(window.chat_panel.input_box, "Tell me a long story.")
    with qtbot.waitSignal(window.replies.token_received, timeout=REPLY_TIMEOUT_MS):
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    assert window.generating
    started = time.monotonic()
    window.close()
    return time.monotonic() - started


def test_closing_during_generation_stops_the_reply_and_the_engine(qtbot, window, qtlog):
    engine = window.models.engine
    close_mid_reply(qtbot, window)
    assert not engine.alive and engine.core.close(30)  # the stop reached the reply, whose job then ended
    assert not any("Destroyed while thread" in record.message for record in qtlog.records)


@pytest.mark.timing
def test_closing_during_generation_takes_under_2s(qtbot, window):
    assert close_mid_reply(qtbot, window) < 2.0


@pytest.mark.timing
def test_event_loop_never_stalls_during_generation(qtbot, window):
    gaps, last = [], [time.perf_counter()]

    def probe():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(probe)
    timer.start()
    try:
        ask(qtbot, window, "Explain what a CPU cache is.", max_new_tokens=40)
    finally:
        timer.stop()
    assert len(gaps) > 20
    assert max(gaps) < 0.250


def test_markdown_is_rendered_with_monospaced_code_and_reply_can_be_copied(qtbot, window):
    window.session.add_user("code please")
    window.session.add_assistant("Here:\n\n```python\nprint('hi')\n```\n\n**bold** text")
    window.chat_panel.transcript.add_user_turn("code please")
    window.chat_panel.transcript.begin_assistant_turn()
    window.chat_panel.transcript.finish_assistant_turn(window.session.messages[1].content, 1)
    document = window.chat_panel.transcript.document()
    block = document.begin()
    code_fonts = []
    while block.isValid():
        if "print('hi')" in block.text():
            fragment_format = block.begin().fragment().charFormat()
            code_fonts.append(fragment_format.fontFixedPitch() or "monospace" in (fragment_format.fontFamilies() or []))
        block = block.next()
    assert code_fonts and all(code_fonts)
    assert (
        "**" not in window.chat_panel.transcript.toPlainText()
        and "bold text" in window.chat_panel.transcript.toPlainText()
    )
    window.chat_panel.transcript.copy_requested.emit(1)
    assert QGuiApplication.clipboard().text() == window.session.messages[1].content


def test_exports_hold_the_chat_traces(qtbot, window, tmp_path):
    trace = ask(qtbot, window, "Say yes.", max_new_tokens=6)
    window.export_traces_json(tmp_path / "t.json")
    window.export_traces_csv(tmp_path / "t.csv")
    assert window.export_plots_png(tmp_path / "p.png")
    document = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert document["replies"][0]["output_tokens"] == trace.output_tokens
    assert document["replies"][0]["streaming"] is True and "tpot_s" in document["definitions"]
    assert document["replies"][0]["waterfall"]["segments"][0]["name"] == "prepare"
    assert str(tmp_path) not in (tmp_path / "t.json").read_text(encoding="utf-8")
    rows = [line for line in (tmp_path / "t.csv").read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert (
        rows[0] == "turn,index,token_id,text,t_s,interval_s,delivery_s,chunk,reasoning"
        and len(rows) >= trace.output_tokens + 1
    )
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_decode_loop_choice_shows_runs_is_exported_and_survives_a_restart(qtbot, window, open_window, tmp_path):
    box = window.chat_panel.settings_panel.decode_loop_box
    assert box.currentText() == "lean" and "lean decode loop" in window.model_label.text()
    lean = ask(qtbot, window, "Say yes.", max_new_tokens=6)
    box.setCurrentText("generate")
    assert "generate() loop" in window.model_label.text()
    window.new_chat()
    plain = ask(qtbot, window, "Say yes.", max_new_tokens=6)
    assert plain.token_ids == lean.token_ids  # greedy: both loops give the same reply
    window.export_traces_json(tmp_path / "t.json")
    document = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert [reply["decode_loop"] for reply in document["replies"]] == ["generate"]
    assert document["replies"][0]["settings"]["decode_loop"] == "generate"
    window.close()
    reopened = open_window(show=False)
    assert reopened.chat_panel.settings_panel.decode_loop_box.currentText() == "generate"


def test_loading_runs_behind_the_window_and_a_failure_keeps_the_old_model(qtbot, window, tmp_path):
    previous = window.ready
    with qtbot.waitSignal(window.model_failed, timeout=60_000):
        window.start_loading(str(tmp_path / "nowhere"), "float32")
    assert "Could not load the model" in window.chat_panel.settings_panel.load_message.text()
    assert window.ready is previous and window.chat_panel.send_button.isEnabled()
    with qtbot.waitSignal(window.model_ready, timeout=120_000):
        window.start_loading("embedded", "bfloat16")
    label = window.model_label.text()
    assert "135M params" in label and "bfloat16" in label and "269 MB weights" in label and "cpu" in label
    trace = ask(qtbot, window, "Say hello.", max_new_tokens=5)
    assert trace.output_tokens >= 1


def test_the_model_line_fits_the_status_bar_and_says_the_rest_in_its_tooltip(qtbot, window):
    """On a 1B file at the default width the line was cut mid-word at the window's edge ("… (512 MiB) c"): a label
    as wide as its text. The line now takes the room the status bar has, cut with '…', whole in its tooltip."""
    label = window.model_label
    assert "params" in label.text() and label.toolTip().startswith(label.text())
    least = window.minimumSizeHint().width()
    long_line = " · ".join(f"fact {index}" for index in range(300))
    label.setText(long_line)
    assert window.minimumSizeHint().width() == least  # a longer line never widens the window
    shown = label.fontMetrics().elidedText(long_line, Qt.TextElideMode.ElideRight, label.width())
    assert shown.endswith("…") and 0 < label.width() <= window.statusBar().width()
