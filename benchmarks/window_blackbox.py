"""The window's TPOT the way a user meets it, against `latencylab ask` on the same prompt: black box, on Xvfb.

Each round starts the app as a user does (`latencylab`, a fresh data folder) on its own Xvfb screen (1400x950),
types the prompt with xdotool and presses Enter at once (a message sent while the model loads is sent when it is
ready), reads the reply's TPOT from the chat the window saved (its own per-token stamps), ends the app, and then
runs `latencylab ask` on the same prompt, precision and length. Interleaved round by round; the ratio window/ask
is the window's cost to decode as a user sees it (target <= 1.05, issue #41), with the window's own CPU share.
Why they differ, from each reply's own CPU record (no sampler beside them to perturb it): the share of the machine's
core other programs used over the reply (the window, the X server and anything else, against ask's), and how often
the engine's threads were descheduled for them (preemptions a token).
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
from dataclasses import dataclass
from pathlib import Path

import _common
from _common import median

PROMPT = "Write a long story about a lighthouse keeper and the birds that rest on his rail."
TARGET = 1.05
BIN = Path(sys.executable).parent / "latencylab"


@dataclass
class Measured:
    """One reply: its TPOT, tokens, the window's own CPU share (None for ask's), and its CPU record (the trace's
    `cpu`: the engine's CPU, its preemptions and what other programs used over the reply)."""

    tpot_s: float
    tokens: int
    window_share: float | None
    cpu: dict

    @property
    def others_cores(self) -> float | None:
        """How much of a core other programs used over the reply (the window's processes and the X server, for the
        window's engine)."""
        others, wall = self.cpu.get("others_cpu_s"), self.cpu.get("wall_s")
        return others / wall if others is not None and wall else None

    @property
    def preemptions_a_token(self) -> float | None:
        preemptions = self.cpu.get("preemptions")
        return preemptions / self.tokens if preemptions is not None and self.tokens else None


def tpot_from_saved_chat(data_dir: Path, timeout_s: float, nth: int = 1) -> Measured | None:
    """The nth finished reply the window saved (in any of its chats, in the order they were asked), once it is
    there."""
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
            return Measured(
                (stamps[-1] - stamps[0]) / 1e9 / (len(stamps) - 1), len(stamps), share, trace.get("cpu") or {}
            )
        time.sleep(0.2)
    return None


def window_round(display: str, max_new_tokens: int, streaming: bool = True, replies: int = 1) -> list[Measured]:
    """Each of `replies` replies asked in a row, the first as the app opens."""
    data_dir = Path(tempfile.mkdtemp(prefix="latencylab-blackbox-"))
    # Settings of its own too: a round that turns streaming off (Ctrl+T, which the window saves) must not hand the
    # next round a window that starts with it off.
    env = {
        **os.environ,
        "DISPLAY": display,
        "LATENCYLAB_DATA_DIR": str(data_dir),
        "XDG_CONFIG_HOME": str(data_dir / "config"),
        "QT_QPA_PLATFORM": "xcb",
    }
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


def ask_round(max_new_tokens: int) -> Measured:
    done = subprocess.run(
        [str(BIN), "ask", PROMPT, "--json", "--max-new-tokens", str(max_new_tokens), "--temperature", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LATENCYLAB_DATA_DIR": _common.scratch_dir("latencylab-blackbox-ask-")},
    )
    report = json.loads(done.stdout)
    return Measured(report["tpot_s"], report["output_tokens"], None, report.get("cpu") or {})


def describe(window: Measured, ask: Measured) -> str:
    """One reply against ask's: TPOTs, ratio, the window's own CPU, and what took the cores from decode in each."""
    own = f"{window.window_share:.3f}" if window.window_share is not None else "not saved"
    return (
        f"window TPOT {window.tpot_s * 1e3:.2f} ms ({window.tokens} tokens), ask {ask.tpot_s * 1e3:.2f} ms "
        f"({ask.tokens} tokens): {window.tpot_s / ask.tpot_s:.3f}x; the window's own CPU {own} of a core; other "
        f"programs used {_share(window.others_cores)} of a core (beside ask {_share(ask.others_cores)}), the "
        f"engine's threads descheduled {_count(window.preemptions_a_token)} times a token (ask's "
        f"{_count(ask.preemptions_a_token)})"
    )


def summary(pairs: list[tuple[Measured, Measured]]) -> str:
    """Medians over (window, ask) pairs: the ratio with its range, and the CPU figures describe() gives per round."""
    ratios = [window.tpot_s / ask.tpot_s for window, ask in pairs]

    def middle(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return median(known) if known else None

    own = middle([window.window_share for window, _ in pairs])
    return (
        f"window/ask {median(ratios):.3f}x (range {min(ratios):.3f}-{max(ratios):.3f}x); the window's own CPU "
        f"{_share(own)} of a core; other programs {_share(middle([window.others_cores for window, _ in pairs]))} "
        f"of a core beside the window's engine, {_share(middle([ask.others_cores for _, ask in pairs]))} beside ask; "
        f"preemptions a token {_count(middle([window.preemptions_a_token for window, _ in pairs]))} against "
        f"{_count(middle([ask.preemptions_a_token for _, ask in pairs]))}"
    )


def _share(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "?"


def _count(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "?"


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
    firsts: list[tuple[Measured, Measured]] = []  # (the window's first reply, ask's), round by round
    laters: list[tuple[Measured, Measured]] = []  # later replies in the same window, against that round's ask
    try:
        time.sleep(1.0)  # the X server takes its socket
        for round_index in range(args.rounds):
            replies = window_round(display, args.max_new_tokens, not args.no_stream, args.replies)
            ask = ask_round(args.max_new_tokens)
            firsts.append((replies[0], ask))
            print(f"round {round_index + 1}: {describe(replies[0], ask)}")
            for nth, later in enumerate(replies[1:], start=2):
                laters.append((later, ask))
                print(f"  reply {nth} in the same window: {describe(later, ask)}")
    finally:
        screen.terminate()
        screen.wait(10)
    ratio = median([window.tpot_s / ask.tpot_s for window, ask in firsts])
    print(
        f"median over {len(firsts)} rounds, the first reply as the app opens: window "
        f"{median([window.tpot_s for window, _ in firsts]) * 1e3:.2f} ms, ask "
        f"{median([ask.tpot_s for _, ask in firsts]) * 1e3:.2f} ms, {summary(firsts)} "
        f"(target <= {TARGET}: {'met' if ratio <= TARGET else 'NOT met'})"
    )
    if laters:
        later_ratio = median([window.tpot_s / ask.tpot_s for window, ask in laters])
        print(f"later replies in the same window ({len(laters)}): {summary(laters)}")
        report.figure("later_replies_window_over_ask_tpot", later_ratio, f"<= {TARGET}", later_ratio <= TARGET)
    report.figure("window_over_ask_tpot", ratio, f"<= {TARGET}", ratio <= TARGET)


if __name__ == "__main__":
    main()
