"""One reply from a server: requested on its own thread, every chunk stamped on arrival, yielded as timed events.

It is a Reply (core/generation/reply.py) as a LocalReply is (start, iterate every event, stop, join, trace), so
the engine, the CLI and the lab run a remote reply exactly as a local one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from core.generation.reply import Reply
from core.remote import ollama_chat, openai_chat
from core.remote.errors import PastMaxTokens, RemoteError, ReplyTooLarge, StreamCut, StreamRedactor, redact
from core.remote.http_client import HttpClient
from core.remote.http_stream import HttpStream
from core.remote.pieces import Piece
from core.remote.server_reports import cache_report, speculation_report
from core.remote.wire_formats import JsonLines, MalformedStream, ServerSentEvents
from core.timing.events import (
    FinishedEvent,
    PrefillProgress,
    ServerReport,
    StopReason,
    TokenEvent,
)

# Far beyond any chat reply, well below what a desktop should hold for one: past it the reply is cut and kept.
MAX_REPLY_BYTES = 32 * 1024 * 1024
# How often the stop watcher looks: a Stop (or the deadline) closes the stream within this.
STOP_POLL_S = 0.02
# A reply's overall deadline: the server timeout (its first token may come after a long prompt's silence) plus this
# for each new token asked for. A server that trickles keep-alives or empty chunks for ever is never silent, so the
# server timeout alone never ends it. 2 s a token is slower than any server worth measuring.
DEADLINE_PER_TOKEN_S = 2.0
# A server's token counts are claims, checked against what arrived before they become events or the count: a chunk
# carries at most one token per byte of its text (plus a few empty special tokens), and a reply's usage at most the
# tokens asked for (max new tokens) and COUNT_PER_BYTE per byte of text (room for reasoning a server keeps to
# itself). A count past that is kept as the server's claim, and the tokens are counted from the chunks.
TOKENS_PER_CHUNK_SLACK = 8
COUNT_SLACK = 16
COUNT_PER_BYTE = 16
_FINISH_REASONS = {"length": StopReason.MAX_TOKENS, "max_tokens": StopReason.MAX_TOKENS}


class Endpoint(Protocol):
    """What a reply needs of the server's model (a RemoteModel, which makes its replies: it imports this module, so
    this module names only the parts it reads)."""

    @property
    def server_kind(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def api_key(self) -> str | None: ...
    @property
    def http(self) -> HttpClient: ...


@dataclass(frozen=True)
class RemotePrompt:
    """What a remote reply knows of its prompt before the server answers: the count comes with the usage."""

    prompt_tokens: int = 0
    notice: str | None = None


class RemoteReply(Reply):
    def __init__(
        self,
        model: Endpoint,
        system_prompt: str,
        messages: list[tuple[str, str]],
        settings,
        *,
        stop: threading.Event | None = None,
        streaming: bool = True,
        ignore_eos: bool = False,
    ):
        super().__init__(stop)
        self.model = model
        self.settings = settings
        self.streaming = streaming
        self.decode_loop = f"remote ({model.server_kind}, {model.protocol})"
        self.decode_loop_note: str | None = None
        self._chat = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
            {"role": role, "content": content} for role, content in messages
        ]
        self._ignore_eos = ignore_eos
        self.deadline_s = model.timeout_s + DEADLINE_PER_TOKEN_S * settings.max_new_tokens
        self._past_deadline = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: HttpStream | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.trace.prompt_tokens if self.trace is not None else 0

    def _begin(self) -> None:
        self._thread = threading.Thread(target=self._run, name="latencylab-remote-reply", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_stop, name="latencylab-remote-stop", daemon=True).start()

    # -- the reading thread ---------------------------------------------------------------------

    def _watch_stop(self) -> None:
        deadline = time.monotonic() + self.deadline_s
        while not self._done.is_set():
            stopped = self.stop_event.wait(STOP_POLL_S)
            if not stopped and time.monotonic() < deadline:
                continue
            if not stopped:
                self._past_deadline.set()
            stream = self._stream
            if stream is not None:
                stream.abort()
            if stopped:
                return  # past the deadline, it goes on aborting: the stream may not be open yet

    def _run(self) -> None:
        reading = _Reading(self.model.api_key)
        error: str | None = None
        reason = StopReason.EOS
        try:
            if not self.stop_event.is_set():
                reason = self._request(reading)
        except StreamCut as cut:
            error = None if self.stop_event.is_set() else f"interrupted: {cut}"
        except (ReplyTooLarge, PastMaxTokens) as large:
            error = f"interrupted: {large}"
        except RemoteError as failure:
            error = None if self.stop_event.is_set() else str(failure)
        except MalformedStream as malformed:
            error = f"interrupted: the server's stream is malformed ({malformed})."
        except BaseException as failure:  # noqa: BLE001 - every failure must reach the consumer
            error = f"{type(failure).__name__}: {failure}"
        if self._past_deadline.is_set() and not reading.done and not self.stop_event.is_set():
            error = (
                f"interrupted: the reply ran past its overall deadline of {self.deadline_s:,.0f} s (the server "
                f"timeout plus {DEADLINE_PER_TOKEN_S:g} s for each new token asked for) and was cut there; what "
                "came is kept."
            )
        if self.stop_event.is_set() and error is None:
            reason = StopReason.STOPPED
        if error is not None:  # shown, and saved with the chat: never with the key a server echoed
            error = redact(error, self.model.api_key)
        stream = self._stream
        counted, timings = reading.completion_tokens, reading.timings
        if counted is not None and not self._believable(counted, reading):
            counted, timings = None, {**(timings or {}), "claimed_output_tokens": reading.completion_tokens}
        self.emit(
            ServerReport(
                self.model.server_kind,
                reading.prompt_tokens,
                counted,
                stream.first_byte_ns if stream else None,
                reading.chunks,
                timings,
            )
        )
        self.emit(
            cache_report(self.model.server_kind, reading.prompt_tokens, reading.cached_tokens, reading.cache_source)
        )
        speculation = speculation_report(timings)
        if speculation is not None:
            self.emit(speculation)
        # Reasoning held back at the very end (a stream cut inside it) is kept with the answer's: it is shown, not lost.
        tail = reading.thought.flush() + reading.answer.flush()
        self.emit(
            FinishedEvent(
                StopReason.ERROR if error else reason, reading.tokens, time.perf_counter_ns(), tail, error=error
            )
        )
        if stream is not None:
            # After the finish is out, so no consumer waits on it: a finished reply's connection goes back to the
            # model's pool for the next (its body's last bytes read first); any other is ended.
            stream.close(keep_alive=reading.done and error is None and not self.stop_event.is_set())
        self._done.set()

    def _request(self, reading: _Reading) -> StopReason:
        model, settings = self.model, self.settings
        common = dict(
            stream=self.streaming,
            max_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            seed=settings.seed,
        )
        if model.protocol == "ollama":
            url = model.base_url + "/api/chat"
            payload = ollama_chat.request_body(model.model, self._chat, **common)
        else:
            url = model.base_url + "/chat/completions"
            payload = openai_chat.request_body(
                model.model, self._chat, server_kind=model.server_kind, ignore_eos=self._ignore_eos, **common
            )
        self._stream = HttpStream(model.http, url, payload=payload, api_key=model.api_key, timeout_s=model.timeout_s)
        if self.stop_event.is_set():
            return StopReason.STOPPED
        self._stream.open()
        if not self.streaming:
            arrival_ns, body = self._stream.read_all(MAX_REPLY_BYTES)
            piece = _ollama_whole(body) if model.protocol == "ollama" else openai_chat.read_response(body)
            self._take(piece, arrival_ns, reading)
            return reading.reason
        parser: JsonLines | ServerSentEvents
        read: Callable[[str], Piece]
        if model.protocol == "ollama":
            parser, read = JsonLines(), ollama_chat.read_line
        else:
            parser, read = ServerSentEvents(), openai_chat.read_event
        received = 0
        for arrival_ns, data in self._stream.chunks():
            received += len(data)
            if received > MAX_REPLY_BYTES:
                self._stream.abort()
                raise ReplyTooLarge(
                    f"the reply passed {MAX_REPLY_BYTES // (1024 * 1024)} MiB and was cut there; what came is kept."
                )
            for message in parser.feed(data):
                self._take(read(message), arrival_ns, reading)
            if reading.done:
                return reading.reason
        for message in parser.finish():
            self._take(read(message), time.perf_counter_ns(), reading)
        if not reading.done and not self.stop_event.is_set():
            raise StreamCut(f"{self._stream.where} ended the stream before the reply was done.")
        return reading.reason

    def _take(self, piece: Piece, arrival_ns: int, reading: _Reading) -> None:
        """Turn one message into events, all stamped with the arrival of the bytes that completed it.

        Its text is the server's, and a server may echo the API key into it: what it says is redacted before it
        becomes an event, so no output (stdout, --json, the window, a saved chat, an export) ever holds the key."""
        if piece.prefill_fraction is not None:
            self.emit(PrefillProgress(round(piece.prefill_fraction * 1000), 1000, arrival_ns))
        if piece.has_content:
            if reading.tokens >= self.settings.max_new_tokens:  # counted by the server's count where it gives one
                raise PastMaxTokens(
                    f"the server sent more than the {self.settings.max_new_tokens:,} new tokens asked for (it "
                    "ignores max_tokens); the reply was cut there, and what came is kept."
                )
            reading.text_bytes += len(piece.text.encode("utf-8", "replace")) + len(
                piece.reasoning.encode("utf-8", "replace")
            )
            count = self._tokens_in(piece, reading)
            chunk = reading.chunks
            reading.chunks += 1
            reasoning = reading.thought.feed(piece.reasoning) + (reading.thought.flush() if piece.text else "")
            answer = reading.answer.feed(piece.text)
            # A piece whose text is all held back still brings its tokens, as empty ones.
            parts = [(part, is_reasoning) for part, is_reasoning in ((reasoning, True), (answer, False)) if part] or [
                ("", bool(piece.reasoning) and not piece.text)
            ]
            # A chunk of several tokens: its text rides on the first, the rest are spread at the same stamp.
            extra = max(0, count - len(parts))
            for position, (part, is_reasoning) in enumerate(parts):
                texts = [part] + ([""] * extra if position == len(parts) - 1 else [])
                for text in texts:
                    self.emit(TokenEvent(reading.tokens, -1, text, arrival_ns, chunk=chunk, reasoning=is_reasoning))
                    reading.tokens += 1
        if piece.prompt_tokens is not None:
            reading.prompt_tokens = piece.prompt_tokens
        if piece.completion_tokens is not None:
            reading.completion_tokens = piece.completion_tokens
        if piece.cached_tokens is not None:
            reading.cached_tokens, reading.cache_source = piece.cached_tokens, piece.cache_source
        if piece.timings:
            reading.timings = {**(reading.timings or {}), **piece.timings}
            if reading.completion_tokens is None and isinstance(piece.timings.get("generated_n"), int):
                reading.completion_tokens = piece.timings["generated_n"]  # llama.cpp's count, where no usage came
        if piece.finish_reason:
            reading.reason = _FINISH_REASONS.get(piece.finish_reason, StopReason.EOS)
        if piece.done:
            reading.done = True

    def _tokens_in(self, piece: Piece, reading: _Reading) -> int:
        """A chunk's tokens: the server's exact count where it gives one, a running usage's step, else one; a count
        the chunk's bytes cannot hold is the server's claim, not tokens (one is counted)."""
        claimed = 1
        if piece.tokens is not None:
            claimed = piece.tokens
        elif piece.completion_tokens is not None:
            if not self.streaming:
                claimed = piece.completion_tokens  # the whole reply in one response
            elif reading.completion_tokens is not None or self.model.server_kind == "vLLM":
                claimed = max(1, piece.completion_tokens - (reading.completion_tokens or 0))  # a running count
        size = len(piece.text.encode("utf-8", "replace")) + len(piece.reasoning.encode("utf-8", "replace"))
        room = self.settings.max_new_tokens + COUNT_SLACK - reading.tokens
        return claimed if claimed <= min(size + TOKENS_PER_CHUNK_SLACK, room) else 1

    def _believable(self, count: int, reading: _Reading) -> bool:
        """Whether a reply's usage count fits what was asked for and what arrived (see COUNT_PER_BYTE)."""
        asked_for = self.settings.max_new_tokens + COUNT_SLACK
        return count <= min(asked_for, COUNT_PER_BYTE * reading.text_bytes + COUNT_SLACK)


class _Reading:
    """What one reply's stream has said so far."""

    def __init__(self, api_key: str | None = None):
        self.thought, self.answer = StreamRedactor(api_key), StreamRedactor(api_key)
        self.chunks = 0
        self.tokens = 0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.text_bytes = 0  # of the text and reasoning that arrived: what the server's counts are checked against
        self.timings: dict | None = None
        self.cached_tokens: int | None = None
        self.cache_source: str | None = None
        self.reason = StopReason.EOS
        self.done = False


def _ollama_whole(body: bytes) -> Piece:
    return ollama_chat.read_line(body.decode("utf-8", "replace").strip())
