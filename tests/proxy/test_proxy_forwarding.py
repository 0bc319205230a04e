"""What passes through the proxy: every method and path, bodies and headers untouched but for hop-by-hop ones."""

from __future__ import annotations

import base64
import json
import socket

import httpx
import pytest

from core.proxy.upstream import BadUpstream, Upstream
from tests.proxy.echo_server import EchoServer


def _echo(response: httpx.Response) -> dict:
    document = response.json()
    document["body"] = base64.b64decode(document["body"])
    document["header_names"] = [name.lower() for name, _ in document["headers"]]
    return document


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "PATCH"])
def test_every_method_and_path_passes_with_its_body_query_and_headers(proxy_to, method):
    body = b"\x00\x01 not json at all \xff" if method in ("POST", "PUT", "PATCH") else b""
    with EchoServer() as server:
        proxy, recorder = proxy_to(server.root)
        response = httpx.request(
            method,
            f"{proxy.url}/api/some/path%20odd?x=1&y=%2F",
            content=body or None,
            headers={"X-Custom": "kept", "Authorization": "Bearer sk-secret", "User-Agent": "agent/1.0"},
        )
        echoed = _echo(response)
        record = recorder.finished()[0]
    assert response.status_code == 200
    assert echoed["method"] == method and echoed["path"] == "/api/some/path%20odd?x=1&y=%2F"
    assert echoed["body"] == body
    headers = dict(echoed["headers"])
    assert headers["X-Custom"] == "kept" and headers["Authorization"] == "Bearer sk-secret"
    assert headers["User-Agent"] == "agent/1.0"
    assert headers["Host"] == server.root.removeprefix("http://")  # the server's own name, not the proxy's
    assert record.api is None and record.status == 200 and record.user_agent == "agent/1.0"
    assert "sk-secret" not in json.dumps(record.to_dict())


def test_a_generation_request_body_reaches_the_server_byte_for_byte(proxy_to):
    """The proxy reads it to learn the model, and never rewrites it (no stream_options added, key order kept)."""
    body = b'{"stream": true, "model": "m", "messages": [{"role": "user", "content": "hi \\u00e9"}]}'
    with EchoServer() as server:
        proxy, recorder = proxy_to(server.root)
        echoed = _echo(httpx.post(f"{proxy.url}/v1/chat/completions", content=body))
        record = recorder.finished()[0]
    assert echoed["body"] == body
    assert record.api == "openai-chat" and record.model == "m"


def test_hop_by_hop_headers_stay_on_their_own_connection(proxy_to):
    answer = [("X-Upstream", "yes"), ("Keep-Alive", "timeout=5"), ("X-Hop", "gone"), ("Connection", "X-Hop")]
    with EchoServer(answer_headers=answer) as server:
        proxy, _ = proxy_to(server.root)
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            sock.sendall(
                b"GET /v1/models HTTP/1.1\r\nHost: here\r\nTE: trailers\r\nConnection: close, X-Private\r\n"
                b"X-Private: hop\r\nProxy-Authorization: Basic c2VjcmV0\r\nX-End: end\r\n\r\n"
            )
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    echoed = json.loads(body)
    sent = [name.lower() for name, _ in echoed["headers"]]
    assert "x-end" in sent
    assert not {"te", "x-private", "proxy-authorization"} & set(sent)
    answered = head.decode().lower()
    assert "x-upstream: yes" in answered and "x-hop" not in answered and "keep-alive: timeout" not in answered


def test_a_server_down_gets_the_client_a_502_with_one_line_why(proxy_to):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]  # bound, never listening: connections are refused
        proxy, recorder = proxy_to(f"http://127.0.0.1:{closed_port}")
        response = httpx.post(f"{proxy.url}/v1/chat/completions", json={"model": "m", "stream": True})
    record = recorder.finished()[0]
    assert response.status_code == 502
    assert response.text.startswith("latencylab proxy: the server at http://127.0.0.1:")
    assert response.text.count("\n") == 1 and "could not be reached" in response.text
    assert record.status == 502 and "could not be reached" in record.error


def test_a_path_in_the_upstream_url_is_not_doubled():
    upstream = Upstream.parse("http://127.0.0.1:8080/v1/")
    assert upstream.target("/v1/chat/completions") == "http://127.0.0.1:8080/v1/chat/completions"
    assert upstream.target("/chat/completions?a=1") == "http://127.0.0.1:8080/v1/chat/completions?a=1"
    assert upstream.target("/v1") == "http://127.0.0.1:8080/v1"
    assert Upstream.parse("http://[::1]:11434").target("/api/tags") == "http://[::1]:11434/api/tags"


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "ftp://host", "http://", "http://h:99999", "http://h/?q=1"])
def test_an_upstream_that_is_no_server_url_is_refused_in_words(url):
    with pytest.raises(BadUpstream, match="server's address"):
        Upstream.parse(url)


def test_a_client_that_expects_100_continue_is_asked_for_its_body(proxy_to):
    body = json.dumps({"model": "m", "messages": []}).encode()
    with EchoServer() as server:
        proxy, recorder = proxy_to(server.root)
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            sock.settimeout(10)
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
                b"Expect: 100-continue\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
            assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            sock.sendall(body)
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
        record = recorder.finished()[0]
    head, _, answer = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and base64.b64decode(json.loads(answer)["body"]) == body
    assert "expect" not in [name.lower() for name, _ in json.loads(answer)["headers"]]
    assert record.model == "m"


def test_a_head_request_passes_with_its_headers_and_no_body(proxy_to):
    with EchoServer() as server:
        proxy, recorder = proxy_to(server.root)
        response = httpx.head(f"{proxy.url}/api/tags")
        record = recorder.finished()[0]
    assert response.status_code == 200 and response.content == b"" and int(response.headers["content-length"]) > 0
    assert record.method == "HEAD" and record.status == 200
