"""The window's TPOT the way a user meets it, against `latencylab ask` on the same prompt: black box, on Xvfb.

Each round starts the app as a user does (`latencylab`, a fresh data folder) on its own Xvfb screen (1400x950),
types the prompt with xdotool and presses Enter at once (a message sent while the model loads is sent when it is
ready), reads the reply's TPOT from the chat the window saved (its own per-token stamps), ends the app, and then
runs `latencylab ask` on the same prompt, precision and length. Interleaved round by round; the ratio window/ask
is the window's cost to decode as a user sees it (target <= 1.05, issue #41), with the window's own CPU share.
Run: .venv/bin/python benchmarks/window_blackbox.py [--rounds 5] [--max-new-tokens 128]
Needs Xvfb and xdotool (Debian: xvfb, xdotool).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import median

PROMPT = "Write a long story about a lighthouse keeper and the birds that rest on his rail."
TARGET = 1.05
BIN = Path(sys.executable).parent / "latencylab"


def tpot_from_saved_chat(data_dir: Path, timeout_s: float, nth: int = 1) -> tuple[float, int, float | None] | None:
    """(TPOT, tokens, the window's CPU share) of the nth finished reply the window saved (in any of its chats, in the
    order they were asked), once it is there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        finished = []
        for path in (data_dir / "chats").glob("*.json"):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being written
            finished += [
                reply.get("trace") or {}
                for reply in document.get("replies") or []
                if (reply.get("trace") or {}).get("stop_reason")
                and len((reply.get("trace") or {}).get("timestamps_ns") or []) > 1
            ]
        if len(finished) >= nth:
            trace = sorted(finished, key=lambda each: each["request_start_ns"])[nth - 1]
            stamps = trace["timestamps_ns"]
            wall_s = (trace.get("finished_ns") or stamps[-1]) - trace["request_start_ns"]
            share = trace["window_cpu_s"] / (wall_s / 1e9) if trace.get("window_cpu_s") else None
            return (stamps[-1] - stamps[0]) / 1e9 / (len(stamps) - 1), len(stamps), share
        time.sleep(0.2)
    return None


def window_round(
    display: str, max_new_tokens: int, streaming: bool = True, replies: int = 1
) -> list[tuple[float, int, float | None]]:
    """(TPOT, tokens, the window's CPU share) of each of `replies` replies asked in a row, the first as the app opens."""
    data_dir = Path(tempfile.mkdtemp(prefix="latencylab-blackbox-"))
    env = {**os.environ, "DISPLAY": display, "LATENCYLAB_DATA_DIR": str(data_dir), "QT_QPA_PLATFORM": "xcb"}
    app = subprocess.Popen(
        [str(BIN), "--max-new-tokens", str(max_new_tokens), "--temperature", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        window = subprocess.run(
            ["xdotool", "search", "--sync", "--onlyvisible", "--name", "Latency Lab"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.split()[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", window], env=env, timeout=30)
        if not streaming:  # Ctrl+T: the reply shows whole at its end, nothing painted per token
            subprocess.run(["xdotool", "key", "ctrl+t"], env=env, timeout=30)
        measured = []
        for nth in range(1, replies + 1):
            if nth > 1:  # a new chat (Ctrl+N): each reply one turn, as ask's, not the last one's in its context
                subprocess.run(["xdotool", "key", "ctrl+n"], env=env, timeout=30)
            subprocess.run(["xdotool", "type", "--delay", "5", PROMPT], env=env, timeout=60)
            subprocess.run(["xdotool", "key", "Return"], env=env, timeout=30)
            reply = tpot_from_saved_chat(data_dir, timeout_s=300, nth=nth)
            if reply is None:
                raise RuntimeError(f"the window saved no finished reply {nth} within 300 s")
            measured.append(reply)
        return measured
    finally:
        app.terminate()
        try:
            app.wait(10)
        except subprocess.TimeoutExpired:
            app.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def ask_round(max_new_tokens: int) -> tuple[float, int]:
    done = subprocess.run(
        [str(BIN), "ask", PROMPT, "--json", "--max-new-tokens", str(max_new_tokens), "--temperature", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LATENCYLAB_DATA_DIR": tempfile.mkdtemp(prefix="latencylab-blackbox-ask-")},
    )
    report = json.loads(done.stdout)
    return report["tpot_s"], report["output_tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--no-stream", action="store_true", help="the window's streaming off (Ctrl+T)")
    parser.add_argument(
        "--replies",
        type=int,
        default=1,
        help="replies asked in a row in each window, each in a new chat (the first as the window opens)",
    )
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "window_blackbox")
    display = ":97"
    screen = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "1400x950x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ratios, windows, asks, shares = [], [], [], []
    later_ratios, later_shares = [], []
    try:
        time.sleep(1.0)  # the X server takes its socket
        for round_index in range(args.rounds):
            replies = window_round(display, args.max_new_tokens, not args.no_stream, args.replies)
            (window_tpot, window_tokens, share), later = replies[0], replies[1:]
            ask_tpot, ask_tokens = ask_round(args.max_new_tokens)
            ratios.append(window_tpot / ask_tpot)
            windows.append(window_tpot)
            asks.append(ask_tpot)
            if share is not None:
                shares.append(share)
            print(
                f"round {round_index + 1}: window TPOT {window_tpot * 1e3:.2f} ms ({window_tokens} tokens), ask "
                f"{ask_tpot * 1e3:.2f} ms ({ask_tokens} tokens): {window_tpot / ask_tpot:.3f}x; window's own CPU "
                + (f"{share:.3f} of a core" if share is not None else "not saved")
            )
            for nth, (tpot, tokens, own) in enumerate(later, start=2):
                later_ratios.append(tpot / ask_tpot)
                if own is not None:
                    later_shares.append(own)
                print(
                    f"  reply {nth} in the same window: {tpot * 1e3:.2f} ms ({tokens} tokens): {tpot / ask_tpot:.3f}x; "
                    + (f"window's own CPU {own:.3f} of a core" if own is not None else "")
                )
    finally:
        screen.terminate()
        screen.wait(10)
    ratio = median(ratios)
    print(
        f"median over {len(ratios)} rounds, the first reply as the app opens: window {median(windows) * 1e3:.2f} ms, "
        f"ask {median(asks) * 1e3:.2f} ms, window/ask {ratio:.3f}x (target <= {TARGET}: "
        f"{'met' if ratio <= TARGET else 'NOT met'}); range {min(ratios):.3f}-{max(ratios):.3f}x"
        + (f"; the window's own CPU {median(shares):.3f} of a core while it streamed" if shares else "")
    )
    if later_ratios:
        print(
            f"later replies in the same window ({len(later_ratios)}): window/ask {median(later_ratios):.3f}x "
            f"(range {min(later_ratios):.3f}-{max(later_ratios):.3f}x)"
            + (f"; the window's own CPU {median(later_shares):.3f} of a core" if later_shares else "")
        )
        report.figure(
            "later_replies_window_over_ask_tpot", median(later_ratios), f"<= {TARGET}", median(later_ratios) <= TARGET
        )
    report.figure("window_over_ask_tpot", ratio, f"<= {TARGET}", ratio <= TARGET)


if __name__ == "__main__":
    main()
