"""`latencylab ask` ends cleanly on every exit path: a reader that leaves, a closed or full stdout, Ctrl+C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk
from tests.support.output import read_until

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process

ROOT = Path(__file__).resolve().parents[2]
STORY = "Write a long story about a dragon"
LONG_PROMPT = "Read this carefully. " + "The river runs past the old mill and the bridge. " * 400  # ~4k tokens


def ask_command(prompt: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", "ask", prompt, *options]


def default_sigint() -> None:
    # A child starts with SIGINT ignored when the test run itself was started in the background (`&`),
    # and Python then installs no KeyboardInterrupt handler; a user's terminal delivers Ctrl+C normally.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(command, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, preexec_fn=default_sigint, **kwargs)


def read_stderr_until(process: subprocess.Popen, marker: bytes) -> bytes:
    seen = b""
    for line in process.stderr:
        seen += line
        if marker in line:
            return seen
    return seen


def finish(process: subprocess.Popen, seen: bytes = b"") -> tuple[int, str]:
    _, rest = process.communicate(timeout=120)
    return process.returncode, (seen + (rest or b"")).decode("utf-8", "replace")


def pipe_closed_early():
    process = start(ask_command(STORY, "--max-new-tokens", "60"), stdout=subprocess.PIPE)
    assert process.stdout.read(10)  # like `| head -c 10`: the reader takes a few bytes and leaves
    process.stdout.close()
    return finish(process)


def in_bash(redirect: str, *options: str):
    command = " ".join(f"'{part}'" for part in ask_command(STORY, "--max-new-tokens", "12", *options))
    return finish(start(["bash", "-c", f"exec {command} {redirect}"]))


def interrupt_after_first_token():
    process = start(ask_command(STORY, "--max-new-tokens", "200"), stdout=subprocess.PIPE)
    assert process.stdout.read(1)
    process.send_signal(signal.SIGINT)
    return finish(process)


def interrupt_during(marker: bytes, prompt: str):
    process = start(ask_command(prompt, "--max-new-tokens", "50"), stdout=subprocess.PIPE)
    seen = read_stderr_until(process, marker)
    process.send_signal(signal.SIGINT)
    out, rest = process.communicate(timeout=120)
    assert out == b"" or marker != b"model ready"  # interrupted before any token: during the prompt's pass
    return process.returncode, (seen + rest).decode("utf-8", "replace")


CASES = {
    # name: (scenario, exit status, what stderr must say)
    "pipe closed early": (pipe_closed_early, 141, None),
    "stdout closed": (lambda: in_bash(">&-"), 1, "stdout is closed"),
    "stdout closed, --json": (lambda: in_bash(">&-", "--json"), 1, "stdout is closed"),
    "stdout is /dev/full": (lambda: in_bash(">/dev/full"), 1, "No space left on device"),
    "stdout is /dev/full, --json": (lambda: in_bash(">/dev/full", "--json"), 1, "No space left on device"),
    "Ctrl+C during decode": (interrupt_after_first_token, 130, "stopped (Ctrl+C)"),
    "Ctrl+C during prefill": (lambda: interrupt_during(b"model ready", LONG_PROMPT), 130, "stopped (Ctrl+C)"),
    # The native load (the default) maps the file's tensors one by one: interrupted in the middle of it.
    "Ctrl+C during load": (lambda: interrupt_during(b"mapping blk.", "hi"), 130, "stopped (Ctrl+C)"),
}


@pytest.mark.model
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", list(CASES))
def test_every_exit_path_ends_with_its_status_and_one_line(embedded_model, name):
    scenario, status, message = CASES[name]
    code, stderr = scenario()
    assert code == status, stderr
    assert "Traceback" not in stderr and "terminate called" not in stderr and "Exception ignored" not in stderr
    said = [line for line in stderr.splitlines() if line.startswith("latencylab:")]
    if message is None:
        assert said == []  # a reader that leaves is no error: quiet
    else:
        assert len(said) == 1 and message in said[0], stderr


def _stalled_story() -> Script:
    """Two chunks of a reply, then nothing until the test lets go: a reply in the middle of its decode."""
    return Script(
        chunks=[openai_chunk("Once", role="assistant"), openai_chunk(" upon"), openai_chunk(" a time")], stall_after=2
    )


def test_ctrl_c_during_a_reply_prints_what_it_made_with_130():
    """As `ollama run`: the words already on screen stay, the line is ended, and the stop is said once."""
    with ScriptedServer(_stalled_story()) as server:
        process = start(ask_command("Tell a story", "--model", server.url), stdout=subprocess.PIPE)
        shown = read_until(process.stdout, b"upon")  # the reply's second chunk is on screen
        process.send_signal(signal.SIGINT)
        out, stderr = process.communicate(timeout=120)
    said = [line for line in stderr.decode().splitlines() if line.startswith("latencylab:")]
    assert process.returncode == 130 and said == ["latencylab: stopped (Ctrl+C)"], stderr
    assert (shown + out).decode() == "Once upon\n" and b"Traceback" not in stderr


def test_ctrl_c_during_a_json_reply_still_prints_its_object():
    """The partial reply's JSON: its text so far, its timings, and why it ended."""
    with ScriptedServer(_stalled_story()) as server:
        process = start(ask_command("Tell a story", "--model", server.url, "--json"), stdout=subprocess.PIPE)
        assert server.stalled.wait(120), "the server never got the request"
        process.send_signal(signal.SIGINT)
        out, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and b"Traceback" not in stderr, stderr
    report = json.loads(out)
    assert report["stop_reason"] == "stopped" and "Once upon".startswith(report["text"])
