"""Small weak spots: a deeply nested chunk in our words, stdin's warning naming stdin, a message bounded before it is
read whole or sent, an empty race value refused, and a race's warm-up showing its progress."""

from __future__ import annotations

import io
import sys

import pytest

import cli.chat
import core.chats.session
from core.chats.session import Message
from core.errors import MessageTooLongError
from core.generation.request import ReplyRequest
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

NESTED = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_chunk_is_said_in_our_words():
    """Was: "generation failed: RecursionError: maximum recursion depth exceeded…"."""
    with ScriptedServer(Script(chunks=[openai_chunk("Hi"), NESTED])) as server:
        trace = RemoteReply(
            connect(server.url, timeout_s=10.0), "", [("user", "Hi")], GenerationSettings()
        ).run_to_end()
    assert trace.error.startswith("the server sent a chunk nested too deeply to read: '[[[[")
    assert "RecursionError" not in trace.error and "\n" not in trace.error and len(trace.error) < 200


def test_a_deeply_nested_error_body_is_shown_as_it_came_shortened():
    from core.remote.errors import server_detail

    assert server_detail(NESTED.encode()) == "[" * 300 + "…"


def stdin_of(data: bytes):
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")


def test_chats_warning_for_stdin_that_is_not_utf8_names_the_line_of_stdin(capsys):
    """Was: "… byte(s) of the argument are not UTF-8"."""
    lines = list(cli.chat.input_lines(stdin_of(b"fine\nhello \xff\xfe\n")))
    assert lines == ["fine\n", "hello \ufffd\ufffd\n"]
    assert capsys.readouterr().err == (
        "latencylab: warning: 2 byte(s) of line 2 of stdin are not UTF-8; each is read as U+FFFD\n"
    )


@pytest.fixture
def small_message_limit(monkeypatch):
    """A 1,000-character limit, so an oversized line costs kilobytes here, not the megabytes it stands for."""
    monkeypatch.setattr(core.chats.session, "MAX_MESSAGE_CHARS", 1000)
    monkeypatch.setattr(cli.chat, "MAX_MESSAGE_CHARS", 1000)


def test_an_oversized_stdin_line_is_read_past_in_pieces_and_the_next_line_is_read(small_message_limit):
    lines = list(cli.chat.input_lines(stdin_of(b"x" * 5000 + b"\nnext\n" + b"y" * 1000 + b"\n")))
    assert isinstance(lines[0], MessageTooLongError) and lines[0].characters == 5000
    assert lines[1:] == ["next\n", "y" * 1000 + "\n"]


def test_chat_sends_no_oversized_message_to_a_server_says_so_in_one_line_and_goes_on(
    small_message_limit, monkeypatch, capsys
):
    """Was: a 200 MB stdin line sent to the server whole (660 MB RSS)."""
    from cli.main import main

    chunks = [openai_chunk("ok"), openai_chunk(finish="stop"), "[DONE]"]
    monkeypatch.setattr(sys, "stdin", stdin_of(b"z" * 5000 + b"\nhello\n"))
    with ScriptedServer(Script(chunks=chunks)) as server:
        assert main(["chat", "--model", server.url]) == 1
        sent = [request["body"]["messages"] for request in server.requests if request["body"]]
    assert sent == [[{"role": "user", "content": "hello"}]]
    err = capsys.readouterr().err
    assert (
        "latencylab: error: This message is 5,000 characters, more than the 1,000 a message may hold (no model's "
        "context window holds more); it was not sent. The chat goes on.\n"
    ) in err


def test_every_backend_refuses_an_oversized_message_before_tokenising_or_sending_it(small_message_limit):
    with ScriptedServer() as server:
        model = connect(server.url, timeout_s=10.0)
        request = ReplyRequest("", (Message("user", "w" * 1001),), GenerationSettings())
        with pytest.raises(MessageTooLongError, match="1,001 characters, more than the 1,000"):
            model.prepare(request)
        with pytest.raises(MessageTooLongError):
            model.prepare(ReplyRequest("s" * 1001, (Message("user", "hi"),), GenerationSettings()))
        assert [request for request in server.requests if request["body"]] == []


@pytest.mark.parametrize("side", ["--a", "--b"])
@pytest.mark.parametrize("pair", ["model=", "model= ", "dtype=", "max_new_tokens="])
def test_an_empty_race_value_is_refused_in_one_line(side, pair, capsys):
    """Was: `--a model=` silently meant the embedded model."""
    from cli.main import main

    other = "--b" if side == "--a" else "--a"
    assert main(["race", "Hi", side, pair, other, "streaming=off"]) == 2
    key = pair.split("=")[0]
    example = "model=embedded" if key == "model" else f"{key}=VALUE"
    assert capsys.readouterr().err == f"latencylab: race: {side} gives {key} no value; write {example}.\n"


def test_a_race_shows_its_prompt_cache_warm_up_as_it_prefills(tiny_model):
    """Was: an 8,000-token history warmed each side's cache for 214 s with nothing shown."""
    from core.race.config import RaceConfig
    from core.race.runner import RaceObserver, run_race
    from core.race.sides import parse_side

    history = (("user", "Tell me about the sea. " * 20), ("assistant", "It is wide and deep. " * 20))
    config = RaceConfig(
        "And the sky?",
        parse_side("A", ["max_new_tokens=2"]),
        parse_side("B", ["max_new_tokens=2", "streaming=off"]),
        history=history,
    )
    said: list[str] = []
    result = run_race(config, lambda side: tiny_model, observer=RaceObserver(progress=said.append))
    assert all(run.error is None for run in result.sides)
    for name in "AB":
        warming = [
            line for line in said if line.startswith(f"{name}: warming the prompt cache with the shared history:")
        ]
        assert warming and warming[-1].endswith("100% prefilled"), said
        assert len(warming) == len(set(warming)) <= 11  # each tenth once


@pytest.mark.parametrize("context_window", [0, 1])
def test_a_context_window_too_small_for_any_reply_blames_the_file_not_the_setting(context_window):
    """Was, for a crafted GGUF's context_length of 1: "… holds only 1 tokens … Choose fewer than 1."."""
    from core.chats.context_fit import check_reply_budget
    from core.errors import InvalidSettingsError

    with pytest.raises(InvalidSettingsError) as refused:
        check_reply_budget(1, context_window)
    assert str(refused.value) == (
        f"the model's context window holds only {context_window} token(s), too few for a prompt and a reply: the "
        "model file's context length is wrong."
    )
