"""Streams through the proxy to a scripted server: passed on chunk by chunk, timed, counted beside each other."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import httpx

from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

USAGE = {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}


def test_each_chunk_reaches_the_client_while_the_server_still_holds_the_next(proxy_to):
    """The server sends one small chunk and then nothing: the client must have it all the same (nothing buffered)."""
    with ScriptedServer(Script(chunks=[openai_chunk("first"), openai_chunk("never")], stall_after=1)) as server:
        proxy, recorder = proxy_to(server.url)
        body = {"model": "m", "stream": True}
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body, timeout=10) as response:
            first = next(response.iter_raw())
            assert b"first" in first and not server.release.is_set()
        record = recorder.finished()[0]
    assert record.chunks == 1 and record.error == "the client went away before the reply ended"


def test_a_stream_is_passed_on_as_it_comes_and_timed_against_the_clients_own_stamps(proxy_to):
    """The client stamps each chunk as it reads it: the proxy's figures sit inside the client's, on the same clock."""
    chunks = [openai_chunk(role="assistant")] + [openai_chunk(word) for word in ("a", "b", "c", "d", "e")]
    script = Script(chunks=[*chunks, openai_chunk(finish="stop"), USAGE, "[DONE]"])
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        sent_ns = time.perf_counter_ns()
        stamps = []
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True}) as response:
            for line in response.iter_lines():
                if '"content":' in line:
                    stamps.append(time.perf_counter_ns())
        record = recorder.finished()[0]
    assert record.status == 200 and record.streamed and record.error is None
    assert record.output_tokens == 5 and record.prompt_tokens == 12 and not record.tokens_are_chunks
    assert record.start_ns >= sent_ns and record.first_token_ns <= stamps[0]
    assert record.ttft_s <= (stamps[0] - sent_ns) / 1e9
    assert record.e2e_s <= (stamps[-1] - sent_ns) / 1e9
    assert 1 <= record.chunks <= 5 and record.itl_count == record.chunks - 1


def test_in_flight_counts_who_ran_beside_whom(proxy_to):
    """Three streams started one after another, each held open by the server until released: 0, 1 and 2 others at
    their start, and each ran beside the other two."""
    script = Script(chunks=[openai_chunk("first")], repeat=b": still here\n\n", pace_s=0.02)
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        first_chunk = [threading.Event() for _ in range(3)]
        errors: list[BaseException] = []

        def stream(index: int) -> None:
            try:
                body = {"model": f"m{index}", "stream": True}
                with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body, timeout=30) as response:
                    for line in response.iter_lines():
                        if "first" in line:
                            first_chunk[index].set()
            except BaseException as error:  # noqa: BLE001 - handed to the test's thread
                errors.append(error)
                first_chunk[index].set()

        threads = [threading.Thread(target=stream, args=(index,)) for index in range(3)]
        for index, thread in enumerate(threads):
            thread.start()
            assert first_chunk[index].wait(10)
        server.release.set()
        for thread in threads:
            thread.join(10)
        records = recorder.finished(3)
    assert not errors
    assert [record.model for record in records] == ["m0", "m1", "m2"]
    assert [record.in_flight_at_start for record in records] == [0, 1, 2]
    assert [record.max_in_flight for record in records] == [2, 2, 2]


def test_prompts_and_replies_are_kept_only_when_asked(proxy_to):
    script = Script(chunks=[openai_chunk("the reply"), USAGE, "[DONE]"])
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "the prompt"}]}
    with ScriptedServer(script) as server:
        plain, plain_records = proxy_to(server.url)
        keeping, kept_records = proxy_to(server.url, keep_bodies=True)
        for proxy in (plain, keeping):
            httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers={"Authorization": "Bearer sk-top"})
        (plain_record,) = plain_records.finished()
        (kept_record,) = kept_records.finished()
    assert "the prompt" not in json.dumps(plain_record.to_dict()) and "the reply" not in json.dumps(
        plain_record.to_dict()
    )
    assert plain_record.request_body is None and plain_record.reply_text is None
    assert json.loads(kept_record.request_body) == body and kept_record.reply_text == "the reply"
    assert "sk-top" not in json.dumps(kept_record.to_dict())


def test_live_progress_is_sent_while_a_request_runs(proxy_to):
    from core.proxy.record import RequestProgress, RequestStarted

    script = Script(chunks=[openai_chunk("x"), openai_chunk("y"), USAGE, "[DONE]"])
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True})
        record = recorder.finished()[0]
    kinds = [type(event) for event in recorder.events]
    assert kinds[0] is RequestStarted and RequestProgress in kinds
    progress = next(event for event in recorder.events if isinstance(event, RequestProgress))
    assert progress.id == record.id and progress.ttft_s == record.ttft_s


def test_the_clients_process_is_found_once_per_connection(proxy_to):
    """This test is the client: its connection, kept alive for three requests, leads to this process."""
    with ScriptedServer(Script(chunks=[openai_chunk("x"), USAGE, "[DONE]"])) as server:
        proxy, recorder = proxy_to(server.url)
        with httpx.Client() as client:
            for _ in range(3):
                client.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True})
            records = recorder.finished(3)  # while the connection is still open
    assert len({record.client_address for record in records}) == 1
    this_process = (os.getpid(), Path("/proc/self/comm").read_text().strip())
    assert [(record.client_pid, record.client_process) for record in records] == [this_process] * 3


def test_a_client_that_closes_right_after_the_streams_end_got_a_whole_reply(proxy_to):
    """OpenAI's SDK closes its connection at [DONE], which can beat the server's last bytes (the chunked
    terminator): the reply was whole, so the record has its count and no error. Here the server holds those bytes."""
    chunks = [openai_chunk("a"), openai_chunk("b"), openai_chunk(finish="stop"), USAGE, "[DONE]", "never"]
    with ScriptedServer(Script(chunks=chunks, stall_after=5)) as server:
        proxy, recorder = proxy_to(server.url)
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True}) as response:
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    break
        record = recorder.finished()[0]
    assert record.error is None and record.output_tokens == 5 and record.chunks == 2
    assert record.ttft_s <= record.e2e_s <= record.total_s


def test_an_ollama_client_that_closes_right_after_done_got_a_whole_reply(proxy_to):
    done = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "eval_count": 3}
    chunks = [{"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": False}, done, "never"]
    with ScriptedServer(Script(chunks=chunks, stall_after=2, ollama=True)) as server:
        proxy, recorder = proxy_to(server.root)
        with httpx.stream("POST", f"{proxy.url}/api/chat", json={"model": "m", "stream": True}) as response:
            for line in response.iter_lines():
                if '"done": true' in line:
                    break
        record = recorder.finished()[0]
    assert record.error is None and record.output_tokens == 3 and record.finish_reason == "stop"
