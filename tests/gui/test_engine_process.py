"""The window with its engine in a separate process, as the app runs it: replies, Stop, Regenerate, the lab, faults."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from child_processes import children

from core.chats.session import Message
from core.generation.request import ReplyRequest, prepare_reply
from core.settings import GenerationSettings

pytestmark = [pytest.mark.model, pytest.mark.engine_process]
TIMEOUT_MS = 180_000
DRIVER = Path(__file__).resolve().parents[1] / "support" / "app_driver.py"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def engine_window(qtbot, open_window):
    window = open_window()
    with qtbot.waitSignal(window.model_ready, timeout=TIMEOUT_MS):
        window.start_loading("embedded", "float32")
    yield window
    engine_pid = window.models.engine.pid
    window.close()
    assert not psutil.pid_exists(engine_pid) or psutil.Process(engine_pid).status() == psutil.STATUS_ZOMBIE
    assert children() == []  # closing leaves no child process


def ask(qtbot, window, text, max_new_tokens=12):
    window.chat_panel.settings_panel.max_new_tokens.setValue(max_new_tokens)
    window.chat_panel.input_box.setPlainText(text)
    with qtbot.waitSignal(window.reply_finished, timeout=TIMEOUT_MS) as finished:
        window.send_message()
    return finished.args[0]


def in_process_reply(loaded, text, max_new_tokens=12):
    generation, _ = prepare_reply(
        loaded, ReplyRequest("", (Message("user", text),), GenerationSettings(max_new_tokens=max_new_tokens))
    )
    return generation.run_to_end()


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
def test_a_reply_through_the_engine_process_is_the_in_process_greedy_reply(
    qtbot, engine_window, embedded_model, streaming
):
    engine_window.chat_panel.streaming_toggle.setChecked(streaming)
    trace = ask(qtbot, engine_window, "Name three colours.")
    expected = in_process_reply(embedded_model, "Name three colours.")
    assert trace.token_ids == expected.token_ids and trace.text == expected.text
    assert engine_window.models.engine.pid != os.getpid()
    # Two stamps per token: the engine's put() and the window's arrival, on one clock.
    delays = trace.delivery_delays_s()
    assert len(delays) == trace.output_tokens and all(delay >= 0 for delay in delays)
    delivery = engine_window.meter.cards.cards["delivery"]
    assert delivery.text() != "–" and "p95" in delivery.toolTip()  # the engine → window delay is shown
    shown = engine_window.chat_panel.transcript.toPlainText()
    assert all(word in shown for word in trace.text.split()[-3:])  # rendered as Markdown, so compare words


def test_stop_and_regenerate_through_the_engine_process(qtbot, engine_window):
    engine_window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    engine_window.chat_panel.input_box.setPlainText("Tell me a long story about the sea.")
    engine_window.replies.token_received.connect(engine_window.stop_generation)
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as finished:
        engine_window.send_message()
    engine_window.replies.token_received.disconnect(engine_window.stop_generation)
    assert finished.args[0].stop_reason == "stopped" and finished.args[0].output_tokens <= 3
    engine_window.chat_panel.settings_panel.max_new_tokens.setValue(6)
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as again:
        engine_window.regenerate()
    assert again.args[0].output_tokens >= 1
    assert [m.role for m in engine_window.session.messages] == ["user", "assistant"]


def test_a_lab_sweep_runs_in_the_engine_process(qtbot, engine_window):
    lab = engine_window.lab_tab
    for sweep in ("bandwidth", "precision", "batch"):
        lab.form.sweep_boxes[sweep].setChecked(False)
    lab.form.prompt_words_edit.setText("5")
    lab.form.new_tokens_spin.setValue(4)
    lab.form.repeats_spin.setValue(1)
    with qtbot.waitSignal(lab.run_finished, timeout=TIMEOUT_MS) as done:
        lab.run()
    results = done.args[0]
    assert results.error is None and [row["prompt_words"] for row in results.prompt] == [5]
    assert results.prompt[0]["tpot_s"] > 0


def test_killing_the_engine_mid_reply_keeps_the_window_and_the_chat_and_the_next_reply_works(qtbot, engine_window):
    engine_window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    engine_window.chat_panel.input_box.setPlainText("Tell me a long story about the sea.")
    with qtbot.waitSignal(engine_window.replies.token_received, timeout=TIMEOUT_MS):
        engine_window.send_message()
    killed = engine_window.models.engine.pid
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as finished:
        os.kill(killed, signal.SIGKILL)
    trace = finished.args[0]
    assert trace.stop_reason == "error" and "SIGKILL" in trace.error and trace.output_tokens >= 1
    shown = engine_window.chat_panel.transcript.toPlainText()
    assert "The engine stopped" in shown and "SIGKILL" in shown
    assert [m.role for m in engine_window.session.messages] == ["user", "assistant"]  # the partial reply is kept
    assert engine_window.saved_chats.records[-1].context.interrupted is True
    # The next message starts a new engine with the same model, then is answered.
    engine_window.chat_panel.settings_panel.max_new_tokens.setValue(4)
    engine_window.chat_panel.input_box.setPlainText("Say yes.")
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as next_reply:
        engine_window.send_message()
    assert next_reply.args[0].output_tokens >= 1 and engine_window.models.engine.pid != killed


def test_the_window_process_never_imports_torch_and_its_death_ends_the_engine(tmp_path):
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HF_HUB_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    app = subprocess.Popen(
        [sys.executable, str(DRIVER), "engine-report"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        lines = {}
        for line in app.stdout:
            key, _, value = line.strip().partition(" ")
            lines[key] = value
            if key == "GUI-IMPORTS":
                break
        assert "ENGINE" in lines, app.stderr.read()
        assert lines["GUI-IMPORTS"] == "[]"  # the window's process never imported torch or transformers
        engine = psutil.Process(int(lines["ENGINE"]))
        assert engine.ppid() == app.pid
        app.send_signal(signal.SIGKILL)
        app.wait(30)
        gone, alive = psutil.wait_procs([engine], timeout=60)
        assert engine in gone and not alive  # no orphan engine
    finally:
        if app.poll() is None:
            app.kill()
        app.stdout.close()
        app.stderr.close()


def test_the_launch_starts_the_engine_before_the_window_and_hands_that_one_over_first():
    from gui.launch import early_engine_factory

    factory = early_engine_factory()
    children = {child.pid for child in psutil.Process().children()}
    first = factory()
    assert first.pid in children and first.alive  # started by early_engine_factory itself, not by the call
    second = factory()  # a restart gets a new engine
    try:
        assert second.pid != first.pid and second.alive
    finally:
        assert first.close() and second.close()
    assert not {first.pid, second.pid} & {child.pid for child in psutil.Process().children()}
