"""The window's frame interval: live text, plots and cards are applied at most this often, whatever the token rate."""

from PySide6.QtCore import QTimer

# 25 frames a second: smooth for text and plots. Each frame costs the window about the same CPU however few tokens
# it shows, since on a busy machine most of that cost is fetching the frame's code and data into the caches again
# (benchmarks/frame_footprint.py); so the window's CPU while streaming scales with this rate. On an AVX-512 EPYC the
# window took 0.049-0.051 of a core at 25 Hz against 0.057 at 30 (docs/performance.md); the target is 0.05.
FRAME_INTERVAL_MS = 40


def frame_timer(parent, on_frame) -> QTimer:
    """The one frame timer of a live view (the chat's reply, a race, a replay): on_frame every FRAME_INTERVAL_MS while
    started; a child of parent, so it stops with it."""
    timer = QTimer(parent)
    timer.setInterval(FRAME_INTERVAL_MS)
    timer.timeout.connect(on_frame)
    return timer
