"""Why the proxy is built on aiohttp: its added latency per chunk against a bare Starlette + uvicorn + httpx relay.

Three processes besides this client: a synthetic SSE server (aiohttp) whose every chunk carries the moment it was
sent (perf_counter_ns is CLOCK_MONOTONIC, one clock for every process here), `latencylab proxy` in front of it
(aiohttp for both sides, metering every chunk), and the alternative: Starlette under uvicorn (asyncio loop, h11)
forwarding with httpx.AsyncClient, a bare relay that meters nothing. The client (aiohttp) reads streams straight
from the server and through each proxy, interleaved, and takes each chunk's delay from send to arrival.

Run: .venv/bin/python benchmarks/proxy_libraries.py [--rounds 6] [--chunks 100] [--gap-ms 4] [--concurrency 1 32]
Needs starlette, uvicorn and httpx (llama-cpp-python's server extra brings the first two: `make test`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import _common
import aiohttp


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_upstream(port: int) -> None:
    """The synthetic server: ?n= chunks, ?gap= seconds apart, each stamped as it is written."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for _ in range(int(request.query.get("n", "100"))):
            await asyncio.sleep(float(request.query.get("gap", "0.004")))
            document = {"choices": [{"delta": {"content": "x"}}], "sent": time.perf_counter_ns()}
            await response.write(f"data: {json.dumps(document)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def serve_starlette(upstream: str, port: int) -> None:
    """The alternative: a bare relay, hop-by-hop headers dropped, each chunk passed on as httpx reads it."""
    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=None))
    hop = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}

    async def relay(request):
        target = upstream + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        headers = [(name, value) for name, value in request.headers.items() if name not in hop]
        sent = client.build_request(request.method, target, headers=headers, content=await request.body())
        answer = await client.send(sent, stream=True)

        async def chunks():
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()

        kept = {name: value for name, value in answer.headers.items() if name.lower() not in hop}
        return StreamingResponse(chunks(), status_code=answer.status_code, headers=kept)

    app = Starlette(routes=[Route("/{path:path}", relay, methods=["GET", "POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", loop="asyncio", http="h11")


async def one_stream(session: aiohttp.ClientSession, root: str, chunks: int, gap_s: float) -> list[float]:
    delays, pending = [], b""
    async with session.post(f"{root}/v1/chat/completions?n={chunks}&gap={gap_s}", json={"stream": True}) as response:
        async for data in response.content.iter_any():
            now = time.perf_counter_ns()
            *events, pending = (pending + data).split(b"\n\n")
            for event in events:
                payload = event.removeprefix(b"data: ")
                if payload != b"[DONE]":
                    delays.append((now - json.loads(payload)["sent"]) / 1e3)
    return delays


async def compare(roots: dict[str, str], rounds: int, concurrency: int, chunks: int, gap_s: float) -> dict:
    delays: dict[str, list[float]] = {name: [] for name in roots}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for index in range(rounds):
            for name in list(roots) if index % 2 == 0 else list(reversed(roots)):
                for stream in await asyncio.gather(
                    *(one_stream(session, roots[name], chunks, gap_s) for _ in range(concurrency))
                ):
                    delays[name] += stream
    return delays


def start(command: list[str], port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{' '.join(command)} did not listen within 60 s")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-upstream":
        return serve_upstream(int(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-starlette":
        return serve_starlette(sys.argv[2], int(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--chunks", type=int, default=100, help="chunks a stream")
    parser.add_argument("--gap-ms", type=float, default=4.0, help="the server's pause before each chunk")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "proxy_libraries")
    ports = {name: free_port() for name in ("direct", "aiohttp", "starlette")}
    upstream = f"http://127.0.0.1:{ports['direct']}"
    me = [sys.executable, __file__]
    processes = [start([*me, "--serve-upstream", str(ports["direct"])], ports["direct"])]
    try:
        proxy = [sys.executable, "-m", "cli.main", "proxy", "--upstream", upstream, "--port", str(ports["aiohttp"])]
        processes.append(start(proxy, ports["aiohttp"]))
        processes.append(start([*me, "--serve-starlette", upstream, str(ports["starlette"])], ports["starlette"]))
        roots = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        print(f"{args.chunks} chunks a stream, {args.gap_ms:g} ms apart; {args.rounds} rounds each way, interleaved")
        for concurrency in args.concurrency:
            delays = asyncio.run(compare(roots, args.rounds, concurrency, args.chunks, args.gap_ms / 1e3))
            print(f"\n{concurrency} stream(s) at once: each chunk's delay from the server's write to the client")
            direct_p50 = _common.median(delays["direct"])
            for name, values in delays.items():
                ordered = sorted(values)
                p50, p90 = _common.median(ordered), ordered[int(len(ordered) * 0.9)]
                added = "" if name == "direct" else f", {p50 - direct_p50:+.0f} µs against direct"
                print(f"  {name:9} p50 {p50:7.0f} µs, p90 {p90:7.0f} µs{added}")
                if name != "direct":
                    report.figure(f"{name}_added_p50_us_at_{concurrency}", round(p50 - direct_p50, 1))
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
