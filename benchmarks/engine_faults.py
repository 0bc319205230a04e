"""Engine faults, timed: kill -9 of the engine mid-reply (until the window says so, until the next reply works),
and SIGKILL of the window (until the engine is gone).

Run: .venv/bin/python benchmarks/engine_faults.py [--dtype int4]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import _common
import psutil
from _window_driver import WindowDriver

DRIVER = Path(__file__).resolve().parents[1] / "tests" / "support" / "app_driver.py"


def kill_engine_mid_reply(dtype: str) -> tuple[float, float]:
    driver = WindowDriver(dtype=dtype)
    window = driver.window
    window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    window.replies.ignore_eos = True
    window.chat_panel.input_box.setPlainText("Tell me a long story about the sea.")
    driver._wait(window.replies.token_received, window.send_message, 300)
    killed_at = time.perf_counter()
    trace = driver._wait(window.reply_finished, lambda: os.kill(window.models.engine.pid, signal.SIGKILL), 60)
    noticed = time.perf_counter() - killed_at
    assert trace.error and "SIGKILL" in trace.error, trace.error
    driver.ask("Say yes.", 4)
    working_again = time.perf_counter() - killed_at
    driver.close()
    return noticed, working_again


def kill_window() -> float:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1"}
    app = subprocess.Popen([sys.executable, str(DRIVER), "engine-report"], stdout=subprocess.PIPE, text=True, env=env)
    engine_pid = None
    for line in app.stdout:
        if line.startswith("ENGINE "):
            engine_pid = int(line.split()[1])
            break
    engine = psutil.Process(engine_pid)
    killed_at = time.perf_counter()
    app.kill()
    app.wait()
    psutil.wait_procs([engine], timeout=30)
    gone_after = time.perf_counter() - killed_at
    app.stdout.close()
    return gone_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int4")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "engine_faults")
    noticed, working = kill_engine_mid_reply(args.dtype)
    print(
        f"kill -9 of the engine mid-reply: the window showed it after {noticed * 1000:.0f} ms; the next reply "
        f"(a new engine, the model loaded again) finished {working:.1f} s after the kill"
    )
    gone = kill_window()
    print(f"SIGKILL of the window: the engine was gone {gone * 1000:.0f} ms later (parent-death signal)")
    report.figure("engine_kill_noticed_ms", noticed * 1000)
    report.figure("engine_kill_next_reply_s", working)
    report.figure("window_kill_engine_gone_ms", gone * 1000)


if __name__ == "__main__":
    main()
