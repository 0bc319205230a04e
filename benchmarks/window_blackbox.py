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


def tpot_from_saved_chat(data_dir: Path, timeout_s: float) -> tuple[float, int, float | None] | None:
    """(TPOT, tokens, the window's CPU share) of the first finished reply the window saved, once it is there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in (data_dir / "chats").glob("*.json"):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being written
            for reply in document.get("replies") or []:
                trace = reply.get("trace") or {}
                stamps = trace.get("timestamps_ns") or []
                if trace.get("stop_reason") and len(stamps) > 1:
                    wall_s = (trace.get("finished_ns") or stamps[-1]) - trace["request_start_ns"]
                    share = trace["window_cpu_s"] / (wall_s / 1e9) if trace.get("window_cpu_s") else None
                    return (stamps[-1] - stamps[0]) / 1e9 / (len(stamps) - 1), len(stamps), share
        time.sleep(0.2)
    return None


def window_round(display: str, max_new_tokens: int, streaming: bool = True) -> tuple[float, int, float | None]:
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
        subprocess.run(["xdotool", "type", "--delay", "5", PROMPT], env=env, timeout=60)
        subprocess.run(["xdotool", "key", "Return"], env=env, timeout=30)
        measured = tpot_from_saved_chat(data_dir, timeout_s=300)
        if measured is None:
            raise RuntimeError("the window saved no finished reply within 300 s")
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
    try:
        time.sleep(1.0)  # the X server takes its socket
        for round_index in range(args.rounds):
            window_tpot, window_tokens, share = window_round(display, args.max_new_tokens, not args.no_stream)
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
    finally:
        screen.terminate()
        screen.wait(10)
    ratio = median(ratios)
    print(
        f"median over {len(ratios)} rounds: window {median(windows) * 1e3:.2f} ms, ask {median(asks) * 1e3:.2f} ms, "
        f"window/ask {ratio:.3f}x (target <= {TARGET}: {'met' if ratio <= TARGET else 'NOT met'}); range "
        f"{min(ratios):.3f}-{max(ratios):.3f}x"
        + (f"; the window's own CPU {median(shares):.3f} of a core while it streamed" if shares else "")
    )
    report.figure("window_over_ask_tpot", ratio, f"<= {TARGET}", ratio <= TARGET)


if __name__ == "__main__":
    main()
