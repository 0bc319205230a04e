"""How requests reach a server: through the proxy the environment names (NO_PROXY too), down connections kept alive
between replies, and ended at once by a stop, also before the server has answered."""

from __future__ import annotations

import pytest

from core.errors import ModelLoadError
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from tests.remote.recording_proxy import RecordingProxy
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

SETTINGS = GenerationSettings(max_new_tokens=8)
ANSWER = [openai_chunk("Hi"), openai_chunk(" there"), openai_chunk(finish="stop"), "[DONE]"]
# What connecting asks (the models, then llama.cpp's /props, which tells it apart), then the reply.
ASKED = [("GET", "/v1/models"), ("GET", "/props"), ("POST", "/v1/chat/completions")]


def test_with_http_proxy_set_requests_go_through_the_proxy(monkeypatch):
    with ScriptedServer(Script(chunks=ANSWER)) as server, RecordingProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with connect(server.url, timeout_s=10.0) as model:
            trace = RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
    assert trace.error is None and trace.text == "Hi there"
    assert proxy.requests == [(method, server.root + path) for method, path in ASKED]
    assert [request["path"] for request in server.requests] == [path for _, path in ASKED]


def test_no_proxy_names_a_host_reached_directly(monkeypatch):
    with ScriptedServer(Script(chunks=ANSWER)) as server, RecordingProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with connect(server.url, timeout_s=10.0) as model:
            trace = RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
    assert trace.error is None and trace.text == "Hi there"
    assert proxy.requests == []
    assert [request["path"] for request in server.requests] == [path for _, path in ASKED]


def test_an_https_server_is_reached_through_the_proxys_tunnel_and_its_refusal_is_said_in_one_line(monkeypatch):
    with RecordingProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with pytest.raises(ModelLoadError) as refused:
            connect("https://gpu.example.test/v1", timeout_s=10.0)
    assert proxy.requests == [("CONNECT", "gpu.example.test:443")]  # the host is the proxy's to look up
    message = str(refused.value)
    assert "the proxy 127.0.0.1:" in message and "would not open a connection to gpu.example.test:443" in message
    assert "403" in message and "NO_PROXY" in message and "\n" not in message


def test_a_proxy_that_is_not_an_http_proxy_is_refused_without_its_password(monkeypatch):
    monkeypatch.setenv("ALL_PROXY", "socks5://me:hunter2@socks.example.test:1080")
    with pytest.raises(ModelLoadError) as refused:
        connect("http://gpu.example.test:8000/v1", timeout_s=10.0)
    message = str(refused.value)
    assert "(socks5://socks.example.test) is not an HTTP proxy Latency Lab can use" in message
    assert "add gpu.example.test to NO_PROXY" in message and "hunter2" not in message


def test_replies_of_one_model_share_one_connection_kept_alive():
    with ScriptedServer(Script(chunks=ANSWER)) as server, connect(server.url, timeout_s=10.0) as model:
        traces = [RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end() for _ in range(3)]
        whole = RemoteReply(model, "", [("user", "Hi")], SETTINGS, streaming=False).run_to_end()
    assert [trace.error for trace in [*traces, whole]] == [None] * 4
    assert len(server.requests) == 6  # connecting's two, then the four replies
    assert len({request["client"] for request in server.requests}) == 1  # all down one connection


def test_a_stop_before_the_server_answers_ends_the_request_at_once_and_the_server_sees_the_client_go():
    # The server timeout far beyond the test's waits: only the stop can end the request.
    with ScriptedServer(Script(silent=True)) as server, connect(server.url, timeout_s=60.0) as model:
        reply = RemoteReply(model, "", [("user", "Hi")], SETTINGS, streaming=False).start()
        assert server.held.wait(10)
        reply.stop()
        assert reply.join(5)
        assert server.client_gone.wait(5)
    trace = reply.run_to_end()
    assert trace.stop_reason == "stopped" and trace.error is None
    # The request went down the connection kept alive from connecting, which the stop reached all the same.
    assert server.requests[0]["client"] == server.requests[-1]["client"]


def test_a_kept_alive_connection_the_server_closes_as_a_request_goes_down_it_is_left_for_a_new_one():
    """llama.cpp's server closes a connection after a streamed reply without saying so: a request sent in that moment
    (seen in benchmarks/remote_overhead.py) reached no one, so it goes once more on a new connection."""
    with ScriptedServer(Script(chunks=ANSWER, hang_up_at=(2,))) as server, connect(server.url, timeout_s=10.0) as model:
        trace = RemoteReply(model, "", [("user", "Hi")], SETTINGS).run_to_end()
    assert trace.error is None and trace.text == "Hi there"
    connecting, dropped, answered = server.requests[0], server.requests[2], server.requests[3]
    assert dropped["path"] == answered["path"] == "/v1/chat/completions" and len(server.requests) == 4
    assert dropped["client"] == connecting["client"] != answered["client"]


def test_a_new_connection_closed_without_an_answer_is_said_in_one_line_and_not_sent_again():
    with ScriptedServer(Script(hang_up_at=(0,))) as server, pytest.raises(ModelLoadError) as refused:
        connect(server.url, timeout_s=10.0)
    assert f"127.0.0.1:{server.port} closed the connection without answering." in str(refused.value)
    assert [request["path"] for request in server.requests] == ["/v1/models"]  # asked once
