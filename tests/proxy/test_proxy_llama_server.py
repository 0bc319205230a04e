"""OpenAI's SDK through the proxy to a real llama-server on the embedded model: streamed and not, several at once;
the proxy's figures agree with the client's own stamps and the server's own counts."""

from __future__ import annotations

import os
import re
import threading
import time

import openai
import pytest

from core.diagnosis.diagnose import diagnose
from core.diagnosis.sharing import SLOWER
from core.model.source import embedded_gguf_path
from core.proxy.trace import reply_trace
from tools.llama_cpp_server import LLAMA_SERVER, LlamaCppServer

pytestmark = [pytest.mark.model, pytest.mark.llama_cpp, pytest.mark.subprocess]
MESSAGES = [{"role": "user", "content": "Write two sentences about the sea."}]
KEY = "sk-latencylab-test-key-never-stored"


@pytest.fixture(scope="module")
def llama_server():
    with LlamaCppServer(embedded_gguf_path(), threads=2, kind=LLAMA_SERVER) as server:
        yield server


@pytest.fixture
def through(proxy_to, llama_server):
    """(an OpenAI client pointed at a proxy in front of the server, the proxy's recorder)."""
    proxy, recorder = proxy_to(llama_server.url)
    return openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=KEY, max_retries=0, timeout=120), recorder


def _stream(client: openai.OpenAI, max_tokens: int, **options) -> dict:
    """A streamed chat with the client's own stamps: sent, each chunk with content, and the usage it reported."""
    sent_ns = time.perf_counter_ns()
    stream = client.chat.completions.create(
        model="embedded",
        messages=MESSAGES,
        max_tokens=max_tokens,
        stream=True,
        extra_body={"ignore_eos": True},
        **options,
    )
    stamps, usage = [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            stamps.append(time.perf_counter_ns())
        usage = chunk.usage or usage
    return {"sent_ns": sent_ns, "stamps": stamps, "usage": usage}


def test_a_streamed_chat_agrees_with_the_clients_stamps_and_the_servers_usage(through):
    client, recorder = through
    seen = _stream(client, 12, stream_options={"include_usage": True})
    record = recorder.finished()[0]
    sent_ns, stamps, usage = seen["sent_ns"], seen["stamps"], seen["usage"]
    assert record.status == 200 and record.error is None and record.meter_note is None
    assert record.api == "openai-chat" and record.model == "embedded" and record.streamed
    assert record.output_tokens == usage.completion_tokens == 12 and not record.tokens_are_chunks
    assert record.prompt_tokens == usage.prompt_tokens
    assert record.server_timings["generated_n"] == 12 and record.server_timings["source"] == "llama.cpp timings"
    # One clock (perf_counter_ns, this process): the proxy saw the request after it was sent, each chunk before
    # the client did.
    assert sent_ns <= record.start_ns <= record.first_token_ns <= stamps[0]
    assert 0 < record.ttft_s <= (stamps[0] - sent_ns) / 1e9
    assert record.ttft_s <= record.e2e_s <= (stamps[-1] - sent_ns) / 1e9
    assert record.tpot_s == pytest.approx((record.e2e_s - record.ttft_s) / 11)
    assert record.chunks == len(stamps) and record.itl_count == len(stamps) - 1
    assert record.user_agent.startswith("OpenAI/Python") and record.client_pid == os.getpid()


def test_without_usage_the_servers_own_timings_count_the_tokens(through):
    client, recorder = through
    seen = _stream(client, 8)
    record = recorder.finished()[0]
    assert seen["usage"] is None  # the client did not ask for usage, and the proxy did not add it
    assert record.output_tokens == 8 == record.server_timings["generated_n"] and not record.tokens_are_chunks
    # The prompt too, though no usage came: the tokens the server computed and those its cache gave
    assert record.prompt_tokens == record.server_timings["prompt_n"] + record.cached_tokens > 0


def test_a_whole_reply_and_a_completion_are_counted(through):
    client, recorder = through
    whole = client.chat.completions.create(model="embedded", messages=MESSAGES, max_tokens=8)
    completion_chunks = list(
        client.completions.create(model="embedded", prompt="The sea is", max_tokens=6, stream=True)
    )
    chat_record, completion_record = recorder.finished(2)
    assert not chat_record.streamed and chat_record.tpot_s is None
    assert chat_record.output_tokens == whole.usage.completion_tokens and chat_record.ttft_s == chat_record.e2e_s
    assert completion_record.api == "openai-completions" and completion_record.streamed
    assert completion_record.chunks == sum(1 for chunk in completion_chunks if chunk.choices and chunk.choices[0].text)
    assert completion_record.output_tokens == completion_record.server_timings["generated_n"]


def test_concurrent_streams_are_each_counted_and_seen_beside_each_other(through):
    client, recorder = through
    start_together = threading.Barrier(4)
    results: list[dict] = []

    def one() -> None:
        start_together.wait(30)
        results.append(_stream(client, 10, stream_options={"include_usage": True}))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    records = recorder.finished(4)
    assert len(results) == 4 and all(seen["usage"].completion_tokens == 10 for seen in results)
    assert all(record.output_tokens == 10 and record.error is None for record in records)
    assert max(record.max_in_flight for record in records) >= 1
    assert all(record.max_in_flight >= record.in_flight_at_start for record in records)
    # Each diagnosed as the Traffic tab does, beside the others: one that shared the server is never "nothing slowed"
    # unless it decoded as fast as those alone.
    for record in records:
        trace = reply_trace(record, records)
        sharing, kinds = trace.sharing, [finding.kind for finding in diagnose(trace)]
        assert (sharing.others_at_start, sharing.others_most) == (record.in_flight_at_start, record.max_in_flight)
        if record.max_in_flight == 0:
            assert "shared_server" not in kinds
        elif sharing.alone_tpot_s is None:
            assert "shared_server" in kinds and "healthy" not in kinds
        else:
            assert ("shared_server" in kinds) == (record.tpot_s > sharing.alone_tpot_s * SLOWER)


def test_a_client_that_stops_reading_stops_the_servers_generation(through, llama_server):
    client, recorder = through
    mark = len(llama_server.lines)
    stream = client.chat.completions.create(
        model="embedded", messages=MESSAGES, max_tokens=400, stream=True, extra_body={"ignore_eos": True}
    )
    for count, _ in enumerate(stream):
        if count == 3:
            break
    stream.close()
    record = recorder.finished()[0]
    assert "went away" in record.error and record.chunks < 400
    _stream(client, 2)  # a next request: the server has logged the one before by then
    assert any("cancel task" in line for line in llama_server.log_since(mark))
    released = [
        int(match.group(1))
        for match in (re.search(r"stop processing: n_tokens = (\d+)", line) for line in llama_server.log_since(mark))
        if match
    ]
    assert released and released[0] < 100  # the prompt and a few tokens, far short of 400
