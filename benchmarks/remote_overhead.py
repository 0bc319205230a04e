"""The client's own cost per chunk against the real llama.cpp server, as a share of the server's time per token.

For each chunk: from the moment its bytes came off the socket (the stamp) to the moment the reply's
consumer holds its token event, i.e. SSE parsing, JSON, event building and the hand-over between
threads. The server's time per token is llama.cpp's own: llama-server's `timings.predicted_per_token_ms`
(or, on llama-cpp-python's server, its logged `eval time … per token` for that request). Median over
all chunks. Target: ≤ 1% of the server's per-token time.

That span starts at the stamp, so the HTTP client's own work before it (reading the socket, the chunked framing)
is not in it. The reading thread's CPU time per chunk is: all its work for the reply (the request, the HTTP client,
parsing, events) up to the last token, over the chunks so far, from Linux's /proc/self/task/TID/schedstat (in ns).
CPU time rather than wall time, so a machine busy with other work inflates it less.

Run: .venv/bin/python benchmarks/remote_overhead.py [--replies 6] [--tokens 64] [--threads N] [--server KIND]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import _common

from core.model.source import embedded_gguf_path
from core.remote.connect import connect
from core.remote.reply import RemoteReply
from core.settings import GenerationSettings
from core.timing.events import TokenEvent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the tests share (not the package)
from tools.llama_cpp_server import LLAMA_SERVER, PYTHON_SERVER, LlamaCppServer

TARGET_RATIO = 0.01
READING_THREAD = "latencylab-remote-reply"  # RemoteReply's thread that sends the request and reads the reply
SERVER_PER_TOKEN = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")


def one_reply(model, tokens: int) -> tuple[list[float], float | None, object]:
    """Per chunk, the client's cost in ms (stamp to consumer); the reading thread's CPU ms per chunk; and the trace."""
    reply = RemoteReply(
        model,
        "",
        [("user", "Tell me a long story about the sea.")],
        GenerationSettings(max_new_tokens=tokens),
        ignore_eos=True,
    ).start()
    costs, seen = [], set()
    # The newest of that name: the last reply's may not have ended yet.
    reader = ([thread for thread in threading.enumerate() if thread.name == READING_THREAD] or [None])[-1]
    cpu_ns = None
    for event in reply:
        received_ns = time.perf_counter_ns()
        if isinstance(event, TokenEvent) and event.chunk not in seen:
            seen.add(event.chunk)
            costs.append((received_ns - event.timestamp_ns) / 1e6)
            cpu_ns = thread_cpu_ns(reader)  # read while the thread lives: it ends soon after the last token
    reply.join()
    return costs, (cpu_ns / len(seen) / 1e6 if cpu_ns is not None and seen else None), reply.trace


def thread_cpu_ns(thread: threading.Thread | None) -> int | None:
    """The CPU time a thread has used so far, in ns (Linux), or None where it cannot be read."""
    if thread is None or thread.native_id is None:
        return None
    try:
        return int(Path(f"/proc/self/task/{thread.native_id}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def server_ms_per_token(lines: list[str]) -> float | None:
    """llama.cpp's own decode time per token for the request whose log lines these are."""
    for line in reversed(lines):
        match = SERVER_PER_TOKEN.search(line)
        if match and "prompt" not in line:
            return float(match.group(1)) / int(match.group(2))
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="the server's threads (default: all cores)")
    parser.add_argument(
        "--server",
        choices=(LLAMA_SERVER, PYTHON_SERVER),
        default=None,
        help="which llama.cpp server (default: llama-server where built)",
    )
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "remote_overhead")
    with LlamaCppServer(embedded_gguf_path(), threads=args.threads, kind=args.server) as server:
        model = connect(server.url)
        one_reply(model, 8)  # warm-up: the first request pays for loading into the cache
        costs, ratios, server_ms, client_tpot, cpu_ms = [], [], [], [], []
        for _ in range(args.replies):
            mark = len(server.lines)
            reply_costs, reply_cpu_ms, trace = one_reply(model, args.tokens)
            timings = (trace.server.timings if trace.server else None) or {}
            per_token = timings.get("per_token_ms")
            if per_token is None:
                time.sleep(0.2)  # let the server's log line for this request arrive
                per_token = server_ms_per_token(server.log_since(mark))
            if trace.error or per_token is None:
                print(f"a reply failed or the server logged no timing: {trace.error}")
                continue
            costs.extend(reply_costs)
            if reply_cpu_ms is not None:
                cpu_ms.append(reply_cpu_ms)
            server_ms.append(per_token)
            client_tpot.append(trace.metrics().tpot_s * 1e3)
            ratios.append(statistics.median(reply_costs) / per_token)
        model.close()
    if not ratios:
        print("no reply could be measured")
        return
    cost_p50, cost_p95 = statistics.median(costs), statistics.quantiles(costs, n=20)[-1]
    ratio = statistics.median(ratios)
    print(
        f"server: {server.kind} ({server.alias}) on 127.0.0.1, {args.replies} replies of {args.tokens} tokens, "
        f"{len(costs)} chunks"
    )
    print(
        f"server's own time per token (llama.cpp eval): median {statistics.median(server_ms):.2f} ms; "
        f"client TPOT over the wire: median {statistics.median(client_tpot):.2f} ms"
    )
    print(f"client cost per chunk (stamp → consumer): p50 {cost_p50 * 1e3:.0f} µs, p95 {cost_p95 * 1e3:.0f} µs")
    if cpu_ms:
        print(
            f"reading thread's CPU per chunk (request, HTTP client, parsing): median {statistics.median(cpu_ms) * 1e3:.0f} µs"
        )
        report.figure("reading_cpu_per_chunk_us", statistics.median(cpu_ms) * 1e3)
    met = ratio <= TARGET_RATIO
    print(
        f"client cost per chunk / server time per token: {ratio:.4f} (target ≤ {TARGET_RATIO}) — "
        f"{'met' if met else 'NOT met'}"
    )
    report.figure("client_cost_ratio", ratio, f"<= {TARGET_RATIO}", met)
    report.figure("client_cost_p50_us", cost_p50 * 1e3)
    report.figure("server_ms_per_token", statistics.median(server_ms))


if __name__ == "__main__":
    main()
