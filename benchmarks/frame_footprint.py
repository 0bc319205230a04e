"""What one frame's work costs back to back against a frame apart: the window's CPU is its footprint, refetched each frame.

The same work is timed (the thread's own CPU time, a median of --repeats) right after the last run, and after
gaps of 1 to 33 ms in which the thread keeps its core busy with a loop that touches almost no memory: no sleep,
so no idle state and no wake-up is involved. Where the work costs many times more after 33 ms (a frame's gap)
than back to back, what the window pays each frame is fetching its code and data again, not running it, and it
shrinks with fewer frames or less distinct code a frame, hardly with fewer instructions. Three pieces of work:
  - a fixed one that is not the window's (summing 512 KiB and walking a 2,000-key dict): the machine's part;
  - one frame of live text: a few words appended to the transcript, and its viewport repainted;
  - one frame of the interval plot: four gaps added, the plot refreshed, its live layer repainted.
No target: it explains the window-CPU figure of meter_overhead.py and window_cpu.py (target <= 0.05 of a core).
Run: .venv/bin/python benchmarks/frame_footprint.py [--repeats 60]
"""

from __future__ import annotations

import argparse
import time

import _common

GAPS_MS = (0, 1, 4, 10, 33)
WORDS = ("Once upon a time there was a lighthouse keeper named Elias who lived alone on a rocky island. " * 400).split()


def spin(seconds: float) -> None:
    """Keep the core busy for this long without touching memory worth the name."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def cpu_us(work, gap_s: float, repeats: int, settle) -> float:
    """Median CPU time of work() run gap_s after the previous run; settle() runs between them (posted events)."""
    times = []
    for _ in range(repeats + 5):
        settle()
        spin(gap_s)
        start = time.thread_time()
        work()
        times.append(time.thread_time() - start)
    return _common.median(times[5:]) * 1e6


def machine_work():
    import numpy as np

    block = np.ones(512 * 1024 // 8)
    table = {f"key{i}": i for i in range(2000)}

    def work() -> None:
        block.sum()
        sum(table.values())

    return work


def text_work():
    from gui.chat.transcript_view import TranscriptView

    view = TranscriptView()
    view.resize(600, 700)
    view.show()
    view.add_user_turn("Tell me a long story about a lighthouse keeper.")
    view.begin_assistant_turn()
    words = iter(WORDS)

    def work() -> None:
        view.append_reply_text(" ".join(next(words) for _ in range(4)) + " ")
        view.viewport().repaint()

    return work, view


def plot_work():
    from gui.meter.interval_plot import IntervalPlot

    plot = IntervalPlot()
    plot.resize(570, 200)
    plot.show()
    index = iter(range(1, 10**9))

    def work() -> None:
        for _ in range(4):
            at = next(index)
            if at % 250 == 0:  # a reply's length, then a new one, so the curve stays a reply's size
                plot.reset()
            plot.add_interval(at % 250 + 1, 8.0 + at % 3, 8.5)
        plot.refresh()
        plot.live_layer.repaint()

    return work, plot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=60)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "frame_footprint")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    text, _view = text_work()
    plot, _plot = plot_work()
    works = {"machine (not the window's)": machine_work(), "live text frame": text, "interval plot frame": plot}
    print(f"platform {app.platformName()}; CPU time of one run, median of {args.repeats}, after a busy gap of:")
    print(f"{'':28s}" + "".join(f"{gap:>8d} ms" for gap in GAPS_MS) + "   33 ms / 0 ms")
    for name, work in works.items():
        costs = [cpu_us(work, gap / 1000, args.repeats, app.sendPostedEvents) for gap in GAPS_MS]
        ratio = costs[-1] / costs[0]
        print(f"{name:28s}" + "".join(f"{cost:8.0f} us" for cost in costs) + f"   {ratio:.1f}x")
        key = name.split(" (")[0].replace(" ", "_")
        report.figure(f"{key}_us_back_to_back", costs[0])
        report.figure(f"{key}_us_after_33ms", costs[-1])


if __name__ == "__main__":
    main()
