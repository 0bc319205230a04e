"""The prompt cache over an 8-turn chat: native with the cache, native without it, and llama-server, interleaved.

Each runs the same chat through Latency Lab's own client, `latencylab chat --json`: three processes stay open
side by side and take turn k one after another, so all three see the machine in the same state. The chat is
the lab's history sweep's questions (about 30 new tokens a turn) with 32-token greedy replies, on the
embedded GGUF; llama-server serves the same file with the same thread count (its cache_prompt is on by
default, and it reports timings.cache_n).

Targets: native with the cache, turn-8 TTFT / turn-1 TTFT <= 1.3; native turn-8 TTFT / llama-server's <= 1.0.
Also printed: the prompt cache's memory at turn 8, and the CPU flags.

Run: .venv/bin/python benchmarks/prompt_cache.py [--turns 8] [--tokens 32] [--threads 2] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import _common

from core.lab.history_sweep import SYSTEM_PROMPT, question
from core.model.source import embedded_gguf_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the tests share (not the package)
from tools.llama_cpp_server import LLAMA_SERVER, LlamaCppServer

TARGET_FLATNESS = 1.3
TARGET_AGAINST_LLAMA = 1.0
ROOT = Path(__file__).resolve().parents[1]


class ChatProcess:
    """One `latencylab chat --json`, kept open: a line in, one JSON object out per turn."""

    def __init__(self, name: str, *options: str, threads: int):
        self.name = name
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "chat", "--json", "--system", SYSTEM_PROMPT, *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=env,
        )

    def turn(self, text: str) -> dict:
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: `latencylab chat` ended early (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per reply (greedy)")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--rounds", type=int, default=1, help="whole chats, each a fresh set of processes")
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "prompt_cache")
    gguf = embedded_gguf_path()
    print(
        f"Embedded GGUF {gguf.name}, {args.turns} turns, {args.tokens}-token greedy replies, {args.threads} threads, "
        f"{args.rounds} round(s), interleaved turn by turn"
    )
    common = ("--max-new-tokens", str(args.tokens), "--temperature", "0")
    rows: dict[str, list[list[dict]]] = {"native, cache on": [], "native, cache off": [], "llama-server": []}
    with LlamaCppServer(gguf, threads=args.threads, kind=LLAMA_SERVER) as server:
        for _ in range(args.rounds):
            chats = [
                ChatProcess("native, cache on", *common, threads=args.threads),
                ChatProcess("native, cache off", *common, "--no-prompt-cache", threads=args.threads),
                ChatProcess("llama-server", *common, "--model", server.url, threads=args.threads),
            ]
            try:
                turns = {chat.name: [] for chat in chats}
                for turn in range(1, args.turns + 1):
                    for chat in chats:
                        turns[chat.name].append(chat.turn(question(turn)))
            finally:
                for chat in chats:
                    chat.close()
            for name, done in turns.items():
                rows[name].append(done)

    def ttft_ms(name: str, turn: int) -> float:
        return _common.median([run[turn - 1]["ttft_s"] for run in rows[name]]) * 1000

    print(
        f"\n{'turn':>4} {'prompt':>7} | {'cache on: TTFT ms':>17} {'cached/new':>11} | {'cache off: TTFT ms':>18} | "
        f"{'llama-server: TTFT ms':>21} {'cached/new':>11}"
    )
    for turn in range(1, args.turns + 1):
        on, server = rows["native, cache on"][0][turn - 1], rows["llama-server"][0][turn - 1]
        server_cached = server.get("cached_tokens")
        server_split = (
            "not reported" if server_cached is None else f"{server_cached}/{server['prompt_tokens'] - server_cached}"
        )
        print(
            f"{turn:>4} {on['prompt_tokens']:>7} | {ttft_ms('native, cache on', turn):>17,.1f} "
            f"{on['cached_tokens']:>5}/{on['prefilled_tokens']:<5} | {ttft_ms('native, cache off', turn):>18,.1f} | "
            f"{ttft_ms('llama-server', turn):>21,.1f} {server_split:>11}"
        )
    last = args.turns
    flatness = ttft_ms("native, cache on", last) / ttft_ms("native, cache on", 1)
    without = ttft_ms("native, cache off", last) / ttft_ms("native, cache off", 1)
    against = ttft_ms("native, cache on", last) / ttft_ms("llama-server", last)
    memory = rows["native, cache on"][0][last - 1]["prompt_cache"].get("memory_bytes") or 0
    print(
        f"\nnative with the cache: turn-{last} TTFT / turn-1 TTFT = {flatness:.2f} (target <= {TARGET_FLATNESS}: "
        f"{'met' if flatness <= TARGET_FLATNESS else 'not met'}); without the cache {without:.2f}"
    )
    print(
        f"native turn-{last} TTFT / llama-server turn-{last} TTFT = {against:.2f} (target <= {TARGET_AGAINST_LLAMA}: "
        f"{'met' if against <= TARGET_AGAINST_LLAMA else 'not met'})"
    )
    print(
        f"the prompt cache's memory at turn {last}: {memory / 1e6:.1f} MB (the KV cache as allocated, float16, "
        f"plus chats set aside)"
    )
    report.figure("turn_last_over_first", flatness, f"<= {TARGET_FLATNESS}", flatness <= TARGET_FLATNESS)
    report.figure("without_cache_turn_last_over_first", without)
    report.figure(
        "native_over_llama_server_at_last_turn", against, f"<= {TARGET_AGAINST_LLAMA}", against <= TARGET_AGAINST_LLAMA
    )
    report.figure("cache_memory_mb", memory / 1e6)


if __name__ == "__main__":
    main()
