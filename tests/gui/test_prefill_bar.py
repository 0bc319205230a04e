"""While the prompt's pass runs, the window shows its progress; the first token takes its place."""

import threading

REPLY_TIMEOUT_MS = 60_000


def test_the_bar_shows_a_held_prefill_and_hides_at_the_first_token(qtbot, tiny_window, tiny_model):
    calls, in_prefill, in_first_step = [], threading.Event(), threading.Event()
    release_prefill, release_step = threading.Event(), threading.Event()

    def hold(module, args, output):
        calls.append(1)
        if len(calls) == 1:  # the prompt's pass, in layer 0
            in_prefill.set()
            release_prefill.wait(30)
        elif len(calls) == 2:  # the first decode step: the first token has been made
            in_first_step.set()
            release_step.wait(30)

    bar, plot = tiny_window.chat_panel.prefill_bar, tiny_window.meter.interval_plot
    hook = tiny_model.model.model.layers[0].mlp.down_proj.register_forward_hook(hold)
    try:
        tiny_window.chat_panel.input_box.setPlainText("Tell me about lighthouses.")
        with qtbot.waitSignal(tiny_window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
            tiny_window.send_message()
            qtbot.waitUntil(lambda: bar.isVisible(), timeout=REPLY_TIMEOUT_MS)
            assert bar.fraction_shown() == 0.0 and bar.text().startswith("Reading the prompt: 0%")
            # The TTFT square grows while the prompt is read.
            qtbot.waitUntil(lambda: len(plot.ttft_item.getData()[1]) == 1, timeout=REPLY_TIMEOUT_MS)
            first = plot.ttft_item.getData()[1][0]
            qtbot.waitUntil(lambda: plot.ttft_item.getData()[1][0] > first, timeout=REPLY_TIMEOUT_MS)
            release_prefill.set()
            qtbot.waitUntil(in_first_step.is_set, timeout=REPLY_TIMEOUT_MS)
            trace = tiny_window.replies.record.trace
            qtbot.waitUntil(lambda: trace.output_tokens == 1 and not bar.isVisible(), timeout=REPLY_TIMEOUT_MS)
            assert trace.prefill_progress[-1][1] == 1.0 and tiny_window.chat_panel.transcript.toPlainText()
            release_step.set()
    finally:
        release_prefill.set()
        release_step.set()
        hook.remove()
    assert finished.args[0].output_tokens >= 1 and not bar.isVisible()


def test_a_stop_during_prefill_hides_the_bar_short_of_100_percent(qtbot, tiny_window, tiny_model):
    entered, release = threading.Event(), threading.Event()

    def hold(module, args, output):
        entered.set()
        release.wait(30)

    bar = tiny_window.chat_panel.prefill_bar
    hook = tiny_model.model.model.layers[0].mlp.down_proj.register_forward_hook(hold)
    try:
        tiny_window.chat_panel.input_box.setPlainText("Tell me about lighthouses.")
        with qtbot.waitSignal(tiny_window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
            tiny_window.send_message()
            qtbot.waitUntil(lambda: entered.is_set() and bar.isVisible(), timeout=REPLY_TIMEOUT_MS)
            tiny_window.stop_generation()
            release.set()
    finally:
        release.set()
        hook.remove()
    trace = finished.args[0]
    assert trace.output_tokens == 0 and [fraction for _, fraction in trace.prefill_progress] == [0.0]
    assert not bar.isVisible()
