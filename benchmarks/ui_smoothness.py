"""Window smoothness during a streamed 200-token reply at the fastest precision, via the app's UI probe.

Targets: event-loop stall p99 < 20 ms and max < 50 ms; put() stamp -> transcript repaint p95 < 33 ms.
Run: .venv/bin/python benchmarks/ui_smoothness.py [--dtype int4] [--tokens 200]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _common
from _window_driver import WindowDriver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int4")
    parser.add_argument("--tokens", type=int, default=200)
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "ui_smoothness")
    driver = WindowDriver(dtype=args.dtype, streaming=True)  # the app's engine process, as a user runs it
    from gui.ui_probe import UiProbe

    probe = UiProbe(driver.window, Path(_common.scratch_dir("latencylab-probe-")) / "probe.json")
    driver.ask("Say hi.", 4)  # warm-up: first paint of every plot
    probe.reset_measurements()
    trace = driver.ask("Tell me a long story about a lighthouse keeper.", args.tokens)
    summary = probe.summary()
    probe.stop()
    driver.close()
    stall, paint = summary["stall_ms"], summary["put_to_paint_ms"]
    print(f"{trace.output_tokens} tokens streamed at {args.dtype}, TPOT {trace.metrics().tpot_s * 1000:.1f} ms")
    print(
        f"event-loop stall (5 ms probe timer, lateness): p50 {stall['p50']:.1f} ms, p99 {stall['p99']:.1f} ms "
        f"(target < 20: {'MET' if stall['p99'] < 20 else 'NOT MET'}), max {stall['max']:.1f} ms "
        f"(target < 50: {'MET' if stall['max'] < 50 else 'NOT MET'})"
    )
    print(
        f"put() stamp -> transcript repaint over {paint['count']} tokens: p50 {paint['p50']:.1f} ms, "
        f"p95 {paint['p95']:.1f} ms (target < 33: {'MET' if paint['p95'] < 33 else 'NOT MET'}), "
        f"max {paint['max']:.1f} ms"
    )


if __name__ == "__main__":
    main()
