"""The window's pace while a reply streams: the pipe read a frame at a time, and a layout that stays put."""

from core.timing.events import TokenEvent
from gui.engine_client import FAST_TOKEN_NS, EngineClient

TOKENS = 40


def streamed_trace(qtbot, window, paced: bool, frames: list | None = None):
    window.models.client.pace_reads = paced
    if frames is not None:
        window.live.frame_shown.connect(lambda: frames.append(1))
    window.chat_panel.settings_panel.max_new_tokens.setValue(TOKENS)
    window.replies.ignore_eos = True  # exactly TOKENS tokens, as fast as the tiny model makes them
    window.chat_panel.input_box.setPlainText("Count to forty.")
    with qtbot.waitSignal(window.reply_finished, timeout=60_000) as blocker:
        window.send_message()
    trace = blocker.args[0]
    assert trace.output_tokens == TOKENS and len(trace.arrivals_ns) == TOKENS
    return trace


def test_tokens_faster_than_frames_are_read_once_a_frame(qtbot, tiny_window):
    # The tiny model makes several tokens a frame of 40 ms (fewer on a loaded machine: the bound counts its gaps).
    frames: list = []
    trace = streamed_trace(qtbot, tiny_window, paced=True, frames=frames)
    reads = len(set(trace.arrivals_ns))
    # One read a frame while tokens come faster than frames. The first two tokens (the second shows the stream is
    # fast), and each after a gap of a frame or more, are read as they come: no frame may be due. So is the last
    # read, whose drain ends the reply and is shown by finish(), not by a frame.
    stamps = trace.timestamps_ns
    slow = 2 + sum(later - earlier >= FAST_TOKEN_NS for earlier, later in zip(stamps, stamps[1:]))
    assert reads <= len(frames) + slow + 1, f"{reads} reads in {len(frames)} frames, {slow} slow tokens"
    # A token is stamped when the window reads it, never before the engine made it.
    assert all(arrival >= made for arrival, made in zip(trace.arrivals_ns, trace.timestamps_ns))
    assert trace.arrivals_ns == sorted(trace.arrivals_ns)
    # Everything read was shown: one plotted gap per token after the first.
    assert tiny_window.meter.interval_plot.interval_item.getData()[0].size == TOKENS - 1


def held_at_each_token(qtbot, window, paced: bool) -> list[bool]:
    """Whether the pipe's reads were held (left to the frames) as each of a reply's tokens was handed on."""
    client: EngineClient = window.models.client
    held: list[bool] = []

    def note(batch) -> None:
        held.extend(
            client.held for delivered in batch if isinstance(getattr(delivered.event, "event", None), TokenEvent)
        )

    client.reply_events_arrived.connect(note)
    try:
        streamed_trace(qtbot, window, paced=paced)
    finally:
        client.reply_events_arrived.disconnect(note)
    return held


def test_unpaced_reads_follow_the_tokens(qtbot, tiny_window):
    """The same reply with pacing off: the pipe is never left to the frames, so each token wakes the window as it
    comes (what pacing saves). With pacing on, fast tokens wait for a frame."""
    assert any(held_at_each_token(qtbot, tiny_window, paced=True))
    assert not any(held_at_each_token(qtbot, tiny_window, paced=False))


def test_a_finished_reply_leaves_the_pipe_watched(qtbot, tiny_window):
    """A reply that ends while reads are held still reaches the window whole, and the next one streams too."""
    for _ in range(2):
        streamed_trace(qtbot, tiny_window, paced=True)
    client: EngineClient = tiny_window.models.client
    assert not client.held


def test_the_transcript_stays_put_when_the_prefill_bar_shows(qtbot, tiny_window):
    """Showing the bar moves nothing else: a resized transcript is repainted whole, twice a reply."""
    panel_layout = tiny_window.chat_panel.transcript.parentWidget().layout()
    panel_layout.activate()
    before = tiny_window.chat_panel.transcript.geometry()
    for shown in (True, False):
        tiny_window.chat_panel.prefill_bar.setVisible(shown)
        tiny_window.chat_panel.indicator.setVisible(not shown)
        panel_layout.activate()
        assert tiny_window.chat_panel.transcript.geometry() == before
    assert tiny_window.chat_panel.prefill_bar.isVisible() is False
