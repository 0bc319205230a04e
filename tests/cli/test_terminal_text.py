"""Model and server text reaches a terminal as symbols, never as control sequences it would obey; a pipe gets it raw."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

import pytest

from core.proxy.log import format_line
from core.proxy.record import ProxyRecord
from core.terminal_text import terminal_safe
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

HOSTILE = "\x1b[2J\x1b[31mRED\x1b]0;pwned\x07\rover\x08\x00\x9b1m"


def test_control_characters_become_their_symbols_and_text_stays():
    assert terminal_safe(HOSTILE) == "␛[2J␛[31mRED␛]0;pwned␇␍over␈␀\ufffd1m"
    assert terminal_safe("line one\n\tשלום 👋") == "line one\n\tשלום 👋"


def _ask(server, stdout) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", "ask", "Hi", "--model", server.url, "--max-new-tokens", "8"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _script() -> Script:
    return Script(chunks=[openai_chunk(HOSTILE), openai_chunk(finish="stop"), "[DONE]"])


@pytest.mark.subprocess
def test_a_replys_escape_sequences_are_shown_not_obeyed_on_a_terminal():
    main_end, terminal_end = pty.openpty()
    with ScriptedServer(_script()) as server:
        child = _ask(server, terminal_end)
        os.close(terminal_end)
        shown = b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                piece = os.read(main_end, 4096)
            except OSError:  # the child closed its end: all is read
                break
            if not piece:
                break
            shown += piece
        child.wait(timeout=120)
    os.close(main_end)
    assert child.returncode == 0, child.stderr.read()
    text = shown.decode("utf-8")
    assert "␛[2J␛[31mRED␛]0;pwned␇␍over␈␀\ufffd1m" in text
    assert not any(character in text for character in "\x1b\x07\x08\x00\x9b")


@pytest.mark.subprocess
def test_a_pipe_gets_the_reply_as_it_came():
    with ScriptedServer(_script()) as server:
        child = _ask(server, subprocess.PIPE)
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.decode("utf-8").rstrip("\n") == HOSTILE


def test_the_proxys_line_shows_a_hostile_model_name_as_symbols():
    record = ProxyRecord(
        id=1,
        started_at=0.0,
        method="POST",
        path="/v1/chat/completions",
        api="openai-chat",
        status=200,
        model="m\x1b]0;x\x07",
        streamed=True,
        user_agent="agent/1",
        client_address="127.0.0.1",
        client_pid=None,
        client_process=None,
    )
    line = format_line(record)
    assert "m␛]0;x␇" in line and "\x1b" not in line and "\x07" not in line
