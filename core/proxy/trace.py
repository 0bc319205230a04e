"""A proxied request as a reply's trace, so the chat's meter (and its diagnosis) shows it as it shows a chat reply.

Over a network a chunk is not a token: the trace holds one stamp per chunk with output, as the remote model's does,
and its token count is the server's (ServerReport.output_tokens) where the server sent one. Only the chunks whose
gaps the record kept (core/proxy/meter.py's ITL_KEPT) are stamped; the count and the E2E stay the server's and the
record's. No text is made up: a trace's token texts are empty unless the proxy kept bodies, and then the reply's text
rides on its first chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from core.proxy.record import ProxyRecord
from core.proxy.sharing import sharing_report
from core.remote.server_reports import cache_report, speculation_report
from core.timing.events import ServerReport, StopReason
from core.timing.trace import ReplyTrace

_STOPPED_BY_LENGTH = ("length", "max_tokens")
_SERVER_OF_SOURCE = {"llama.cpp timings": "llama.cpp", "Ollama durations": "Ollama", "vLLM request metrics": "vLLM"}


def server_kind(record: ProxyRecord) -> str:
    """Which server answered, by the timings it sent or the API it was asked in."""
    source = record.server_timings.get("source")
    if source in _SERVER_OF_SOURCE:
        return _SERVER_OF_SOURCE[source]
    return "Ollama" if (record.api or "").startswith("ollama") else "the server"


def chunk_stamps_ns(record: ProxyRecord) -> list[int]:
    """When each chunk with output reached the proxy (perf_counter_ns), for the chunks whose gaps were kept."""
    if record.first_token_ns is None:
        return []
    gaps_ns = (round(gap * 1e9) for gap in record.itl_s)
    return list(itertools.accumulate(gaps_ns, initial=record.first_token_ns))


def reply_trace(record: ProxyRecord, others: Iterable[ProxyRecord] = ()) -> ReplyTrace:
    """The request as a trace the meter can show: its chunks' stamps, the server's counts, timings and cache, and the
    requests that shared the server with it (weighed against `others`, the finished requests the proxy still
    holds)."""
    stamps = chunk_stamps_ns(record)
    kind = server_kind(record)
    texts = [""] * len(stamps)
    if texts and record.reply_text:
        texts[0] = record.reply_text
    first_byte_ns = record.start_ns + round(record.ttfb_s * 1e9) if record.ttfb_s is not None else None
    counted = None if record.tokens_are_chunks else record.output_tokens
    if record.error is not None:
        stop = StopReason.ERROR
    elif record.finish_reason in _STOPPED_BY_LENGTH:
        stop = StopReason.MAX_TOKENS
    else:
        stop = StopReason.EOS
    return ReplyTrace(
        request_start_ns=record.start_ns,
        prompt_tokens=record.prompt_tokens or 0,
        token_ids=[-1] * len(stamps),
        token_texts=texts,
        timestamps_ns=stamps,
        chunk_of=list(range(len(stamps))),
        stop_reason=stop.value,
        error=record.error,
        finished_ns=record.end_ns,
        server=ServerReport(
            kind, record.prompt_tokens, counted, first_byte_ns, record.chunks, dict(record.server_timings) or None
        ),
        cache=cache_report(kind, record.prompt_tokens, record.cached_tokens, record.cache_source),
        speculation=speculation_report(record.server_timings),
        sharing=sharing_report(record, others),
    )
