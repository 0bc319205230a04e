"""What `latencylab proxy` adds to a client's latency: the same streams straight to llama-server and through the proxy.

A real llama-server on the embedded model; the proxy runs as a user runs it (`latencylab proxy`, its own process).
After one unmeasured round each way, rounds alternate direct and proxied (ABBA: each round's order is the reverse of
the one before, so a drift in the machine's load falls on both), at each concurrency: 1 stream, then N at once (the server gets N slots, so they share
its batch rather than queue). Each stream asks for exactly --tokens tokens (ignore_eos) and the client stamps each
chunk as it reads it (aiohttp, one event loop). TTFT: send to the first chunk with content; TPOT: (E2E - TTFT) /
(N - 1) with N from usage. Targets: TTFT p50 at most 1 ms more, TPOT median at most 2% more, at 1 and 32 streams.

Run: .venv/bin/python benchmarks/proxy_overhead.py [--rounds 10] [--tokens 32] [--concurrency 1 32] [--threads N]
     [--connections new|kept]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _common
import aiohttp

from core.model.source import embedded_gguf_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the tests share (not the package)
from tools.llama_cpp_server import LLAMA_SERVER, LlamaCppServer

TTFT_TARGET_MS = 1.0
TPOT_TARGET_RATIO = 1.02
PROMPT = [{"role": "user", "content": "Tell me a long story about the sea."}]
CONNECTIONS = {
    "new": "new connections each round",
    "kept": "connections kept from round to round",
}
SLOT_CONTEXT = 512  # the prompt and the reply fit; llama-server splits --ctx-size among its slots


async def one_stream(session: aiohttp.ClientSession, root: str, tokens: int) -> tuple[float, float]:
    """(TTFT s, TPOT s) of one streamed chat, stamped by this client as each chunk arrives.

    llama-server closes a kept-alive connection after a few requests without saying so; a request sent on one it had
    closed is sent again at once on a new connection, as SDK clients do, and timed from that second send.
    """
    try:
        return await one_timed_stream(session, root, tokens)
    except aiohttp.ServerDisconnectedError:
        return await one_timed_stream(session, root, tokens)


async def one_timed_stream(session: aiohttp.ClientSession, root: str, tokens: int) -> tuple[float, float]:
    body = {
        "model": "embedded",
        "messages": PROMPT,
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    sent = time.perf_counter_ns()
    first = last = None
    count = None
    pending = b""
    async with session.post(f"{root}/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for data in response.content.iter_any():
            stamp = time.perf_counter_ns()
            *events, pending = (pending + data).split(b"\n\n")
            for event in events:
                payload = event.strip().removeprefix(b"data: ")
                if not payload or payload == b"[DONE]":
                    continue
                document = json.loads(payload)
                if document.get("usage"):
                    count = document["usage"]["completion_tokens"]
                choices = document.get("choices") or [{}]
                if (choices[0].get("delta") or {}).get("content"):
                    first = first or stamp
                    last = stamp
    if first is None or last is None or not count or count < 2:
        raise RuntimeError(f"a stream ended with {count} tokens")
    return (first - sent) / 1e9, (last - first) / (count - 1) / 1e9


def new_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=600))


async def one_round(
    root: str, concurrency: int, tokens: int, session: aiohttp.ClientSession | None = None
) -> list[tuple[float, float]]:
    """The streams of one round at once: on the session given (its kept connections), or on new connections."""
    if session is not None:
        return await asyncio.gather(*(one_stream(session, root, tokens) for _ in range(concurrency)))
    async with new_session() as fresh:
        return await asyncio.gather(*(one_stream(fresh, root, tokens) for _ in range(concurrency)))


def start_proxy(upstream: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "proxy", "--upstream", upstream, "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    match = re.search(r"latencylab proxy: (http://\S+) -> ", banner)
    if not match:
        process.kill()
        raise RuntimeError(f"the proxy did not start: {banner}{process.stderr.read()}")
    return process, match.group(1)


def scheduled_ms(pid: int) -> tuple[float, float]:
    """(ms on a core, ms runnable but waiting for one) of all a process's threads so far (Linux schedstat, in ns)."""
    ran = waited = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            on_cpu, on_queue, _ = path.read_text().split()
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
        ran, waited = ran + int(on_cpu), waited + int(on_queue)
    return ran / 1e6, waited / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds per mode at each concurrency")
    parser.add_argument("--tokens", type=int, default=32, help="tokens per stream")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32], help="streams at once")
    parser.add_argument("--threads", type=int, default=None, help="the server's threads (default: all cores)")
    parser.add_argument(
        "--connections",
        choices=sorted(CONNECTIONS),
        default="new",
        help="new: each round's streams open new connections (as a script's one-off request does); kept: each side "
        "keeps its connections from round to round (as an SDK client's pool does)",
    )
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "proxy_overhead")
    slots = max(args.concurrency)
    extra = ("--parallel", str(slots), "--ctx-size", str(SLOT_CONTEXT * slots))
    with LlamaCppServer(embedded_gguf_path(), threads=args.threads, kind=LLAMA_SERVER, extra_args=extra) as server:
        direct = f"http://127.0.0.1:{server.port}"
        proxy, through = start_proxy(direct)
        try:
            asyncio.run(one_round(direct, 1, 4))  # warm-up: the weights into the cache, the prompt into a slot
            asyncio.run(one_round(through, 1, 4))
            print(
                f"llama-server on the embedded model, {slots} slots; proxy at {through}; {args.tokens} tokens a stream"
            )
            for concurrency in args.concurrency:
                measure(report, {"direct": direct, "proxy": through}, concurrency, args, proxy.pid)
        finally:
            proxy.terminate()
            proxy.wait(10)


def measure(report, roots: dict[str, str], concurrency: int, args, proxy_pid: int) -> None:
    results, (proxy_cpu_ms, proxy_wait_ms) = asyncio.run(rounds(roots, concurrency, args, proxy_pid))
    ttft = {mode: statistics.median(t for t, _ in rows) * 1e3 for mode, rows in results.items()}
    tpot = {mode: statistics.median(p for _, p in rows) * 1e3 for mode, rows in results.items()}
    delta, ratio = ttft["proxy"] - ttft["direct"], tpot["proxy"] / tpot["direct"]
    streams = len(results["proxy"])
    ttft_met, tpot_met = delta <= TTFT_TARGET_MS, ratio <= TPOT_TARGET_RATIO
    print(
        f"\n{concurrency} stream(s) at once, {args.rounds} rounds each way ({streams} streams a mode), interleaved, "
        f"{CONNECTIONS[args.connections]}:"
    )
    print(f"  TTFT p50: direct {ttft['direct']:.2f} ms, through the proxy {ttft['proxy']:.2f} ms")
    print(f"    delta {delta:+.2f} ms (target <= {TTFT_TARGET_MS:g} ms): {'met' if ttft_met else 'NOT met'}")
    print(f"  TPOT median: direct {tpot['direct']:.3f} ms, through the proxy {tpot['proxy']:.3f} ms")
    print(f"    ratio {ratio:.3f} (target <= {TPOT_TARGET_RATIO:g}): {'met' if tpot_met else 'NOT met'}")
    chunks = streams * args.tokens
    print(
        f"  the proxy's own CPU: {proxy_cpu_ms:.0f} ms for {streams} streams, {proxy_cpu_ms / chunks * 1e3:.0f} µs a chunk; "
        f"it waited for a core {proxy_wait_ms / chunks * 1e3:.0f} µs a chunk"
    )
    label = f"{concurrency}_{args.connections}"
    report.figure(f"ttft_p50_delta_ms_at_{label}", round(delta, 3), f"<= {TTFT_TARGET_MS:g} ms", ttft_met)
    report.figure(f"tpot_ratio_at_{label}", round(ratio, 4), f"<= {TPOT_TARGET_RATIO:g}", tpot_met)
    report.figure(f"proxy_cpu_us_per_chunk_at_{label}", round(proxy_cpu_ms / chunks * 1e3, 1))
    report.figure(f"proxy_wait_us_per_chunk_at_{label}", round(proxy_wait_ms / chunks * 1e3, 1))


async def rounds(
    roots: dict[str, str], concurrency: int, args, proxy_pid: int
) -> tuple[dict[str, list[tuple[float, float]]], tuple[float, float]]:
    """Each mode's (TTFT, TPOT) rows over ABBA-ordered rounds, and the proxy's ms on a core and waiting for one."""
    results: dict[str, list[tuple[float, float]]] = {"direct": [], "proxy": []}
    sessions = {mode: new_session() for mode in roots} if args.connections == "kept" else {}
    try:
        for mode in ("direct", "proxy"):  # unmeasured: the server's first batch this wide, both sides' connections
            await one_round(roots[mode], concurrency, args.tokens, sessions.get(mode))
        before = scheduled_ms(proxy_pid)
        for round_index in range(args.rounds):
            order = ("direct", "proxy") if round_index % 2 == 0 else ("proxy", "direct")
            for mode in order:
                results[mode] += await one_round(roots[mode], concurrency, args.tokens, sessions.get(mode))
        after = scheduled_ms(proxy_pid)
        return results, (after[0] - before[0], after[1] - before[1])
    finally:
        for session in sessions.values():
            await session.close()


if __name__ == "__main__":
    main()
