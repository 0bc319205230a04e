"""A scripted HTTP server on 127.0.0.1 for behaviour a real local server cannot show on demand.

Several tokens per chunk, 429s, malformed SSE, a stalled stream and Ollama's NDJSON are played from a
script. It is named as such and never stands in for the real llama.cpp server (tools/llama_cpp_server.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Script:
    """What the next chat request gets. chunks are SSE data payloads (dicts or raw strings), or NDJSON lines."""

    status: int = 200
    error_body: dict | None = None
    chunks: list = field(default_factory=list)
    whole: dict | None = None  # the body for stream: false
    cut_after: int | None = None  # close the connection mid-body after this many chunks
    stall_after: int | None = None  # send this many chunks, then nothing until released
    pause_after: int | None = None  # send this many chunks, then wait until released, then the rest
    gap_s: float = 0.0  # between one chunk and the next, as a model's steps space them
    raw_prefix: bytes = b""  # bytes sent before the chunks (malformed streams)
    models: tuple[str, ...] = ("scripted-model",)
    owned_by: str = "scripted"
    ollama: bool = False  # serve Ollama's native API instead of OpenAI's
    redirect_to: str | None = None  # answer every request with a 302 to this URL
    # After the chunks, this payload again and again until the client goes (a server that ignores max_tokens),
    # pace_s apart; a raw bytes payload is sent as it is (an SSE comment: a keep-alive that carries nothing), and a
    # callable's value is the next payload.
    repeat: object = None
    pace_s: float = 0.0
    honour_max_tokens: bool = False  # leave out the chunks with text past the request's max_tokens, as servers do
    silent: bool = False  # read a chat request, then answer nothing until the client goes (a long prompt's prefill)
    hang_up_at: tuple[int, ...] = ()  # requests (0: the first) whose connection is closed instead of answered


class ScriptedServer:
    def __init__(self, script: Script | None = None):
        self.script = script or Script()
        self.requests: list[dict] = []  # {"path", "headers", "body", "client"} per request received
        self.release = threading.Event()  # lets a stalled stream end
        self.held = threading.Event()  # a silent script holds a request
        self.client_gone = threading.Event()  # the client closed the connection mid-stream
        self.stalled = threading.Event()  # a stall_after script has sent its chunks and holds the stream
        server = self
        handler = type("Handler", (_Handler,), {"scripted": server})
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="scripted-server", daemon=True)

    @property
    def port(self) -> int:
        return self._http.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.release.set()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedServer

    def log_message(self, *_):  # quiet: the test output is the place for assertions, not access logs
        pass

    def do_GET(self):
        script = self.scripted.script
        self._note(None)
        if self._hang_up():
            return
        if script.redirect_to:
            self._redirect(script.redirect_to)
            return
        if self.path == "/v1/models" and not script.ollama:
            self._json(
                200,
                {
                    "object": "list",
                    "data": [{"id": name, "object": "model", "owned_by": script.owned_by} for name in script.models],
                },
            )
        elif self.path == "/api/tags" and script.ollama:
            self._json(200, {"models": [{"name": name, "model": name} for name in script.models]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        script = self.scripted.script
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self._note(body)
        if self._hang_up():
            return
        if script.redirect_to:
            self._redirect(script.redirect_to)
            return
        expected = ("/api/chat", "/api/generate") if script.ollama else ("/v1/chat/completions",)
        if self.path not in expected:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if script.silent:
            self.scripted.held.set()
            self._wait_for_the_client_to_go()
            return
        if script.status != 200:
            self._json(script.status, script.error_body or {"error": {"message": f"scripted {script.status}"}})
            return
        if not body.get("stream") and script.repeat is None:
            self._json(200, script.whole or {})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if script.ollama else "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if script.raw_prefix:
                self._chunk(script.raw_prefix)
            chunks = _within(script.chunks, body.get("max_tokens")) if script.honour_max_tokens else script.chunks
            for number, payload in enumerate(chunks):
                if script.cut_after is not None and number == script.cut_after:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # mid-body, without the chunked terminator
                    return
                if script.stall_after is not None and number == script.stall_after:
                    self.wfile.flush()
                    self.scripted.stalled.set()
                    self.scripted.release.wait(60)
                    return
                if number == script.pause_after:
                    self.wfile.flush()
                    self.scripted.release.wait(60)
                if number and script.gap_s:
                    self.wfile.flush()
                    threading.Event().wait(script.gap_s)  # a pause no one ends: the gap itself
                self._chunk(self._frame(payload, script.ollama))
            while script.repeat is not None and not self.scripted.release.is_set():
                payload = script.repeat() if callable(script.repeat) else script.repeat
                self._chunk(payload if isinstance(payload, bytes) else self._frame(payload, script.ollama))
                self.scripted.release.wait(script.pace_s)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.scripted.client_gone.set()

    @staticmethod
    def _frame(payload, ollama: bool) -> bytes:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return (text + "\n").encode() if ollama else f"data: {text}\n\n".encode()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, document: dict) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _note(self, body) -> None:
        # client: the client's port, one per connection (a connection kept alive carries several requests)
        self.scripted.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body, "client": self.client_address[1]}
        )

    def _hang_up(self) -> bool:
        """Close the connection without a word, as a server does to one it keeps alive no longer."""
        if len(self.scripted.requests) - 1 not in self.scripted.script.hang_up_at:
            return False
        self.close_connection = True
        return True

    def _wait_for_the_client_to_go(self) -> None:
        self.connection.settimeout(60)  # a client that never goes fails its test; the thread still ends
        try:
            while self.connection.recv(1024):
                pass
        except TimeoutError:
            return
        except OSError:
            pass
        self.scripted.client_gone.set()
        self.close_connection = True


def _within(chunks: list, max_tokens: int | None) -> list:
    """The chunks, less those with text after max_tokens of them."""
    kept, texts = [], 0
    for payload in chunks:
        delta = (
            payload.get("choices", [{}])[0].get("delta", {})
            if isinstance(payload, dict) and payload.get("choices")
            else {}
        )
        if delta.get("content"):
            texts += 1
            if max_tokens is not None and texts > max_tokens:
                continue
        kept.append(payload)
    return kept


def openai_chunk(
    content: str | None = None,
    *,
    role: str | None = None,
    finish: str | None = None,
    reasoning: str | None = None,
    usage: dict | None = None,
    tokens: int | None = None,
) -> dict:
    """One chat.completion.chunk as servers send it; tokens adds a logprobs entry per token."""
    delta: dict = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    choice: dict = {"index": 0, "delta": delta, "finish_reason": finish}
    if tokens is not None:
        choice["logprobs"] = {"content": [{"token": "t", "logprob": 0.0} for _ in range(tokens)]}
    chunk: dict = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
    if usage is not None:
        chunk["usage"] = usage
    return chunk
