"""What a small busy neighbour costs decode: TPOT while another program takes a share of a core, against without it.

The window costs decode more than its own CPU share (issue #41): on 2 cores the decode's 2 threads meet at a barrier
hundreds of times a token, so a thread held off its core holds up both. This measures that with no window: one long
`latencylab ask` (greedy, a copying prompt), beside a neighbour process that burns BURN ms of CPU every PERIOD ms
(pure arithmetic, no memory to speak of) and is stopped and resumed every quarter second (SIGSTOP/SIGCONT). Each
token interval is put with the neighbour's state when it began and ended (intervals that span a switch are dropped),
so both sides share one process, one context length and the same minute of the machine.
Prints TPOT with and without the neighbour, their ratio, and the decode time lost per millisecond the neighbour ran: 1
where a millisecond taken costs decode a millisecond, more where the threads' waiting for each other multiplies it.
Run: .venv/bin/python benchmarks/busy_neighbour.py [--burn-ms 3] [--period-ms 40] [--tokens 1500] [--runs 2]
"""

from __future__ import annotations

import argparse
import bisect
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import _common
from _common import median

BIN = Path(sys.executable).parent / "latencylab"
PARAGRAPH = "The keeper climbed the stairs each night to light the lamp, and the birds rested on his rail until dawn. "
PROMPT = "Repeat this text exactly, word for word: " + PARAGRAPH * 12
SWITCH_S = 0.25

NEIGHBOUR = """
import sys, time
burn, period = float(sys.argv[1]) / 1e3, float(sys.argv[2]) / 1e3
due = time.monotonic()
while True:
    due += period
    until = time.thread_time() + burn
    while time.thread_time() < until:
        pass
    time.sleep(max(0.0, due - time.monotonic()))
"""


def one_run(burn_ms: float, period_ms: float, tokens: int) -> tuple[float, float]:
    """(TPOT without the neighbour, TPOT beside it), in ms, from one reply."""
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(burn_ms), str(period_ms)])
    neighbour.send_signal(signal.SIGSTOP)
    switches: list[tuple[int, bool]] = []
    finished = threading.Event()

    def switch() -> None:
        running = False
        while not finished.is_set():
            running = not running
            neighbour.send_signal(signal.SIGCONT if running else signal.SIGSTOP)
            switches.append((time.perf_counter_ns(), running))
            finished.wait(SWITCH_S)

    switcher = threading.Thread(target=switch)
    switcher.start()
    try:
        done = subprocess.run(
            [str(BIN), "ask", PROMPT, "--json", "--max-new-tokens", str(tokens), "--temperature", "0"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    finally:
        finished.set()
        switcher.join()
        neighbour.kill()
        neighbour.wait()
    stamps = json.loads(done.stdout)["trace"]["timestamps_ns"]  # perf_counter_ns: this process's clock too
    starts = [at for at, _ in switches]
    quiet, busy = [], []
    for begun, ended in zip(stamps, stamps[1:]):
        index = bisect.bisect_right(starts, begun) - 1
        if index < 0 or index != bisect.bisect_right(starts, ended) - 1:
            continue
        (busy if switches[index][1] else quiet).append((ended - begun) / 1e6)
    if len(quiet) < 20 or len(busy) < 20:
        raise RuntimeError(f"the reply was too short to compare ({len(stamps)} tokens)")
    return sum(quiet) / len(quiet), sum(busy) / len(busy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn-ms", type=float, default=3.0)
    parser.add_argument("--period-ms", type=float, default=40.0)  # the window's frame interval
    parser.add_argument("--tokens", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=2)
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "busy_neighbour")
    share = args.burn_ms / args.period_ms
    ratios = []
    for run in range(args.runs):
        quiet, busy = one_run(args.burn_ms, args.period_ms, args.tokens)
        ratios.append(busy / quiet)
        print(f"run {run + 1}: TPOT {quiet:.3f} ms alone, {busy:.3f} ms beside the neighbour: {busy / quiet:.3f}x")
    ratio = median(ratios)
    lost_per_ms = (1 - 1 / ratio) / share  # of each wall-clock ms, decode lost 1 - 1/ratio; the neighbour took share
    print(
        f"a neighbour taking {share:.3f} of a core ({args.burn_ms:g} ms every {args.period_ms:g} ms): decode "
        f"{ratio:.3f}x as slow (median of {len(ratios)}); each ms it takes costs decode {lost_per_ms:.1f} ms"
    )
    report.figure("tpot_beside_neighbour_over_alone", ratio)
    report.figure("decode_ms_lost_per_neighbour_ms", lost_per_ms)


if __name__ == "__main__":
    main()
