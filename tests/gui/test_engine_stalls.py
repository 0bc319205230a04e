"""A stuck or dead engine process never leaves the window stuck: the issue's cases, each with a real engine process.

The engine runs a tiny random GGUF on the kernels (fast to load); the silence limits are shortened so a stall is
seen in about a second, not the app's 5 and 15 s.
"""

from __future__ import annotations

import os
import signal

import psutil
import pytest
from child_processes import children
from PySide6.QtGui import QGuiApplication, QKeySequence
from tiny_gguf import write_tiny_llama

import gui.engine_client as engine_client
from gui.chat.reply_controller import ReplyState

pytestmark = pytest.mark.engine_process
TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    return str(write_tiny_llama(tmp_path_factory.mktemp("stalls") / "tiny.gguf"))


@pytest.fixture
def engine_window(qtbot, open_window, tiny_gguf, monkeypatch):
    monkeypatch.setattr(engine_client, "STOP_SILENCE_S", 1.0)
    monkeypatch.setattr(engine_client, "REPLY_SILENCE_S", 2.0)
    window = open_window()
    with qtbot.waitSignal(window.model_ready, timeout=TIMEOUT_MS):
        window.start_loading(tiny_gguf, "native")
    yield window
    window.close()
    assert children() == []  # closing leaves no engine behind, stopped or not


def engine_pid(window) -> int:
    return window.models.engine.pid


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def ask(qtbot, window, text="Say yes.", tokens=4):
    window.chat_panel.settings_panel.max_new_tokens.setValue(tokens)
    window.chat_panel.input_box.setPlainText(text)
    with qtbot.waitSignal(window.reply_finished, timeout=TIMEOUT_MS) as finished:
        window.send_message()
    return finished.args[0]


def start_long_reply(qtbot, window):
    """A reply that is still generating when its first token reaches the window."""
    window.replies.ignore_eos = True
    window.chat_panel.settings_panel.max_new_tokens.setValue(200)
    window.chat_panel.input_box.setPlainText("Tell me a long story.")
    with qtbot.waitSignal(window.replies.token_received, timeout=TIMEOUT_MS):
        window.send_message()


def controls_free(window) -> bool:
    return (
        window.replies.state is ReplyState.IDLE
        and window.chat_panel.send_button.isEnabled()
        and window.chat_panel.new_chat_button.isEnabled()
        and not window.chat_panel.stop_button.isEnabled()
    )


def test_sigstop_mid_reply_then_stop_ends_the_reply_and_frees_the_window(qtbot, engine_window):
    """Was: Stop stayed on "stopping" for good, Send and New chat disabled, Restart engine did nothing."""
    start_long_reply(qtbot, engine_window)
    stopped = engine_pid(engine_window)
    os.kill(stopped, signal.SIGSTOP)
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as finished:
        engine_window.stop_generation()
        assert engine_window.replies.state is ReplyState.STOPPING
    trace = finished.args[0]
    assert trace.stop_reason == "error" and "stopped answering" in trace.error and "after Stop" in trace.error
    assert controls_free(engine_window)
    assert "The engine stopped" in engine_window.chat_panel.transcript.toPlainText()
    assert engine_window.saved_chats.records[-1].context.interrupted is True
    assert gone(stopped)
    with qtbot.waitSignal(engine_window.model_ready, timeout=TIMEOUT_MS):
        engine_window.restart_engine()
    assert ask(qtbot, engine_window).output_tokens >= 1 and engine_pid(engine_window) != stopped


def test_sigstop_mid_reply_without_stop_is_reported_after_the_reply_limit(qtbot, engine_window):
    start_long_reply(qtbot, engine_window)
    os.kill(engine_pid(engine_window), signal.SIGSTOP)
    with qtbot.waitSignal(engine_window.reply_finished, timeout=TIMEOUT_MS) as finished:
        assert engine_window.replies.state is ReplyState.GENERATING
    assert "stopped answering" in finished.args[0].error and "with a reply running" in finished.args[0].error
    assert controls_free(engine_window)


def test_sigstop_of_the_idle_engine_then_a_1mb_paste_and_send_never_blocks_the_window(qtbot, engine_window):
    """Was: the GUI thread froze inside send_message, on a blocking write to the engine's socket."""
    stopped = engine_pid(engine_window)
    os.kill(stopped, signal.SIGSTOP)
    QGuiApplication.clipboard().setText("x" * 1_000_000)
    qtbot.keySequence(engine_window.chat_panel.input_box, QKeySequence.StandardKey.Paste)
    with qtbot.waitSignal(engine_window.replies.reply_refused, timeout=TIMEOUT_MS) as refused:
        engine_window.send_message()  # returns at once: a blocking write would wait here for good
        assert engine_window.models.engine.wants_to_write  # the socket took part; the rest waits in the queue
    message, kept = refused.args
    assert "the engine stopped before the reply began" in message and "stopped answering" in message and kept
    assert engine_window.chat_panel.input_box.message_text() == "x" * 1_000_000  # nothing lost
    assert controls_free(engine_window)
    engine_window.chat_panel.input_box.clear()
    assert ask(qtbot, engine_window).output_tokens >= 1 and engine_pid(engine_window) != stopped


def test_kill9_of_the_idle_engine_then_send_before_the_eof_is_handled_is_reported(qtbot, engine_window):
    """Was: the write's EPIPE marked the engine stopped quietly, and the reply stayed "generating" for ever."""
    engine = engine_window.models.engine
    os.kill(engine.pid, signal.SIGKILL)
    engine._process.wait(30)  # dead and reaped, while the window has not run its event loop since
    engine_window.chat_panel.input_box.setPlainText("Are you there?")
    with qtbot.waitSignal(engine_window.replies.reply_refused, timeout=TIMEOUT_MS) as refused:
        engine_window.send_message()
    message, kept = refused.args
    assert "the engine stopped before the reply began" in message and "SIGKILL" in message and kept
    assert engine_window.chat_panel.input_box.message_text() == "Are you there?" and controls_free(engine_window)
    assert ask(qtbot, engine_window).output_tokens >= 1  # the next message starts a new engine


def _idle(qtbot, window):
    pass


def _generating(qtbot, window):
    start_long_reply(qtbot, window)
    assert window.replies.state is ReplyState.GENERATING


def _stopping_a_stopped_engine(qtbot, window):
    start_long_reply(qtbot, window)
    os.kill(engine_pid(window), signal.SIGSTOP)
    window.stop_generation()
    assert window.replies.state is ReplyState.STOPPING


def _stopped_engine_idle(qtbot, window):
    os.kill(engine_pid(window), signal.SIGSTOP)


def _loading(qtbot, window):
    window.start_loading(window.models._last_load.spec, "native")
    assert window.models.loading


def _dead(qtbot, window):
    with qtbot.waitSignal(window.models.engine_stopped, timeout=TIMEOUT_MS):
        os.kill(engine_pid(window), signal.SIGKILL)


STATES = {
    "idle": _idle,
    "generating": _generating,
    "stopping, engine stopped": _stopping_a_stopped_engine,
    "idle, engine stopped": _stopped_engine_idle,
    "loading": _loading,
    "engine dead": _dead,
}


@pytest.mark.parametrize("state", list(STATES))
def test_restart_engine_works_in_every_state(qtbot, engine_window, state):
    STATES[state](qtbot, engine_window)
    before = engine_pid(engine_window)
    with qtbot.waitSignal(engine_window.model_ready, timeout=TIMEOUT_MS):
        engine_window.restart_engine()
    assert engine_pid(engine_window) != before and gone(before)
    assert controls_free(engine_window)
    engine_window.replies.ignore_eos = False
    assert ask(qtbot, engine_window).output_tokens >= 1
