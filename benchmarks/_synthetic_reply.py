"""The transcript and the meter fed made-up tokens from the event loop, with no model decoding beside them."""

from __future__ import annotations

import time

from PySide6.QtCore import QEventLoop, QTimer

from gui.frame_interval import FRAME_INTERVAL_MS

WORDS = "the keeper climbed the stairs again , counting every step as the light turned".split()  # noqa: SIM905 - reads as the sentence it is
TOKEN_GAP_NS = 11_500_000  # the int4 lean loop's TPOT here; only the plotted values depend on it


def gui_cpu_at_each_token(tokens: int, earlier_turns: int = 0) -> list[int]:
    """The GUI thread's CPU clock after each token: per-token work, the repaints it causes and the frames.

    earlier_turns finished exchanges come first, in the transcript and in the meter's history plot.

    A decoding model beside the window changes what the GUI's work costs (caches, the GIL) as its
    context grows; without one, growth in these numbers is the window's own.
    """
    from core.timing.events import TokenEvent
    from gui.chat.transcript_view import TranscriptView
    from gui.meter.meter_panel import MeterPanel

    transcript, meter = TranscriptView(), MeterPanel()
    transcript.resize(700, 600)
    meter.resize(600, 700)
    transcript.show()
    meter.show()
    for turn in range(earlier_turns):
        transcript.add_user_turn(f"Turn {turn}: say something.")
        transcript.begin_assistant_turn()
        reply = " ".join(WORDS * 4)
        transcript.append_reply_text(reply)
        transcript.finish_assistant_turn(f"**Turn {turn}.** {reply}", None)
        meter.history_plot.add_reply(20 + 60 * turn, 0.1 + 0.01 * turn, TOKEN_GAP_NS / 1e9)
    transcript.add_user_turn("Write anything.")
    transcript.begin_assistant_turn()
    meter.begin_reply(0)
    cpu_at_token: list[int] = []
    loop = QEventLoop()

    def next_token() -> None:
        index = len(cpu_at_token)
        stamp_ns = (index + 1) * TOKEN_GAP_NS
        transcript.append_reply_text(" " + WORDS[index % len(WORDS)])
        meter.record_token(TokenEvent(index, 1, "", stamp_ns))
        meter.show_visible_text(stamp_ns, 6 * (index + 1))
        cpu_at_token.append(time.thread_time_ns())
        if len(cpu_at_token) == tokens:
            loop.quit()

    # A zero-interval timer fires once per pass of the event loop, so each token's repaint runs
    # before the next token, as it does when tokens arrive from the worker.
    feeder, frames = QTimer(), QTimer()
    feeder.setInterval(0)
    feeder.timeout.connect(next_token)
    frames.setInterval(FRAME_INTERVAL_MS)
    frames.timeout.connect(lambda: meter.tick(len(cpu_at_token) * TOKEN_GAP_NS, True))
    feeder.start()
    frames.start()
    loop.exec()
    feeder.stop()
    frames.stop()
    transcript.close()
    meter.close()
    return cpu_at_token
