"""What the proxy reports: one typed record per request when it ends, and live events while it runs.

No field ever holds an API key: headers are not kept at all, only the User-Agent. Prompts and replies are kept only
where the proxy was told to keep bodies (request_body, reply_text), and are None otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

DEFINITIONS = {
    "start": "The proxy's clock starts when a request's headers reach it (time.perf_counter_ns, the app's clock).",
    "ttfb_s": "Time to first byte: until the server's status line and headers reached the proxy.",
    "ttft_s": "Time to first token: until the first chunk with output (text, reasoning or a tool call) reached the "
    "proxy; for a reply not streamed, until its whole body had.",
    "e2e_s": "End to end: until the last chunk with output reached the proxy.",
    "total_s": "Until the response's last byte had passed through (after the usage chunk, say).",
    "output_tokens": "N: the server's own count (usage.completion_tokens, Ollama's eval_count, llama.cpp's "
    "predicted_n); where it sends none, the chunks with output, and tokens_are_chunks says so.",
    "tpot_s": "Time per output token: (E2E - TTFT) / (N - 1); None for N < 2, for replies not streamed, and where "
    "every token reached the proxy at one instant (no pace between them was seen).",
    "itl_s": "Gaps between chunks with output as they reached the proxy (a chunk's tokens share its stamp); the "
    "first 8192 are kept, itl_count counts them all.",
    "in_flight_at_start": "Other metered (generation) requests in flight through the proxy when this one started.",
    "max_in_flight": "The most other metered requests in flight at once while this one ran.",
}


@dataclass(frozen=True)
class ProxyRecord:
    """One request that passed through the proxy, measured where the server and the stream allowed."""

    id: int
    started_at: float  # wall-clock seconds since the epoch, for logs
    method: str
    path: str  # as the client sent it, query included
    api: str | None  # openai-chat, openai-completions, ollama-chat, ollama-generate; None: passed through unmetered
    status: int | None  # None: no answer from the server (502 sent) or the client left first
    model: str | None
    streamed: bool | None
    user_agent: str | None
    client_address: str | None
    client_pid: int | None
    client_process: str | None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cache_source: str | None = None  # the field the server's cached count came in
    output_tokens: int | None = None
    tokens_are_chunks: bool = False  # the server sent no count: output_tokens counts chunks with output
    chunks: int = 0
    ttfb_s: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    total_s: float | None = None
    itl_s: tuple[float, ...] = ()
    itl_count: int = 0
    chunk_chars: tuple[int, ...] = ()  # characters of output each chunk brought, for the chunks itl_s covers
    itl_p50_s: float | None = None
    itl_p90_s: float | None = None
    itl_p99_s: float | None = None
    itl_max_s: float | None = None
    server_timings: dict = field(default_factory=dict)
    finish_reason: str | None = None
    in_flight_at_start: int = 0
    max_in_flight: int = 0
    bytes_from_server: int = 0
    error: str | None = None  # one line: why the request did not end well (the server's error, a cut, a 502)
    meter_note: str | None = None  # one line: what of the response could not be read (it passed through untouched)
    request_body: str | None = None  # only with keep_bodies
    reply_text: str | None = None  # only with keep_bodies
    # The app's monotonic clock (perf_counter_ns), for a timeline of overlapping requests.
    start_ns: int = 0
    first_token_ns: int | None = None
    end_ns: int | None = None

    def to_dict(self) -> dict:
        values = asdict(self)
        values["itl_s"] = list(self.itl_s)
        values["chunk_chars"] = list(self.chunk_chars)
        return values


@dataclass(frozen=True)
class RequestStarted:
    id: int
    method: str
    path: str
    api: str | None
    model: str | None
    user_agent: str | None
    start_ns: int
    in_flight_at_start: int


@dataclass(frozen=True)
class RequestProgress:
    """A metered request's figures so far; sent at the first chunk with output, then at most every 50 ms."""

    id: int
    chunks: int
    ttfb_s: float | None
    ttft_s: float | None
    elapsed_s: float
    max_in_flight: int


@dataclass(frozen=True)
class RequestFinished:
    record: ProxyRecord


ProxyEvent = RequestStarted | RequestProgress | RequestFinished
