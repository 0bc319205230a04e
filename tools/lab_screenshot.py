"""Screenshot of the real window's Lab tab after a Lab run, as a new user makes one (for checking the roofline).

Run under a real X server: xvfb-run -a -s "-screen 0 1400x950x24" env QT_QPA_PLATFORM=xcb \
    .venv/bin/python tools/lab_screenshot.py OUTPUT.png [--prompt-words 10,100,400] [--dtypes native,float32]
Also writes OUTPUT.json (the run's results) and prints the stat cards' tooltips after one chat reply.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _common  # noqa: F401  (offline, a throwaway data folder)
from _window_driver import WindowDriver
from PySide6.QtCore import QEventLoop, QTimer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--prompt-words", default="10,100,400")
    parser.add_argument("--batch-sizes", default="1,2,4,8")
    parser.add_argument("--dtypes", default="native,float32")
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--load", help="a saved lab JSON to show instead of running the lab")
    args = parser.parse_args()
    driver = WindowDriver(dtype="native")
    window = driver.window
    window.resize(1400 * 9 // 10, 950 * 9 // 10)
    reply = driver.ask("Why is the sky blue?", 12)
    cards = window.meter.cards.cards
    for key in ("ttft", "tpot"):
        print(f"{key} tooltip: {cards[key].toolTip()}")
    window.tabs.setCurrentWidget(window.lab_tab)
    tab = window.lab_tab
    if args.load:
        tab.load_json(args.load)
    else:
        form = tab.form
        for box in form.sweep_boxes.values():
            box.setChecked(True)
        form.prompt_words_edit.setText(args.prompt_words)
        form.new_tokens_spin.setValue(args.new_tokens)
        form.repeats_spin.setValue(1)
        for dtype, box in form.dtype_boxes.items():
            box.setChecked(dtype in args.dtypes.split(","))
        form.batch_sizes_edit.setText(args.batch_sizes)
        results = driver._wait(tab.run_finished, tab.run, 3600)
        tab.export_json(Path(args.output).with_suffix(".json"))
        print(results.verdicts[-1]["sentence"] if results else "the run failed")
    settle = QEventLoop()
    QTimer.singleShot(1500, settle.quit)  # layouts and repaints after the results arrive
    settle.exec()
    window.grab().save(args.output, "PNG")
    print(f"wrote {args.output} (reply: {reply})")
    driver.close()


if __name__ == "__main__":
    main()
