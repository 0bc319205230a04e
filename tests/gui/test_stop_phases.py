"""Stop ends the reply at every phase: pressed with Send, while the model loads, during prefill and during decode."""

import threading
import time

from gui.chat.reply_controller import ReplyState

REPLY_TIMEOUT_MS = 60_000


def test_stop_in_the_same_slot_as_send_is_not_lost(qtbot, tiny_window):
    tiny_window.chat_panel.input_box.setPlainText("hello")
    with qtbot.waitSignal(tiny_window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
        tiny_window.send_message()
        tiny_window.stop_generation()  # before the relay thread has even built the prompt
    trace = finished.args[0]
    assert trace.stop_reason == "stopped" and trace.output_tokens == 0
    assert [m.content for m in tiny_window.session.messages] == ["hello"]  # the message is kept in the chat


def test_stop_during_prefill_ends_with_no_token(qtbot, tiny_window, tiny_model):
    entered, release = threading.Event(), threading.Event()

    def hold_the_first_layer(module, args, output):
        entered.set()
        release.wait(30)

    # On the MLP's last projection: both decode loops call it (the lean loop calls the layer's parts).
    hook = tiny_model.model.model.layers[0].mlp.down_proj.register_forward_hook(hold_the_first_layer)
    try:
        tiny_window.chat_panel.input_box.setPlainText("Tell me about lighthouses.")
        with qtbot.waitSignal(tiny_window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
            tiny_window.send_message()
            qtbot.waitUntil(entered.is_set, timeout=REPLY_TIMEOUT_MS)
            tiny_window.stop_generation()  # the user presses Stop while the prompt's pass is in layer 0
            release.set()
    finally:
        release.set()
        hook.remove()
    trace = finished.args[0]
    assert trace.stop_reason == "stopped" and trace.output_tokens == 0 and trace.error is None


def test_stop_during_decode_ends_after_the_current_token(qtbot, tiny_window):
    tiny_window.chat_panel.settings_panel.max_new_tokens.setValue(200)  # the tiny model holds 256 positions
    tiny_window.chat_panel.input_box.setPlainText("Count to one hundred.")
    pressed = []

    def press_stop(_token) -> None:
        if not pressed:
            tiny_window.stop_generation()  # the in-process engine sets the reply's stop event right here
            pressed.append(time.perf_counter_ns())

    tiny_window.replies.token_received.connect(press_stop)
    with qtbot.waitSignal(tiny_window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
        tiny_window.send_message()
    trace = finished.args[0]
    assert trace.stop_reason == "stopped" and trace.output_tokens < 200
    # Tokens arrive a little after the engine made them; at most one was made after the stop reached it.
    assert sum(stamp > pressed[0] for stamp in trace.timestamps_ns) <= 1


def test_stop_while_the_model_loads_cancels_the_queued_message_and_keeps_it(qtbot, waiting_for_a_load, held_load):
    window = waiting_for_a_load
    window.chat_panel.input_box.setPlainText("queued question")
    window.send_message()
    assert window.replies.state is ReplyState.QUEUED and window.chat_panel.stop_button.isEnabled()
    window.stop_generation()
    assert window.replies.state is ReplyState.IDLE
    assert (
        window.chat_panel.input_box.toPlainText() == "queued question" and not window.chat_panel.input_box.isReadOnly()
    )
    with qtbot.waitSignal(window.model_failed, timeout=REPLY_TIMEOUT_MS):
        held_load.release.set()
    assert window.session.messages == []  # nothing was sent after the load ended


def test_a_message_queued_behind_the_load_is_kept_when_the_window_closes(waiting_for_a_load):
    from core.chats.store import ChatStore

    window = waiting_for_a_load
    window.chat_panel.input_box.setPlainText("please keep me")
    window.send_message()
    window.close()
    assert window.saved_chats.keeper.saver.flush(10)
    saved = ChatStore().load(window.saved_chats.current_chat_id)
    assert [m.content for m in saved.messages] == ["please keep me"] and saved.reply_pending
