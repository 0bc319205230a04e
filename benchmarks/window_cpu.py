"""The window's own CPU while a reply streams at the embedded model's pace, with no model competing for the cores.

A tiny random-weight model on the in-process engine sleeps between tokens to stream at --tok-s (the embedded
model's native pace here, about 90 tok/s), so the GUI thread's CPU time (the meter's own measure, its "window's own
CPU" card) is the window's work alone: text, plots, cards and frames. Target: at most 5% of one core.
What it writes (--text): prose, a paragraph of English repeated (its tokens forced, as a reply's words wrap into
lines); or newlines, the tiny model's own greedy output, one empty line a token: a stress case in which every frame
adds lines and scrolls the whole view.
Run under `xvfb-run -a -s "-screen 0 1400x950x24"` with QT_QPA_PLATFORM=xcb for a real X screen.

Run: .venv/bin/python benchmarks/window_cpu.py [--tokens 400] [--tok-s 90] [--replies 3] [--text prose|newlines]
     [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

import _common

TARGET_CORES = 0.05


def paced(seconds_per_token: float):
    """A logits processor that holds each decode step to the pace given (the engine's thread, not the GUI's)."""
    from transformers import LogitsProcessor

    class Paced(LogitsProcessor):
        def __init__(self):
            self.last = None

        def __call__(self, input_ids, scores):
            now = time.perf_counter()
            if self.last is not None and now - self.last < seconds_per_token:
                time.sleep(seconds_per_token - (now - self.last))
            self.last = time.perf_counter()
            return scores

    return Paced()


PROSE = (
    "Prefill reads the whole prompt in one pass, so a long question mostly delays the first word; its pace is set by "
    "arithmetic. Decode then writes one token for each full pass over the weights, and that pass is limited by "
    "memory, not by the cores: a four gigabyte model on a machine that reads thirty gigabytes a second cannot write "
    "much more than seven tokens a second. That is why a quantised model feels faster, why serving a few users at "
    "once costs almost nothing more, and why streaming the words as they come changes how long a reply feels. "
)


def forced(token_ids: list[int]):
    """A logits processor that makes greedy decoding write token_ids, over and over."""
    import torch
    from transformers import LogitsProcessor

    class Forced(LogitsProcessor):
        def __init__(self):
            self.written = 0

        def __call__(self, input_ids, scores):
            chosen = token_ids[self.written % len(token_ids)]
            self.written += 1
            forced_scores = torch.full_like(scores, -torch.inf)
            forced_scores[:, chosen] = 0.0
            return forced_scores

    return Forced()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--tok-s", type=float, default=90.0)
    parser.add_argument("--replies", type=int, default=3)
    parser.add_argument(
        "--text",
        choices=("prose", "newlines"),
        default="prose",
        help="prose: English wrapped into lines; newlines: the tiny model's own output, an empty line a token",
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the GUI thread over the replies into FILE")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "window_cpu")

    from meter_scaling import build_tiny_model
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from core.engine.in_process import InProcessEngine
    from core.generation.local_model import LocalModel
    from core.model.loader import load_model
    from gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    folder = Path(_common.scratch_dir("latencylab-window-cpu-"))
    build_tiny_model(folder, context=args.tokens * 2 + 256)
    tiny = load_model(str(folder))
    window = MainWindow(engine_factory=InProcessEngine)
    window.resize(1400, 950)
    window.show()
    window.models.accept_model(LocalModel.of(tiny))  # the loader's model, with its verbs
    window.replies.ignore_eos = True
    window.chat_panel.settings_panel.max_new_tokens.setValue(args.tokens)
    print(
        f"platform {app.platformName()}, {args.tokens} tokens at {args.tok_s:g} tok/s, {args.replies} replies, "
        f"text: {args.text}"
    )
    prose_ids = tiny.tokenizer.encode(PROSE, add_special_tokens=False)
    shares = []
    profiler = cProfile.Profile() if args.profile else None
    loop, done = QEventLoop(), []
    window.reply_finished.connect(lambda trace: (done.append(trace), loop.quit()))
    for reply in range(args.replies):
        writing = (forced(prose_ids),) if args.text == "prose" else ()
        window.models.engine.logits_processors = (paced(1.0 / args.tok_s), *writing)
        done.clear()
        window.chat_panel.input_box.setPlainText(f"Reply {reply}: write anything.")
        QTimer.singleShot(0, window.send_message)
        if profiler:
            profiler.enable()
        loop.exec()
        if profiler:
            profiler.disable()
        trace = done[0]
        shares.append(trace.window_cpu_share)
        print(
            f"reply {reply + 1}: {trace.output_tokens} tokens in {trace.metrics().e2e_s:.2f} s; the window's GUI "
            f"thread used {trace.window_cpu_share:.3f} of a core"
        )
    window.reply_finished.disconnect()
    share = _common.median(shares)
    met = share <= TARGET_CORES
    print(
        f"\nthe window's own CPU while streaming: {share:.3f} of a core (median of {len(shares)}; target <= "
        f"{TARGET_CORES}: {'met' if met else 'not met'})"
    )
    report.figure("window_cores", share, f"<= {TARGET_CORES}", met)
    if profiler:
        profiler.dump_stats(args.profile)
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(25)
    window.close()


if __name__ == "__main__":
    main()
