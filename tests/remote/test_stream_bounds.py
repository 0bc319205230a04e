"""Every reply over the wire ends: at max new tokens when a server ignores max_tokens, and at an overall deadline when
it sends nothing that counts, each said in one line."""

from __future__ import annotations

import pytest

import core.remote.reply
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

MAX_NEW_TOKENS = 10


def endless(mode: str) -> Script:
    """A server that ignores max_tokens and never ends its stream."""
    if mode == "a token a chunk":
        return Script(chunks=[openai_chunk(role="assistant")], repeat=openai_chunk("tok "))
    if mode == "running usage (vLLM), three tokens a chunk":
        running = iter(range(3, 10**9, 3))
        return Script(
            owned_by="vllm",
            chunks=[openai_chunk(role="assistant")],
            repeat=lambda: openai_chunk("tok tok tok ", usage={"prompt_tokens": 3, "completion_tokens": next(running)}),
        )
    if mode == "logprobs, two tokens a chunk":
        return Script(chunks=[openai_chunk(role="assistant")], repeat=openai_chunk("tok tok ", tokens=2))
    return Script(ollama=True, repeat={"message": {"role": "assistant", "content": "tok "}, "done": False})


MODES = ["a token a chunk", "running usage (vLLM), three tokens a chunk", "logprobs, two tokens a chunk", "Ollama"]


# Tokens a chunk brings: the chunk that reaches max new tokens is kept whole, since its text cannot be split.
TOKENS_PER_CHUNK = {"running usage (vLLM), three tokens a chunk": 3, "logprobs, two tokens a chunk": 2}


@pytest.mark.parametrize("mode", MODES)
def test_a_server_that_ignores_max_tokens_is_cut_at_max_new_tokens(mode):
    with ScriptedServer(endless(mode)) as server:
        model = connect(server.root if mode == "Ollama" else server.url, timeout_s=10.0)
        trace = RemoteReply(model, "", [("user", "Hi")], GenerationSettings(max_new_tokens=MAX_NEW_TOKENS)).run_to_end()
        assert server.client_gone.wait(10)  # the connection was closed, so the server can stop generating
    assert MAX_NEW_TOKENS <= len(trace.timestamps_ns) < MAX_NEW_TOKENS + TOKENS_PER_CHUNK.get(mode, 1)
    assert trace.text.startswith("tok ") and trace.text.count("tok") == len(trace.timestamps_ns)
    assert trace.output_tokens == len(trace.timestamps_ns)
    assert trace.error == (
        f"interrupted: the server sent more than the {MAX_NEW_TOKENS} new tokens asked for (it ignores max_tokens); "
        "the reply was cut there, and what came is kept."
    )


def test_an_honest_server_that_stops_at_max_tokens_is_not_cut():
    chunks = [openai_chunk(role="assistant"), *(openai_chunk("tok ") for _ in range(MAX_NEW_TOKENS))]
    chunks += [openai_chunk(finish="length"), {"choices": [], "usage": {"completion_tokens": MAX_NEW_TOKENS}}, "[DONE]"]
    with ScriptedServer(Script(chunks=chunks)) as server:
        model = connect(server.url, timeout_s=10.0)
        trace = RemoteReply(model, "", [("user", "Hi")], GenerationSettings(max_new_tokens=MAX_NEW_TOKENS)).run_to_end()
    assert trace.error is None and trace.stop_reason == "max_tokens"
    assert trace.output_tokens == MAX_NEW_TOKENS and trace.text == "tok " * MAX_NEW_TOKENS


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "whole reply"])
def test_a_server_that_sends_only_keep_alives_ends_at_the_overall_deadline(streaming):
    # Every 50 ms a keep-alive comment (streaming) or a space before the JSON (whole): never silent for the server
    # timeout, never a token.
    script = Script(
        chunks=[openai_chunk(role="assistant"), openai_chunk("so far")] if streaming else [],
        repeat=b": ping\n\n" if streaming else b" ",
        pace_s=0.05,
    )
    with ScriptedServer(script) as server:
        # The server timeout far beyond the deadline: a busy machine's late keep-alive must not end it first.
        model = connect(server.url, timeout_s=60.0)
        settings = GenerationSettings(max_new_tokens=MAX_NEW_TOKENS)
        reply = RemoteReply(model, "", [("user", "Hi")], settings, streaming=streaming)
        assert reply.deadline_s == 60.0 + core.remote.reply.DEADLINE_PER_TOKEN_S * MAX_NEW_TOKENS
        reply.deadline_s = 1.0
        trace = reply.run_to_end()
    assert trace.error == (
        "interrupted: the reply ran past its overall deadline of 1 s (the server timeout plus 2 s for each new "
        "token asked for) and was cut there; what came is kept."
    )
    assert "\n" not in trace.error
    if streaming:
        assert trace.text == "so far"


def test_ask_over_a_server_that_ignores_max_tokens_ends_and_says_so_in_one_line(capsys):
    from cli.main import main

    with ScriptedServer(endless("a token a chunk")) as server:
        status = main(["ask", "Hi", "--model", server.url, "--max-new-tokens", "5"])
    out, err = capsys.readouterr()
    assert status == 1
    assert out == "tok " * 5 + "\n"
    assert err.strip().splitlines()[-1] == (
        "latencylab: generation failed: interrupted: the server sent more than the 5 new tokens asked for (it ignores "
        "max_tokens); the reply was cut there, and what came is kept."
    )
