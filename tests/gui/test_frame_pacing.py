"""The window's pace while a reply streams: the pipe read a frame at a time, and a layout that stays put."""

from gui.engine_client import FAST_TOKEN_NS, EngineClient

TOKENS = 40


def streamed_trace(qtbot, window, paced: bool, frames: list | None = None):
    window.models.client.pace_reads = paced
    if frames is not None:
        window.live.frame_shown.connect(lambda: frames.append(1))
    window.settings_panel.max_new_tokens.setValue(TOKENS)
    window.replies.ignore_eos = True  # exactly TOKENS tokens, as fast as the tiny model makes them
    window.input_box.setPlainText("Count to forty.")
    with qtbot.waitSignal(window.reply_finished, timeout=60_000) as blocker:
        window.send_message()
    trace = blocker.args[0]
    assert trace.output_tokens == TOKENS and len(trace.arrivals_ns) == TOKENS
    return trace


def test_tokens_faster_than_frames_are_read_once_a_frame(qtbot, tiny_window):
    # The tiny model makes several tokens a frame of 33 ms.
    frames: list = []
    trace = streamed_trace(qtbot, tiny_window, paced=True, frames=frames)
    reads = len(set(trace.arrivals_ns))
    # One read a frame while tokens come faster than frames. The first two tokens (the second shows the stream is
    # fast), and each after a gap of a frame or more, are read as they come: no frame may be due.
    stamps = trace.timestamps_ns
    slow = 2 + sum(later - earlier >= FAST_TOKEN_NS for earlier, later in zip(stamps, stamps[1:]))
    assert reads <= len(frames) + slow, f"{reads} reads in {len(frames)} frames, {slow} slow tokens"
    assert reads <= TOKENS // 2
    # A token is stamped when the window reads it, never before the engine made it.
    assert all(arrival >= made for arrival, made in zip(trace.arrivals_ns, trace.timestamps_ns))
    assert trace.arrivals_ns == sorted(trace.arrivals_ns)
    # Everything read was shown: one plotted gap per token after the first.
    assert tiny_window.meter.interval_plot.interval_item.getData()[0].size == TOKENS - 1


def test_unpaced_reads_follow_the_tokens(qtbot, tiny_window):
    """The same reply with pacing off: the window wakes for the tokens as they come (what pacing saves)."""
    paced_reads = len(set(streamed_trace(qtbot, tiny_window, paced=True).arrivals_ns))
    unpaced_reads = len(set(streamed_trace(qtbot, tiny_window, paced=False).arrivals_ns))
    assert unpaced_reads > paced_reads


def test_a_finished_reply_leaves_the_pipe_watched(qtbot, tiny_window):
    """A reply that ends while reads are held still reaches the window whole, and the next one streams too."""
    for _ in range(2):
        streamed_trace(qtbot, tiny_window, paced=True)
    client: EngineClient = tiny_window.models.client
    assert not client.held


def test_the_transcript_stays_put_when_the_prefill_bar_shows(qtbot, tiny_window):
    """Showing the bar moves nothing else: a resized transcript is repainted whole, twice a reply."""
    panel_layout = tiny_window.transcript.parentWidget().layout()
    panel_layout.activate()
    before = tiny_window.transcript.geometry()
    for shown in (True, False):
        tiny_window.prefill_bar.setVisible(shown)
        tiny_window.indicator.setVisible(not shown)
        panel_layout.activate()
        assert tiny_window.transcript.geometry() == before
    assert tiny_window.prefill_bar.isVisible() is False
