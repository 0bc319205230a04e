"""Odd environments: a config folder that cannot be written, a C locale, a non-number metric, stdin or stderr closed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from core.timing.export import NOT_FINITE, json_text
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

REPLY = "héllo wörld 👋 שלום"


def test_a_config_folder_that_cannot_be_written_is_one_line_when_the_window_closes(open_window, tmp_path, capfd):
    """Was: an OSError traceback from closeEvent. (The tests run as root, whom a read-only mode does not stop, so
    the settings' folder is a file instead: the same refusal from the operating system.)"""
    (tmp_path / "config").write_text("not a folder")  # where conftest points QSettings
    window = open_window(show=False)
    window.chat_panel.streaming_toggle.toggle()  # saves the settings: the status bar says it could not
    assert "settings could not be saved" in window.statusBar().currentMessage()
    window.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err
    said = [line for line in err.splitlines() if line.startswith("latencylab:")]
    assert len(said) == 1 and "the window's settings could not be saved in" in said[0]


def test_json_text_nulls_what_json_cannot_hold_and_says_why():
    text = json_text({"tpot_s": math.nan, "itl_s": [0.1, math.inf], "ok": 1.5, "server": {"x": -math.inf}})
    document = json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSON"))
    assert document["tpot_s"] is None and document["itl_s"] == [0.1, None] and document["ok"] == 1.5
    assert document["null_because"] == {"tpot_s": NOT_FINITE, "itl_s[1]": NOT_FINITE, "server.x": NOT_FINITE}


def _server_with_nan_timings() -> Script:
    timings = '{"prompt_ms": NaN, "predicted_ms": Infinity, "predicted_n": 2, "predicted_per_token_ms": -Infinity}'
    last = (
        '{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, '
        f'"completion_tokens": 2}}, "timings": {timings}}}'
    )
    return Script(owned_by="llamacpp", chunks=[openai_chunk(REPLY), last, "[DONE]"])


def test_ask_json_is_valid_json_when_a_server_sends_nan(run_cli):
    """Was: bare NaN and Infinity in `ask --json`, which no strict parser reads."""
    with ScriptedServer(_server_with_nan_timings()) as server:
        result = run_cli("ask", "Hi", "--model", server.url, "--json", "--max-new-tokens", "8")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"bare {name} in ask --json"))
    assert report["text"] == REPLY


@pytest.mark.subprocess  # latencylab under LANG=C, as a user's shell would start it
@pytest.mark.parametrize("json_flag", [False, True])
def test_a_utf8_reply_prints_in_the_c_locale(json_flag):
    """Was: "'ascii' codec can't encode" with LANG=C and PYTHONUTF8=0."""
    with ScriptedServer(Script(chunks=[openai_chunk(REPLY), openai_chunk(finish="stop"), "[DONE]"])) as server:
        args = ["ask", "Hi", "--model", server.url, "--max-new-tokens", "8"] + (["--json"] if json_flag else [])
        env = {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *args], capture_output=True, timeout=300, env={**os.environ, **env}
        )
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    out = result.stdout.decode("utf-8")
    assert (json.loads(out)["text"] if json_flag else out.strip()) == REPLY


@pytest.mark.subprocess  # stdin closed as a shell's `<&-` closes it: Python's sys.stdin is then None
def test_chat_with_stdin_closed_says_so_in_one_line_before_loading_the_model():
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "chat"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "latencylab: error: stdin is closed; chat reads one message a line from it (ask takes one question as an "
        "argument)"
    ]


@pytest.mark.subprocess
@pytest.mark.parametrize("stderr", ["closed", "reader gone"])
def test_ask_prints_its_reply_when_stderr_cannot_be_written(stderr):
    """Was: exit 1 and no reply; writing the progress to a closed stderr failed the command."""
    with ScriptedServer(Script(chunks=[openai_chunk(REPLY), openai_chunk(finish="stop"), "[DONE]"])) as server:
        reader, writer = os.pipe()
        os.close(reader)  # a pipe whose reader has gone: each write is EPIPE
        child = subprocess.run(
            [sys.executable, "-m", "cli.main", "ask", "Hi", "--model", server.url, "--max-new-tokens", "8"],
            stdout=subprocess.PIPE,
            stderr=writer,
            timeout=300,
            preexec_fn=(lambda: os.close(2)) if stderr == "closed" else None,
        )
        os.close(writer)
    assert child.returncode == 0
    assert child.stdout.decode("utf-8").strip() == REPLY
