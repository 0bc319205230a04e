"""`latencylab chat`: one message per line, one JSON object per turn with the prompt cache's counts, and the same
exits as `ask` (a reader that leaves, a closed or full stdout, Ctrl+C, bad input)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk
from tests.support.output import read_until

pytestmark = [pytest.mark.model, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]


def chat(*options: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", "chat", *options]


def run(stdin: bytes, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(chat(*options), input=stdin, capture_output=True, timeout=600, cwd=ROOT)


def said(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode("utf-8", "replace").splitlines() if line.startswith("latencylab:")]


def test_each_turn_is_one_json_object_and_prefills_only_its_new_tokens():
    result = run(b"Name a colour.\n\nName another one.\nAnd a third?\n", "--json", "--max-new-tokens", "8")
    assert result.returncode == 0, result.stderr
    turns = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [turn["turn"] for turn in turns] == [1, 2, 3]  # the blank line is no turn
    assert turns[0]["cached_tokens"] == 0 and turns[0]["prefilled_tokens"] == turns[0]["prompt_tokens"]
    for before, turn in zip(turns, turns[1:]):
        assert turn["prompt_tokens"] > before["prompt_tokens"]
        assert turn["cached_tokens"] > before["prompt_tokens"]  # the whole last turn, less the reply's last token
        assert turn["prefilled_tokens"] == turn["prompt_tokens"] - turn["cached_tokens"] < 20
        cache = turn["prompt_cache"]
        assert (cache["reason"], cache["break_at"], cache["source"]) == (
            "the chat's history was reused from the cache",
            None,
            "local",
        )
        assert cache["memory_bytes"] >= turn["cached_tokens"] * 23_040  # 30 layers x 3 KV heads x 64 x 2 x 2 bytes
    assert all(turn["ttft_s"] > 0 and turn["text"] for turn in turns)


def test_no_prompt_cache_prefills_every_turn_whole():
    result = run(b"Name a colour.\nName another one.\n", "--json", "--max-new-tokens", "4", "--no-prompt-cache")
    turns = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert result.returncode == 0 and len(turns) == 2
    assert [turn["cached_tokens"] for turn in turns] == [0, 0]
    assert turns[1]["prompt_cache"]["reason"].startswith("prompt cache off")


def test_plain_output_streams_each_reply_on_its_own_line():
    result = run(b"Say hi.\nSay bye.\n", "--max-new-tokens", "6")
    assert result.returncode == 0 and said(result.stderr) == []
    assert len(result.stdout.decode().strip().splitlines()) >= 2


def test_bytes_that_are_not_utf8_become_replacement_characters_with_a_warning():
    result = run(b"hello \xff there\n", "--json", "--max-new-tokens", "2")
    assert result.returncode == 0, result.stderr
    assert any("not UTF-8" in line for line in said(result.stderr))


def test_a_message_too_long_for_the_context_is_refused_and_the_chat_goes_on():
    result = run(("word " * 9000 + "\nSay hi.\n").encode(), "--json", "--max-new-tokens", "4")
    assert result.returncode == 1  # a message was refused; the rest was answered
    lines = said(result.stderr)
    assert len(lines) == 1 and "not sent" in lines[0], lines
    assert [json.loads(line)["turn"] for line in result.stdout.decode().splitlines()] == [1]


def test_a_reader_that_leaves_ends_it_quietly_with_141():
    process = subprocess.Popen(
        chat("--max-new-tokens", "200"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    process.stdin.write(b"Write a long story about a dragon.\n")
    process.stdin.flush()
    assert process.stdout.read(10)
    process.stdout.close()
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 141 and said(stderr) == [], stderr


@pytest.mark.parametrize("redirect, message", [(">&-", "stdout is closed"), (">/dev/full", "No space left")])
def test_a_closed_or_full_stdout_is_one_line_and_status_1(redirect, message):
    command = " ".join(f"'{part}'" for part in chat("--max-new-tokens", "4"))
    result = subprocess.run(
        ["bash", "-c", f"printf 'Say hi.\\n' | exec {command} {redirect}"], capture_output=True, timeout=600, cwd=ROOT
    )
    lines = said(result.stderr)
    assert result.returncode == 1 and len(lines) == 1 and message in lines[0], result.stderr
    assert b"Traceback" not in result.stderr


def test_ctrl_c_during_a_reply_stops_that_reply_and_the_chat_goes_on():
    """As `ollama run` and `llama-cli`: the stopped reply keeps its words, on screen and in the history the next
    turn sends, and the chat reads the next message; Ctrl+D then ends it with 0."""
    story = [openai_chunk("Once", role="assistant"), openai_chunk(" upon"), openai_chunk(" a time")]
    with ScriptedServer(Script(chunks=story, stall_after=2)) as server:
        process = subprocess.Popen(
            chat("--model", server.url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        process.stdin.write(b"Tell a story.\n")
        process.stdin.flush()
        shown = read_until(process.stdout, b"upon")  # the reply's second chunk is on screen
        process.send_signal(signal.SIGINT)
        server.script = Script(
            chunks=[openai_chunk("The end", role="assistant"), openai_chunk(finish="stop"), "[DONE]"]
        )
        out, stderr = process.communicate(b"And then?\n", timeout=120)
    assert process.returncode == 0, stderr
    assert said(stderr) == ["latencylab: stopped (Ctrl+C); the chat goes on (Ctrl+D ends it)"], stderr
    assert (shown + out).decode() == "Once upon\nThe end\n" and b"Traceback" not in stderr
    sent = server.requests[-1]["body"]["messages"]
    assert [m["content"] for m in sent] == ["Tell a story.", "Once upon", "And then?"]
