"""The real app in its own process: closing mid-load or mid-reply exits within 2 s; SIGKILL loses nothing saved."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.chats.store import ChatStore

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process

DRIVER = Path(__file__).resolve().parents[1] / "support" / "app_driver.py"
REPO = Path(__file__).resolve().parents[2]


def driver_env(tmp_path, cache_dir=None):
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HF_HUB_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    if cache_dir is not None:
        env["LATENCYLAB_CACHE_DIR"] = str(cache_dir)
    return env


def run_driver(tmp_path, *args, cache_dir=None, timeout=300):
    started = time.time()
    result = subprocess.run(
        [sys.executable, str(DRIVER), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=driver_env(tmp_path, cache_dir),
        cwd=REPO,
    )
    return result, time.time(), started


def start_driver(tmp_path, mode: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(tmp_path),
        cwd=REPO,
        **popen,
    )


def wait_for_line(process: subprocess.Popen, wanted: str) -> None:
    """Read the driver's stdout up to the line it prints at the moment the test acts on."""
    for line in process.stdout:
        if line.strip() == wanted:
            return
    pytest.fail(f"the app never printed {wanted}: {process.stderr.read()}")


def seconds_from_close_to_exit(result, ended: float) -> float:
    line = next(line for line in result.stdout.splitlines() if line.startswith("CLOSING "))
    return ended - float(line.split()[1])


def close_mid_load(tmp_path):
    # An empty model cache makes the load convert the GGUF: about 20 s that cannot be interrupted.
    result, ended, _ = run_driver(tmp_path, "close-after", "2500", cache_dir=tmp_path / "empty-cache")
    assert result.returncode == 0, result.stderr
    return result, seconds_from_close_to_exit(result, ended)


@pytest.mark.timing
def test_closing_mid_load_exits_within_2s(tmp_path):
    assert close_mid_load(tmp_path)[1] < 2.0


@pytest.mark.timing
@pytest.mark.model
def test_closing_mid_reply_exits_within_2s(tmp_path, embedded_model):
    result, ended, _ = run_driver(tmp_path, "close-mid-reply")
    assert result.returncode == 0, result.stderr
    assert seconds_from_close_to_exit(result, ended) < 2.0


def test_closing_mid_load_exits_without_waiting_for_the_load_or_thread_warnings(tmp_path):
    result, _ = close_mid_load(tmp_path)
    # The app exited while the conversion was still running: its staging folder is left behind, with no
    # finished cache, which only happens when the process did not wait for the load.
    assert not any((tmp_path / "empty-cache" / "gguf").glob("*-v*/latencylab-manifest.json"))
    assert "Destroyed while thread" not in result.stderr and "Traceback" not in result.stderr
    assert "Segmentation" not in result.stderr


@pytest.mark.model
def test_closing_mid_reply_exits_and_keeps_every_turn(tmp_path, embedded_model):
    result, _, _ = run_driver(tmp_path, "close-mid-reply")
    assert result.returncode == 0, result.stderr
    assert "Destroyed while thread" not in result.stderr and "Traceback" not in result.stderr
    store = ChatStore(tmp_path / "data" / "latencylab" / "chats")
    (summary,) = store.scan()
    record = store.load(summary.chat_id)
    assert [m.role for m in record.messages] == ["user", "assistant", "user"] and record.reply_pending


@pytest.mark.model
def test_sigkill_mid_reply_then_relaunch_keeps_every_earlier_turn(tmp_path, embedded_model):
    process = start_driver(tmp_path, "kill-mid-reply")
    try:
        wait_for_line(process, "STREAMING")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL

    folder = tmp_path / "data" / "latencylab" / "chats"
    store = ChatStore(folder)
    (summary,) = store.scan()
    assert store.notices == []  # the file is whole: never corrupt
    record = store.load(summary.chat_id)
    assert [m.content for m in record.messages] == [
        "First question: what is a lighthouse?",
        record.messages[1].content,
        "Second question: tell me a very long story about the sea.",
    ]
    assert record.messages[1].role == "assistant" and record.messages[1].content.strip()
    assert record.reply_pending and len(record.replies) == 1  # the half-written reply is absent, marked pending

    result, _, _ = run_driver(tmp_path, "inspect")
    assert result.returncode == 0, result.stderr
    assert "CHATS 1" in result.stdout and "MESSAGES ['user', 'assistant', 'user']" in result.stdout
    shown = result.stdout.split("TRANSCRIPT-BEGIN")[1]
    assert "First question" in shown and "Second question" in shown
    assert "The reply to your last message was interrupted" in shown


def test_ctrl_c_in_the_terminal_closes_the_window_and_its_engine(tmp_path):
    """Was: the window went on (a KeyboardInterrupt traceback from whichever slot ran next). A terminal's Ctrl+C
    reaches the whole process group, the engine included: the window closes as its close button does, and the app
    ends with the shell's status for Ctrl+C."""
    process = start_driver(tmp_path, "shown", start_new_session=True)  # a group, as a terminal's foreground job
    try:
        wait_for_line(process, "SHOWN")
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
