"""The `ollama` Python client through the proxy to a scripted Ollama-shaped server: /api/chat and /api/generate,
streamed and not, and several at once."""

from __future__ import annotations

import threading
import time

import ollama
import pytest

from tests.remote.scripted_server import Script, ScriptedServer

DONE = {
    "model": "scripted-model",
    "done": True,
    "done_reason": "stop",
    "prompt_eval_count": 14,
    "prompt_eval_duration": 7_000_000,
    "eval_count": 3,
    "eval_duration": 24_000_000,
    "total_duration": 40_000_000,
    "load_duration": 1_000_000,
}
WORDS = ("The", " sea", " sings")


def _chat_lines() -> list[dict]:
    lines = [
        {"model": "scripted-model", "message": {"role": "assistant", "content": word}, "done": False} for word in WORDS
    ]
    return [*lines, {**DONE, "message": {"role": "assistant", "content": ""}}]


def _generate_lines() -> list[dict]:
    return [*({"model": "scripted-model", "response": word, "done": False} for word in WORDS), {**DONE, "response": ""}]


@pytest.fixture
def ollama_server():
    with ScriptedServer(
        Script(ollama=True, chunks=_chat_lines(), whole={**DONE, "message": {"role": "assistant", "content": "Whole."}})
    ) as server:
        yield server


def test_a_streamed_chat_is_counted_with_ollamas_own_figures(proxy_to, ollama_server):
    proxy, recorder = proxy_to(ollama_server.root)
    client = ollama.Client(host=proxy.url)
    sent_ns = time.perf_counter_ns()
    stamps, text = [], ""
    for part in client.chat(model="scripted-model", messages=[{"role": "user", "content": "Hi"}], stream=True):
        if part.message.content:
            stamps.append(time.perf_counter_ns())
            text += part.message.content
        last = part
    record = recorder.finished()[0]
    assert text == "The sea sings" and last.eval_count == 3
    assert record.api == "ollama-chat" and record.model == "scripted-model" and record.streamed
    assert record.output_tokens == last.eval_count and record.prompt_tokens == last.prompt_eval_count
    assert not record.tokens_are_chunks and record.finish_reason == "stop"
    assert record.server_timings["per_token_ms"] == 8.0 and record.server_timings["prompt_ms"] == 7.0
    assert record.ttft_s <= (stamps[0] - sent_ns) / 1e9 and record.e2e_s <= (stamps[-1] - sent_ns) / 1e9
    assert record.user_agent.startswith("ollama-python")


def test_a_chat_not_streamed_is_one_chunk_at_its_end(proxy_to, ollama_server):
    proxy, recorder = proxy_to(ollama_server.root)
    reply = ollama.Client(host=proxy.url).chat(model="scripted-model", messages=[{"role": "user", "content": "Hi"}])
    record = recorder.finished()[0]
    assert reply.message.content == "Whole."
    assert not record.streamed and record.chunks == 1 and record.output_tokens == 3 and record.tpot_s is None
    assert record.ttft_s == record.e2e_s


def test_generate_and_the_model_list_pass_through(proxy_to):
    with ScriptedServer(Script(ollama=True, chunks=_generate_lines())) as server:
        proxy, recorder = proxy_to(server.root)
        client = ollama.Client(host=proxy.url)
        text = "".join(part.response for part in client.generate(model="scripted-model", prompt="Hi", stream=True))
        names = [model.model for model in client.list().models]
        generate, listing = recorder.finished(2)
    assert text == "The sea sings" and names == ["scripted-model"]
    assert generate.api == "ollama-generate" and generate.output_tokens == 3 and generate.chunks == 3
    assert listing.api is None and listing.path == "/api/tags" and listing.status == 200


def test_concurrent_chats_are_each_counted(proxy_to, ollama_server):
    proxy, recorder = proxy_to(ollama_server.root)
    client = ollama.Client(host=proxy.url)
    texts: list[str] = []

    def chat() -> None:
        parts = client.chat(model="scripted-model", messages=[{"role": "user", "content": "Hi"}], stream=True)
        texts.append("".join(part.message.content for part in parts))

    threads = [threading.Thread(target=chat) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    records = recorder.finished(4)
    assert texts == ["The sea sings"] * 4
    assert all(record.output_tokens == 3 and record.error is None for record in records)
