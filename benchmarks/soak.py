"""Soak: many consecutive chat turns through the real window and model; RSS, thread and QThread counts.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/soak.py [--turns 100] [--warmup 10]
     [--max-new-tokens 4] [--turns-per-chat 10]

Every turn goes through the window as a user's would (box, Send, streamed reply, chat saved to disk).
A new chat starts every --turns-per-chat turns, so the warm-up sees the longest prompt the run will see:
after it, memory should stay flat. Chats go to a temporary data folder, not the user's.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
import warnings

import _common  # (offline mode)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

QUESTIONS = ("Name a colour.", "Say a number.", "Name a fruit.", "Pick an animal.", "Name a city.")


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def os_thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def qthread_counts() -> tuple[int, int]:
    """(QThread objects alive, of which running) among the objects Python can see."""
    from PySide6.QtCore import QThread

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on torch's deprecated module proxies warns
        threads = [obj for obj in gc.get_objects() if isinstance(obj, QThread)]
    return len(threads), sum(1 for thread in threads if thread.isRunning())


def wait_for(signal, timeout_s: float, action) -> list:
    """Run action, then spin a local event loop until signal fires (or fail after timeout_s)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    received: list = []

    def on_signal(*args):
        received.append(args)
        loop.quit()

    signal.connect(on_signal)
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    timer.start(int(timeout_s * 1000))
    action()
    if not received:
        loop.exec()
    timer.stop()
    signal.disconnect(on_signal)
    if not received:
        raise TimeoutError(f"no signal within {timeout_s} s")
    return received[0]


def engine_facts() -> tuple[int, float]:
    """(engine processes alive under this one, their total RSS in MiB)."""
    import psutil

    engines = [
        child for child in psutil.Process().children() if child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    ]
    return len(engines), sum(child.memory_info().rss for child in engines) / 2**20


def snapshot(label: str, turn: int) -> dict:
    gc.collect()
    qthreads, running = qthread_counts()
    engines, engine_rss = engine_facts()
    return {
        "label": label,
        "turn": turn,
        "rss_mb": rss_bytes() / 2**20,
        "py_threads": threading.active_count(),
        "os_threads": os_thread_count(),
        "qthreads": qthreads,
        "qthreads_running": running,
        "engines": engines,
        "engine_rss_mb": engine_rss,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--turns-per-chat", type=int, default=10)
    parser.add_argument("--model", default="embedded")
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "soak")

    data = _common.scratch_dir("latencylab-soak-")
    os.environ["XDG_DATA_HOME"] = os.path.join(data, "data")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(data, "config")

    from PySide6.QtWidgets import QApplication

    from core.chats.store import ChatStore
    from gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow()
    window.show()
    started = time.perf_counter()
    wait_for(window.model_ready, 600, lambda: window.start_loading(args.model, "float32"))
    print(f"model loaded in {time.perf_counter() - started:.1f} s: {window.ready.name}", flush=True)
    window.chat_panel.settings_panel.max_new_tokens.setValue(args.max_new_tokens)

    rows = [snapshot("start", 0)]
    turn_times, failures, prompt_tokens = [], 0, []
    for turn in range(1, args.turns + 1):
        if turn > 1 and (turn - 1) % args.turns_per_chat == 0:
            window.new_chat()
        window.chat_panel.input_box.setPlainText(f"Turn {turn}. {QUESTIONS[turn % len(QUESTIONS)]}")
        began = time.perf_counter()
        (trace,) = wait_for(window.reply_finished, 300, window.send_message)
        turn_times.append(time.perf_counter() - began)
        if trace is None or trace.error:
            failures += 1
        else:
            prompt_tokens.append(trace.prompt_tokens)
        if turn == args.warmup:
            rows.append(snapshot("after warm-up", turn))
        if turn % 10 == 0:
            print(f"turn {turn:3d}: {turn_times[-1]:.2f} s, rss {rss_bytes() / 2**20:.0f} MB", flush=True)
    rows.append(snapshot("end", args.turns))
    window.saved_chats.keeper.saver.flush(30)
    chats_on_disk = len(ChatStore().scan())
    window.close()
    rows.append(snapshot("after close", args.turns))

    print()
    print(
        f"{'':14} {'turn':>5} {'window RSS MB':>14} {'engine RSS MB':>14} {'engines':>8} {'Python threads':>15} "
        f"{'OS threads':>11} {'QThreads':>9} {'running':>8}"
    )
    for row in rows:
        print(
            f"{row['label']:14} {row['turn']:5d} {row['rss_mb']:14.1f} {row['engine_rss_mb']:14.1f} "
            f"{row['engines']:8d} {row['py_threads']:15d} "
            f"{row['os_threads']:11d} {row['qthreads']:9d} {row['qthreads_running']:8d}"
        )
    warm, end = rows[1] if args.warmup < args.turns else rows[0], rows[-2]
    growth = (end["rss_mb"] - warm["rss_mb"]) / warm["rss_mb"]
    engine_growth = (end["engine_rss_mb"] - warm["engine_rss_mb"]) / warm["engine_rss_mb"]
    engines_counts = {row["engines"] for row in rows[:-1]}
    print()
    print(
        f"turns: {args.turns} ({failures} failed), {args.turns_per_chat} per chat, "
        f"max {args.max_new_tokens} new tokens; prompt tokens {min(prompt_tokens)}-{max(prompt_tokens)}"
    )
    print(f"turn time: median {sorted(turn_times)[len(turn_times) // 2]:.2f} s, max {max(turn_times):.2f} s")
    print(
        f"window RSS growth after warm-up (turn {warm['turn']} -> {end['turn']}): {growth:+.1%} "
        f"({end['rss_mb'] - warm['rss_mb']:+.1f} MB); target < 10%"
    )
    print(
        f"engine RSS growth after warm-up: {engine_growth:+.1%} "
        f"({end['engine_rss_mb'] - warm['engine_rss_mb']:+.1f} MB); target < 10%"
    )
    print(
        f"engine processes during the run: {sorted(engines_counts)} (target: always 1); after close: "
        f"{rows[-1]['engines']}"
    )
    print(
        f"threads after warm-up -> end: Python {warm['py_threads']} -> {end['py_threads']}, "
        f"OS {warm['os_threads']} -> {end['os_threads']}, QThread {warm['qthreads']} -> {end['qthreads']}"
    )
    print(f"chats saved on disk: {chats_on_disk}")
    app.quit()
    stable = warm["py_threads"] == end["py_threads"] and warm["qthreads"] == end["qthreads"]
    flat = growth < 0.10 and engine_growth < 0.10 and engines_counts == {1} and rows[-1]["engines"] == 0
    return 0 if failures == 0 and flat and stable else 1


if __name__ == "__main__":
    sys.exit(main())
