"""Injected faults on the real model: generation errors, failed and out-of-memory loads, stop, switch and close."""

import threading

import pytest
from transformers import LogitsProcessor

import core.model.loader
from core.chats.store import ChatStore
from core.model import memory_check
from tests.support.window_driving import REPLY_TIMEOUT_MS, ask

pytestmark = pytest.mark.model


class ExplodingProcessor(LogitsProcessor):
    """Raises inside model.generate after `after` tokens, as a kernel or sampling bug would."""

    def __init__(self, after: int):
        self.after = after
        self.calls = 0

    def __call__(self, input_ids, scores):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("injected fault in generation")
        return scores


class BlockingProcessor(LogitsProcessor):
    """Holds the generating thread like a forward pass that cannot be interrupted, until released."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, input_ids, scores):
        self.entered.set()
        self.release.wait(60)
        return scores


def destroyed_thread_warnings(qtlog):
    return [record.message for record in qtlog.records if "Destroyed while thread" in record.message]


@pytest.mark.parametrize("after", [0, 3], ids=["before-first-token", "mid-reply"])
def test_a_generation_error_shows_in_the_chat_keeps_the_message_and_the_next_one_works(qtbot, window, after):
    window.models.engine.logits_processors = (ExplodingProcessor(after),)
    trace = ask(qtbot, window, "Tell me about lighthouses.", max_new_tokens=20)
    assert trace.stop_reason == "error" and "injected fault in generation" in trace.error
    assert trace.output_tokens == after
    shown = window.chat_panel.transcript.toPlainText()
    assert "Generation failed: RuntimeError: injected fault in generation" in shown
    assert window.session.messages[0].content == "Tell me about lighthouses."
    assert window.chat_panel.send_button.isEnabled() and not window.generating

    window.models.engine.logits_processors = ()
    follow_up = ask(qtbot, window, "Say yes.", max_new_tokens=4)
    assert follow_up.error is None and follow_up.output_tokens >= 1
    window.saved_chats.keeper.saver.flush(10)
    saved = ChatStore().load(window.saved_chats.current_chat_id)
    assert [m.content for m in saved.messages if m.role == "user"] == ["Tell me about lighthouses.", "Say yes."]
    assert saved.replies[0].trace.error == trace.error and not saved.reply_pending


def test_regenerate_answers_a_message_whose_reply_failed(qtbot, window):
    window.models.engine.logits_processors = (ExplodingProcessor(0),)
    ask(qtbot, window, "Name a colour.", max_new_tokens=4)
    window.models.engine.logits_processors = ()
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.regenerate()
    assert blocker.args[0].error is None and [m.role for m in window.session.messages] == ["user", "assistant"]


def test_a_failed_load_keeps_the_previous_model_loaded_and_usable(qtbot, window, tmp_path):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "llama"}')
    (broken / "model.safetensors").write_bytes(b"\x00" * 64)
    previous = window.ready
    with qtbot.waitSignal(window.model_failed, timeout=60_000):
        window.start_loading(str(broken), "float32")
    assert "Could not load the model" in window.chat_panel.settings_panel.load_message.text()
    assert "Still using SmolLM2" in window.chat_panel.settings_panel.load_message.text()
    assert window.ready is previous
    assert ask(qtbot, window, "Say hello.", max_new_tokens=3).output_tokens >= 1


def test_a_model_too_large_for_free_memory_is_refused_before_loading(qtbot, window, monkeypatch):
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 100 * 10**6)
    previous = window.ready
    with qtbot.waitSignal(window.model_failed, timeout=60_000) as blocker:
        window.start_loading("embedded", "float32")
    assert "needs about 0.5 GB of memory and only 0.1 GB is free" in blocker.args[0]
    assert window.ready is previous
    assert ask(qtbot, window, "Say hello.", max_new_tokens=3).output_tokens >= 1


def test_out_of_memory_inside_the_loader_is_a_clear_error(qtbot, window, monkeypatch):

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(core.model.loader, "_load", out_of_memory)
    with qtbot.waitSignal(window.model_failed, timeout=60_000) as blocker:
        window.start_loading("embedded", "float32")
    assert "ran out of memory" in blocker.args[0]
    assert window.ready is not None and window.chat_panel.send_button.isEnabled()


def test_switching_models_mid_generation_is_refused_with_a_message(qtbot, window):
    previous = window.ready
    window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    window.chat_panel.input_box.setPlainText("Tell me a long story about a castle.")
    with qtbot.waitSignal(window.replies.token_received, timeout=REPLY_TIMEOUT_MS):
        window.send_message()
    window.start_loading("embedded", "bfloat16")
    assert "Stop the reply before switching models" in window.chat_panel.settings_panel.load_message.text()
    assert not window.models.loading and window.ready is previous
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.stop_generation()
    assert blocker.args[0].stop_reason == "stopped"


def test_stop_during_prefill_ends_the_reply_with_at_most_one_token(qtbot, window):
    window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    window.chat_panel.input_box.setPlainText("Summarise this text. " + "The harbour was quiet that morning. " * 150)
    with qtbot.waitSignal(window.replies.reply_started, timeout=REPLY_TIMEOUT_MS):
        window.send_message()
    qtbot.wait(100)  # well inside a prefill of about 1,300 tokens
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        window.stop_generation()
    trace = blocker.args[0]
    assert trace.stop_reason == "stopped" and trace.output_tokens <= 1 and trace.error is None
    assert "[stopped by you]" in window.chat_panel.transcript.toPlainText()
    assert ask(qtbot, window, "Say yes.", max_new_tokens=3).output_tokens >= 1


def test_closing_during_an_uninterruptible_forward_pass_does_not_wait_and_keeps_the_message(qtbot, window, qtlog):
    blocker = BlockingProcessor()
    window.models.engine.logits_processors = (blocker,)
    window.chat_panel.settings_panel.max_new_tokens.setValue(50)
    window.chat_panel.input_box.setPlainText("Hello there")
    window.send_message()
    assert blocker.entered.wait(60)
    engine = window.models.engine
    window.close()
    try:
        # The close does not wait for a pass that cannot be interrupted: the window is gone while the
        # engine's job is still inside it (the app's engine process is then killed).
        assert blocker.entered.is_set() and not blocker.release.is_set() and not engine.alive
        assert not destroyed_thread_warnings(qtlog)
    finally:
        blocker.release.set()
        assert engine.core.close(60)
    saved = ChatStore().load(window.saved_chats.current_chat_id)
    assert saved.messages[0].content == "Hello there" and saved.reply_pending


def test_closing_during_a_model_load_does_not_wait_for_it(open_window, held_load, qtlog):
    inside, release = held_load.inside, held_load.release
    window = open_window()
    window.start_loading("embedded", "float32")
    assert inside.wait(30)
    engine = window.models.engine
    window.close()
    try:
        # The close does not wait for a load that cannot be interrupted.
        assert not release.is_set() and not engine.alive
        assert not destroyed_thread_warnings(qtlog)
    finally:
        release.set()
        assert engine.core.close(30)
    assert not window.model_label.text().startswith("SmolLM2")  # the late result was not applied to a closed window
