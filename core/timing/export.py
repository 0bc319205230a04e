"""Write traces to JSON and CSV, one row per token, with the metric definitions inside the file."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import msgspec

from core.atomic_file import atomic_write_text
from core.timing.cpu_share import DEFINITION as CPU_SHARE_DEFINITION
from core.timing.metrics import DEFINITIONS, percentile
from core.timing.server_compare import DEFINITIONS as SERVER_DEFINITIONS
from core.timing.server_compare import compare
from core.timing.trace import ReplyTrace
from core.timing.trace_codec import trace_to_dict
from core.timing.waterfall import definitions as waterfall_definitions
from core.timing.waterfall import waterfall_document

CSV_COLUMNS = ("turn", "index", "token_id", "text", "t_s", "interval_s", "delivery_s", "chunk", "reasoning")
PREFILL_PROGRESS_DEFINITION = (
    "prefill_progress: the prompt's forward pass, reported before each decoder layer "
    "and after the last: t_s since request start, fraction of the layers done "
    "(1.0 exactly when the pass ends; short of it when a stop abandoned the pass)."
)
CPU_DEFINITIONS = {
    "cpu": "The engine's CPU use over the reply's compute: cpu_s (every thread of its process), wall_s and threads.",
    "cpu.cpu_share": CPU_SHARE_DEFINITION,
    "cpu.contention": "Set when cpu_share is below 0.75: other programs took the CPU, so TPOT is not the model's.",
    "cpu.major_faults": "Major page faults in the engine over the reply: pages (the weights) read from disk. "
    "token_major_faults: per token, since the one before (token 0's: the prefill). disk_read_bytes: what the engine "
    "read from storage over the reply (/proc/self/io; each fault reads ahead megabytes).",
    "cpu.preemptions": "Involuntary context switches in the engine over the reply: its threads descheduled for "
    "other programs. token_preemptions: per token, as token_major_faults.",
    "cpu.gc_pauses": "Python's garbage collections in the engine over the reply: [start (perf_counter_ns), duration "
    "(ns)].",
    "cpu.packing_pauses": "Passes that first packed the weights a load had left in the file's layout (once, in the "
    "first reply after a load, before its first decode step): [start (perf_counter_ns), duration (ns)].",
    "cpu.window_cpu_share": "The window process's CPU time during the reply over its wall time, in cores (0.2 = a "
    "fifth of one core): what the meter itself costs, taken from decode on a small machine.",
}
PROMPT_CACHE_DEFINITIONS = {
    "cached_tokens": "Prompt tokens whose keys and values came from the prompt cache (the chat's earlier turns), not "
    "computed for this reply; null where a server did not report it (never inferred).",
    "prefilled_tokens": "Prompt tokens computed by this reply's prefill: prompt_tokens - cached_tokens. TTFT follows "
    "these, not the whole prompt.",
    "prompt_cache": "Why no more of the prompt was cached (reason), the token where reuse of the cached history "
    "stopped (break_at), who counted (source: local, or the server's field), and the prompt cache's "
    "memory as the prompt began (memory_bytes: the KV cache as allocated plus the chats set aside; "
    "local only); with the prompt's tokens and the cached ones as the report counted them, and when the cached part "
    "was in place (timestamp_ns, perf_counter_ns; local only).",
}
DIAGNOSIS_DEFINITION = (
    "Why the reply was as slow as it was, most costly first: each finding's kind, summary (one sentence), cause, "
    "evidence (the measurement, with its figures), figure (its headline number), advice and cost_s (about how much of "
    "the reply it took, where measurable). A reply nothing slowed has one finding of kind 'healthy'; null where the "
    "reply was not diagnosed."
)
TRACE_DEFINITION = (
    "The reply's raw record (perf_counter_ns stamps), from which every figure here is computed: every field "
    "Latency Lab keeps of a reply, as a saved chat holds it."
)
INTERVAL_DEFINITION = (
    "interval_s: time since the previous token; for index 0 it is the time since "
    "request start, i.e. the TTFT. t_s: seconds since request start."
)


def token_rows(trace: ReplyTrace, turn: int = 0) -> list[dict]:
    rows = []
    previous = trace.request_start_ns
    delivery = trace.delivery_delays_s()
    reasoning = set(trace.reasoning_indices)
    for index, (token_id, text, stamp) in enumerate(zip(trace.token_ids, trace.token_texts, trace.timestamps_ns)):
        rows.append(
            {
                "turn": turn,
                "index": index,
                "token_id": token_id,
                "text": text,
                "t_s": (stamp - trace.request_start_ns) / 1e9,
                "interval_s": (stamp - previous) / 1e9,
                "delivery_s": delivery[index] if delivery else None,
                "chunk": trace.chunk_of[index] if trace.chunk_of else None,
                "reasoning": index in reasoning if reasoning else None,
            }
        )
        previous = stamp
    return rows


def trace_document(trace: ReplyTrace, turn: int = 0, context: dict | None = None) -> dict:
    return {
        "turn": turn,
        **(context or {}),
        "prompt_tokens": trace.prompt_tokens,
        "output_tokens": trace.output_tokens,
        "stop_reason": trace.stop_reason,
        "error": trace.error,
        "text": trace.text,
        "metrics": trace.metrics().to_dict(),
        "delivery": delivery_summary(trace),
        "prefill_progress": [
            {"t_s": (stamp - trace.request_start_ns) / 1e9, "fraction": fraction}
            for stamp, fraction in trace.prefill_progress
        ],
        "waterfall": waterfall_document(trace),
        "diagnosis": msgspec.to_builtins(trace.diagnosis),
        "tokens": token_rows(trace, turn),
        **cache_document(trace),
        **cpu_document(trace),
        **server_document(trace),
        "trace": trace_to_dict(trace),
    }


def cpu_document(trace: ReplyTrace) -> dict:
    """What the engine's threads really got of the CPU during the reply (its CpuUsage report, every field), the
    window's own share, and a note when other programs took enough to slow it (core/timing/cpu_share.py); empty
    where nothing was measured."""
    from core.timing.cpu_share import contention_note

    if trace.cpu is None and trace.window_cpu_s is None:
        return {}
    share = trace.cpu_share
    return {
        "cpu": {
            **(msgspec.to_builtins(trace.cpu) if trace.cpu else {}),
            "cpu_share": share,
            "contention": contention_note(share),
            "window_cpu_share": trace.window_cpu_share,
        }
    }


def reply_report(model_facts: dict, trace: ReplyTrace, settings) -> dict:
    """One reply as `ask --json` prints it (and each side of `race --json`): the model, settings, metrics, tokens."""
    metrics = trace.metrics()
    return {
        **model_facts,
        "settings": settings.to_dict(),
        "prompt_tokens": trace.prompt_tokens,
        "output_tokens": trace.output_tokens,
        "ttft_s": metrics.ttft_s,
        "tpot_s": metrics.tpot_s,
        "e2e_s": metrics.e2e_s,
        "itl_s": list(metrics.itl_s),
        "itl_p50_s": metrics.itl_p50_s,
        "itl_p90_s": metrics.itl_p90_s,
        "itl_p99_s": metrics.itl_p99_s,
        "prefill_tok_s": metrics.prefill_tok_s,
        "decode_tok_s": metrics.decode_tok_s,
        "token_times_s": trace.token_times_s(),
        # The prompt's pass, layer by layer: seconds since request start, fraction of the layers done.
        "prefill_progress": [
            {"t_s": (stamp - trace.request_start_ns) / 1e9, "fraction": fraction}
            for stamp, fraction in trace.prefill_progress
        ],
        "token_ids": trace.token_ids,
        "text": trace.text,
        "stop_reason": trace.stop_reason,
        "error": trace.error,
        # Where the time went before the first token, as the window's waterfall shows it.
        "waterfall": waterfall_document(trace),
        "diagnosis": msgspec.to_builtins(trace.diagnosis),
        **cache_document(trace),
        **cpu_document(trace),
        **server_document(trace),
        "trace": trace_to_dict(trace),
    }


def cache_document(trace: ReplyTrace) -> dict:
    """How much of the prompt the prompt cache gave, and why no more (its PromptCacheReport, every field); empty
    where the reply said nothing of it."""
    if trace.cache is None:
        return {}
    return {
        "cached_tokens": trace.cached_tokens,
        "prefilled_tokens": trace.prefilled_tokens,
        "prompt_cache": msgspec.to_builtins(trace.cache),
    }


def server_document(trace: ReplyTrace) -> dict:
    """A remote reply's extra facts: chunks, time to first byte, reasoning, and the server's report (every field)
    with its timings beside ours."""
    server = trace.server
    if server is None:
        return {}
    return {
        "chunks": trace.chunks,
        "ttfb_s": (server.first_byte_ns - trace.request_start_ns) / 1e9 if server.first_byte_ns else None,
        "reasoning_text": trace.reasoning_text,
        "server": {
            **msgspec.to_builtins(server),
            "tokens_counted_from": server.tokens_counted_from,
            "client_vs_server": compare(trace.metrics().ttft_s, server.timings),
        },
    }


NOT_FINITE = "not a finite number (NaN or infinity, which JSON cannot hold), so it is null"


def json_text(document: dict, **options) -> str:
    """JSON any parser reads: Python writes NaN and Infinity bare, which is not JSON. Each such number becomes
    null, and the document's "null_because" names it and says why."""
    nulled: list[str] = []
    clean = _finite(document, "", nulled)
    if nulled:
        clean["null_because"] = dict.fromkeys(nulled, NOT_FINITE)
    return json.dumps(clean, allow_nan=False, **options)


def _finite(value, path: str, nulled: list[str]):
    if isinstance(value, float) and not math.isfinite(value):
        nulled.append(path or "(the document)")
        return None
    if isinstance(value, dict):
        return {key: _finite(item, f"{path}.{key}" if path else str(key), nulled) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item, f"{path}[{index}]", nulled) for index, item in enumerate(value)]
    return value


def traces_to_json(
    traces: Sequence[ReplyTrace], context: dict | None = None, per_trace_context: Sequence[dict] | None = None
) -> str:
    documents = [
        trace_document(trace, turn, per_trace_context[turn] if per_trace_context else None)
        for turn, trace in enumerate(traces)
    ]
    payload = {
        "format": "latencylab-trace/1",
        "definitions": {
            **DEFINITIONS,
            **SERVER_DEFINITIONS,
            **PROMPT_CACHE_DEFINITIONS,
            **CPU_DEFINITIONS,
            "interval_s": INTERVAL_DEFINITION,
            "prefill_progress": PREFILL_PROGRESS_DEFINITION,
            "trace": TRACE_DEFINITION,
            "diagnosis": DIAGNOSIS_DEFINITION,
            **waterfall_definitions(),
        },
        **(context or {}),
        "replies": documents,
    }
    return json_text(payload, ensure_ascii=False, indent=1)


def traces_to_csv(traces: Sequence[ReplyTrace]) -> str:
    buffer = io.StringIO()
    for key, definition in {**DEFINITIONS, "interval_s": INTERVAL_DEFINITION}.items():
        buffer.write(f"# {key}: {definition}\n")
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for turn, trace in enumerate(traces):
        writer.writerows(token_rows(trace, turn))
    return buffer.getvalue()


def write_text_file(path: str | Path, text: str) -> None:
    """Atomic: a full disk or a crash leaves the file that was there, never a part of the new one."""
    atomic_write_text(Path(path), text)


def delivery_summary(trace: ReplyTrace) -> dict | None:
    """Engine stamp to window arrival over one reply, as p50 and p95 (DEFINITIONS['delivery_s'])."""
    delays = trace.delivery_delays_s()
    if not delays:
        return None
    return {"p50_s": percentile(delays, 50), "p95_s": percentile(delays, 95), "max_s": max(delays)}
