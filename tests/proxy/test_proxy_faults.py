"""The proxy under faults: clients that leave, servers that cut, stall or send garbage; it keeps serving."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from core.proxy.record import RequestFinished
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

CHAT = {"model": "m", "stream": True}


def _raw_post(port: int, path: str, body: dict) -> socket.socket:
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    return sock


def test_a_client_that_leaves_during_the_prompt_closes_the_servers_request(proxy_to):
    with ScriptedServer(Script(silent=True)) as server:
        proxy, recorder = proxy_to(server.url)
        sock = _raw_post(proxy.port, "/v1/chat/completions", CHAT)
        assert server.held.wait(10)  # the server has the request and says nothing yet (a long prompt's pass)
        sock.close()
        assert server.client_gone.wait(10)
        record = recorder.finished()[0]
    assert record.status is None and record.error == "the client went away before the reply ended"


def test_a_client_that_leaves_mid_stream_closes_the_servers_request(proxy_to):
    script = Script(chunks=[openai_chunk(role="assistant")], repeat=openai_chunk("more"), pace_s=0.005)
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=CHAT) as response:
            for count, _ in enumerate(response.iter_raw()):
                if count == 10:
                    break
        assert server.client_gone.wait(10)  # the server's write failed: the proxy closed its side
        record = recorder.finished()[0]
    assert record.status == 200 and record.chunks >= 1 and "went away" in record.error


def test_a_server_that_cuts_its_stream_short_cuts_the_client_too(proxy_to):
    script = Script(chunks=[openai_chunk("a"), openai_chunk("b"), openai_chunk("c")], cut_after=2)
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        with pytest.raises(httpx.RemoteProtocolError):  # not a reply that ended well
            httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        record = recorder.finished()[0]
        assert httpx.get(f"{proxy.url}/v1/models").status_code == 200  # and the proxy serves on
    assert record.error.startswith("the server cut the reply short")


@pytest.mark.parametrize(
    "script",
    [
        Script(raw_prefix=b"garbage that is no event\n\n", chunks=[openai_chunk("a")]),
        Script(chunks=["{not json", openai_chunk("a")]),
        Script(chunks=['{"choices": "not a list", "usage": {"completion_tokens": -3}}', openai_chunk("a")]),
        Script(raw_prefix=b"data: " + b"[" * 50_000 + b"\n\n", chunks=[openai_chunk("a")]),
        Script(raw_prefix=b"\xff\xfe\xfd\n\n", chunks=[openai_chunk("a")]),
    ],
    ids=["not-sse", "not-json", "wrong-types", "deep-nesting", "not-utf8"],
)
def test_malformed_output_passes_through_untouched_and_is_named(proxy_to, script):
    with ScriptedServer(script) as server:
        direct = httpx.post(f"{server.url}/chat/completions", json=CHAT).content
        proxy, recorder = proxy_to(server.url)
        through = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        record = recorder.finished()[0]
    assert through.status_code == 200 and through.content == direct
    assert record.error is None
    assert record.meter_note or record.output_tokens in (1, None)  # named, or read past (wrong types read as none)


def test_the_servers_error_status_and_message_reach_the_client_and_the_record(proxy_to):
    script = Script(status=429, error_body={"error": {"message": "Too many requests, slow down"}})
    with ScriptedServer(script) as server:
        proxy, recorder = proxy_to(server.url)
        response = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        record = recorder.finished()[0]
    assert response.status_code == 429 and response.json()["error"]["message"] == "Too many requests, slow down"
    assert record.status == 429 and record.error == "Too many requests, slow down"


def test_a_listener_that_fails_does_not_fail_the_request(proxy_to, capsys):
    with ScriptedServer(Script(chunks=[openai_chunk("a")])) as server:
        proxy, recorder = proxy_to(server.url)

        def broken(_event):
            raise ValueError("a bug in a listener")

        proxy.subscribe(broken)
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200
        recorder.finished(2)
    assert capsys.readouterr().err.count("a listener failed (ValueError: a bug in a listener)") == 1


def test_a_port_already_taken_is_said_in_words():
    from core.proxy.proxy_thread import ProxyStartError, ProxyThread

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ProxyStartError, match="could not listen on 127.0.0.1"):
            ProxyThread("http://127.0.0.1:9", port=taken.getsockname()[1]).start()


def test_stopping_the_proxy_cuts_a_running_stream_and_closes_its_server_request():
    import threading

    from core.proxy.proxy_thread import ProxyThread
    from tests.proxy.conftest import Recorder

    script = Script(chunks=[openai_chunk("first")], repeat=b": still here\n\n", pace_s=0.01)
    with ScriptedServer(script) as server:
        proxy = ProxyThread(server.url)
        recorder = Recorder()
        proxy.subscribe(recorder)
        proxy.start()
        streaming = threading.Event()
        outcome: list[BaseException | None] = []

        def read() -> None:
            try:
                with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=CHAT, timeout=30) as response:
                    for _ in response.iter_raw():
                        streaming.set()
                outcome.append(None)
            except httpx.HTTPError as error:
                outcome.append(error)

        reader = threading.Thread(target=read)
        reader.start()
        assert streaming.wait(10)
        proxy.stop()
        reader.join(10)
        assert server.client_gone.wait(10)
        record = recorder.finished()[0]
    assert not proxy.running and isinstance(outcome[0], httpx.RemoteProtocolError)
    assert record.error == "the proxy stopped before the reply ended" and record.chunks == 1


def test_a_kept_alive_connection_the_server_dropped_is_not_a_502(proxy_to):
    """The server closes the proxy's kept-alive connection without answering the next request on it (as llama.cpp's
    does after 5 requests): the request is sent again on a fresh one and the client never sees the stale one."""
    chunks = [openai_chunk("a"), "[DONE]"]
    with ScriptedServer(Script(chunks=chunks, hang_up_at=(1,))) as server:
        proxy, recorder = proxy_to(server.url)
        with httpx.Client(timeout=10) as client:
            replies = [client.post(f"{proxy.url}/v1/chat/completions", json=CHAT) for _ in range(2)]
        records = recorder.finished(2)
        assert len(server.requests) == 3  # the second was asked twice
    assert [reply.status_code for reply in replies] == [200, 200]
    assert all(record.error is None and record.chunks == 1 for record in records)


def test_a_server_that_hangs_up_twice_gets_the_client_a_502(proxy_to):
    with ScriptedServer(Script(chunks=[openai_chunk("a")], hang_up_at=(0, 1, 2))) as server:
        proxy, recorder = proxy_to(server.url)
        reply = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT, timeout=10)
        record = recorder.finished()[0]
        assert len(server.requests) == 2  # once more, not for ever
    assert reply.status_code == 502 and "closed the connection without answering" in reply.text
    assert record.status == 502


def test_an_upstream_that_leads_back_to_the_proxy_is_a_loop_said_once_not_forwarded_for_ever(proxy_to):
    """Seen in the Traffic tab: upstream http://127.0.0.1:8788 on port 8788 sent one request round thousands of times
    a second. The proxy's own Via header shows a request that came back; it ends there, with 508 Loop Detected."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy, recorder = proxy_to(f"http://127.0.0.1:{port}", port=port)
    response = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT, timeout=30)
    assert response.status_code == 508 and "came back to this proxy" in response.text
    inner, outer = recorder.finished(2)
    assert inner.status == outer.status == 508 and "leads to itself" in inner.error
    assert len(recorder.finished(2)) == 2 == sum(isinstance(event, RequestFinished) for event in recorder.events)


@pytest.mark.parametrize(
    ("length", "said"), [("99999999999999999999999", "Content-Length overflow"), ("-5", "Invalid character")]
)
def test_a_malformed_request_is_refused_in_one_line_and_the_proxy_goes_on(proxy_to, capfd, length, said):
    with ScriptedServer(Script(chunks=[openai_chunk("a")])) as server:
        proxy, recorder = proxy_to(server.url)
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            sock.sendall(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: p\r\nContent-Length: {length}\r\n\r\n{{}}".encode()
            )
            answer = sock.makefile("rb").read()
        assert answer.startswith((b"HTTP/1.0 400", b"HTTP/1.1 400"))
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200  # it still serves
        recorder.finished(1)
    err = capfd.readouterr().err
    assert f"latencylab proxy: a malformed request from 127.0.0.1 was refused (400: {said}" in err
    assert "Traceback" not in err and len(server.requests) == 1
