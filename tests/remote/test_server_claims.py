"""A server's token counts are claims: checked against the tokens asked for and the bytes that arrived, never made
into millions of events, and never an overflow in the metrics or the JSON."""

from __future__ import annotations

import json

import pytest

from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from core.timing.export import traces_to_json
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

SETTINGS = GenerationSettings(max_new_tokens=50)
# The counts (2x10^7 made as many events: 91 s and 2.1 GB; 10^12 a MemoryError; 400 digits an
# OverflowError), and their neighbours.
CLAIMS = [20_000_000, 10**12, 10**400, 2**53 + 1, 67, -5, 1e30, "many"]


def script(mode: str, claim) -> Script:
    usage = {"prompt_tokens": 3, "completion_tokens": claim}
    if mode == "usage at the end":
        return Script(
            chunks=[
                openai_chunk("Hello"),
                openai_chunk(" there"),
                openai_chunk(finish="stop"),
                {"choices": [], "usage": usage},
                "[DONE]",
            ]
        )
    if mode == "running usage (vLLM)":
        return Script(
            owned_by="vllm",
            chunks=[
                openai_chunk("Hello", usage={**usage, "completion_tokens": 1}),
                openai_chunk(" there", usage=usage),
                openai_chunk(finish="stop"),
                "[DONE]",
            ],
        )
    return Script(
        whole={
            "choices": [{"message": {"role": "assistant", "content": "Hello there"}, "finish_reason": "stop"}],
            "usage": usage,
        }
    )


MODES = ["usage at the end", "running usage (vLLM)", "whole reply (streaming off)"]


@pytest.mark.parametrize("claim", CLAIMS, ids=[str(claim)[:12] for claim in CLAIMS])
@pytest.mark.parametrize("mode", MODES)
def test_an_implausible_count_is_the_servers_claim_not_tokens(mode, claim):
    with ScriptedServer(script(mode, claim)) as server:
        model = connect(server.url, timeout_s=10.0)
        reply = RemoteReply(model, "", [("user", "Hi")], SETTINGS, streaming=not mode.startswith("whole"))
        trace = reply.run_to_end()
    assert trace.text == "Hello there" and trace.error is None
    assert len(trace.timestamps_ns) <= len("Hello there") + 8  # events only for what arrived
    assert trace.output_tokens <= SETTINGS.max_new_tokens + 16
    trace.metrics()  # no OverflowError, no MemoryError
    document = json.loads(traces_to_json([trace]))
    assert document["replies"][0]["output_tokens"] == trace.output_tokens
    if isinstance(claim, int) and 0 <= claim <= 2**53 and claim > 66:
        assert trace.server.output_tokens is None
        assert f"the server claimed {claim:,} tokens" in trace.server.tokens_counted_from


def test_a_believable_count_is_still_the_count():
    with ScriptedServer(script("usage at the end", 5)) as server:
        trace = RemoteReply(connect(server.url, timeout_s=10.0), "", [("user", "Hi")], SETTINGS).run_to_end()
    assert trace.output_tokens == 5 and trace.server.tokens_counted_from == "the server's usage"


@pytest.mark.parametrize("claim", [20_000_000, 10**400])
def test_ask_json_over_a_claiming_server_is_valid_json_at_once(claim, run_cli):
    with ScriptedServer(script("whole reply (streaming off)", claim)) as server:
        result = run_cli("ask", "Hi", "--model", server.url, "--json", "--no-stream", "--max-new-tokens", "50")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["text"] == "Hello there" and report["output_tokens"] <= 66 and len(report["token_times_s"]) <= 20
