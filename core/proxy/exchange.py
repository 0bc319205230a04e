"""One request on its way through the proxy: what it asked, the stamps taken, and its record when it ends."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from core.proxy.client_process import ClientProcess
from core.proxy.meter import ResponseMeter
from core.proxy.record import ProxyRecord, RequestProgress, RequestStarted
from core.proxy.routes import streams_by_default
from core.timing.metrics import NS_PER_S, percentiles, summarize

MAX_KEPT_REQUEST_BYTES = 1024 * 1024
PROGRESS_EVERY_NS = 50_000_000


@dataclass
class Exchange:
    id: int
    method: str
    path: str
    api: str | None
    user_agent: str | None
    client_address: str | None
    keep_bodies: bool
    start_ns: int = field(default_factory=time.perf_counter_ns)
    started_at: float = field(default_factory=time.time)
    model: str | None = None
    asked_to_stream: bool | None = None
    request_body: str | None = None
    status: int | None = None
    first_byte_ns: int | None = None
    end_ns: int | None = None
    bytes_from_server: int = 0
    error: str | None = None
    in_flight_at_start: int = 0
    max_in_flight: int = 0
    client: ClientProcess | None = None
    meter: ResponseMeter | None = None
    _last_progress_ns: int = 0

    def read_request(self, body: bytes | None) -> None:
        """The model and stream flag a generation request names; its body, where bodies are kept."""
        if body is None:
            return
        if self.keep_bodies:
            self.request_body = body[:MAX_KEPT_REQUEST_BYTES].decode("utf-8", "replace")
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):
            return  # the server will say what it thinks of it
        if isinstance(document, dict):
            model = document.get("model")
            self.model = model[:200] if isinstance(model, str) else None
            stream = document.get("stream")
            self.asked_to_stream = stream if isinstance(stream, bool) else None

    @property
    def stream_hint(self) -> bool:
        if self.asked_to_stream is not None:
            return self.asked_to_stream
        return self.api is not None and streams_by_default(self.api)

    def started(self) -> RequestStarted:
        return RequestStarted(
            self.id,
            self.method,
            self.path,
            self.api,
            self.model,
            self.user_agent,
            self.start_ns,
            self.in_flight_at_start,
        )

    def progress(self, now_ns: int) -> RequestProgress | None:
        """Figures so far, when due: at the first chunk with output, then at most every PROGRESS_EVERY_NS."""
        meter = self.meter
        if meter is None or meter.first_output_ns is None:
            return None
        if meter.output_chunks > 1 and now_ns - self._last_progress_ns < PROGRESS_EVERY_NS:
            return None
        self._last_progress_ns = now_ns
        return RequestProgress(
            self.id,
            meter.output_chunks,
            _seconds(self.first_byte_ns, self.start_ns),
            _seconds(meter.first_output_ns, self.start_ns),
            (now_ns - self.start_ns) / NS_PER_S,
            self.max_in_flight,
        )

    def record(self) -> ProxyRecord:
        meter = self.meter
        base: dict[str, Any] = dict(
            id=self.id,
            started_at=self.started_at,
            method=self.method,
            path=self.path,
            api=self.api,
            status=self.status,
            model=self.model,
            streamed=None,
            user_agent=self.user_agent,
            client_address=self.client_address,
            client_pid=self.client.pid if self.client else None,
            client_process=self.client.name if self.client else None,
            ttfb_s=_seconds(self.first_byte_ns, self.start_ns),
            total_s=_seconds(self.end_ns, self.start_ns),
            in_flight_at_start=self.in_flight_at_start,
            max_in_flight=self.max_in_flight,
            bytes_from_server=self.bytes_from_server,
            error=self.error,
            request_body=self.request_body,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
        )
        if meter is not None:
            base.update(_measured(meter, self.start_ns, self.model, self.error))
        return ProxyRecord(**base)


def _measured(meter: ResponseMeter, start_ns: int, model: str | None, error: str | None) -> dict[str, Any]:
    counted = meter.completion_tokens
    if counted is None:
        counted = meter.timings.get("generated_n") if isinstance(meter.timings.get("generated_n"), int) else None
    tokens = counted if counted is not None else meter.output_chunks
    summary = summarize(start_ns, meter.first_output_ns, meter.last_output_ns, tokens if meter.output_chunks else 0, 0)
    kept = [gap / NS_PER_S for gap in meter.gaps.kept]
    p50, p90, p99 = percentiles(kept, (50, 90, 99))
    return dict(
        model=model or meter.model,
        streamed=meter.streamed,
        prompt_tokens=meter.prompt_tokens,
        cached_tokens=meter.cached_tokens,
        cache_source=meter.cache_source,
        output_tokens=tokens if (counted is not None or meter.output_chunks) else None,
        tokens_are_chunks=counted is None and meter.output_chunks > 0,
        chunks=meter.output_chunks,
        ttft_s=summary.ttft_s,
        e2e_s=summary.e2e_s,
        tpot_s=summary.tpot_s if meter.streamed else None,
        itl_s=tuple(kept),
        itl_count=meter.gaps.count,
        chunk_chars=tuple(meter.chunk_chars),
        itl_p50_s=p50,
        itl_p90_s=p90,
        itl_p99_s=p99,
        itl_max_s=meter.gaps.max_ns / NS_PER_S if meter.gaps.count else None,
        server_timings=dict(meter.timings),
        finish_reason=meter.finish_reason,
        error=error or meter.server_error,
        meter_note=meter.problem,
        reply_text=meter.text if meter.keep_text else None,
        first_token_ns=meter.first_output_ns,
    )


def _seconds(stamp_ns: int | None, start_ns: int) -> float | None:
    return (stamp_ns - start_ns) / NS_PER_S if stamp_ns is not None else None
