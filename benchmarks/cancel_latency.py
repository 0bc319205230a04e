"""Stop latency: how long a stop takes during prefill (one uninterruptible forward pass) and during decode.

Run: .venv/bin/python benchmarks/cancel_latency.py [--prompt-tokens 1500] [--repeats 3] [--model embedded]
     [--loops lean,generate]

generate() reads the prompt in one forward pass and checks stopping criteria only between passes, so
a stop during prefill lands when the pass ends and the first token is out. The lean loop checks for a
stop between the model's layers (core/generation/decode/decoder.py), so it lands within one layer's share
of the pass, with no token. During decode a stop is seen after the current token, so at most one
more token arrives.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import _common  # (offline mode)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from core.chats.session import ChatSession
from core.generation.local_reply import LocalReply
from core.settings import GenerationSettings
from core.timing.events import FinishedEvent, TokenEvent

FILLER = "The harbour was quiet that morning, and the boats rocked gently against the old stone pier. "


def prompt_ids(loaded, target_tokens: int) -> list[int]:
    session = ChatSession()
    text = "Summarise this story. "
    while True:
        session.messages.clear()
        session.add_user(text)
        ids = session.build_prompt(loaded.tokenizer, loaded.context_window, 8).input_ids
        if len(ids) >= target_tokens:
            return ids
        text += FILLER


def prefill_seconds(loaded, ids, loop: str) -> float:
    generation = LocalReply(loaded, ids, GenerationSettings(max_new_tokens=1, decode_loop=loop)).start()
    trace_start = generation.request_start_ns
    first = None
    for event in generation:
        if isinstance(event, TokenEvent) and first is None:
            first = event.timestamp_ns
    generation.join()
    return (first - trace_start) / 1e9


def stop_after(loaded, ids, delay_s: float, loop: str, max_new_tokens: int = 200) -> tuple[float, int, str]:
    """Stop delay_s after the start; return (stop request -> finish event, tokens after the stop, stop reason)."""
    generation = LocalReply(loaded, ids, GenerationSettings(max_new_tokens=max_new_tokens, decode_loop=loop)).start()
    stop_at: list[float] = []

    def request_stop():
        stop_at.append(time.perf_counter())
        generation.stop()

    timer = threading.Timer(delay_s, request_stop)
    timer.start()
    tokens_after = 0
    for event in generation:
        if isinstance(event, TokenEvent) and stop_at and event.timestamp_ns / 1e9 >= stop_at[0]:
            tokens_after += 1
        if isinstance(event, FinishedEvent):
            finished = time.perf_counter()
            reason = event.stop_reason.value
    generation.join()
    timer.join()
    return finished - stop_at[0], tokens_after, reason


def stop_at_token(loaded, ids, index: int, loop: str) -> tuple[float, int, str]:
    """Stop from the consumer when token `index` arrives, as the window's Stop does mid-reply."""
    generation = LocalReply(loaded, ids, GenerationSettings(max_new_tokens=200, decode_loop=loop)).start()
    stop_at, tokens_after = None, 0
    for event in generation:
        if isinstance(event, TokenEvent):
            if stop_at is not None:
                tokens_after += 1
            elif event.index == index:
                stop_at = time.perf_counter()
                generation.stop()
        elif isinstance(event, FinishedEvent):
            finished = time.perf_counter()
            reason = event.stop_reason.value
    generation.join()
    return finished - stop_at, tokens_after, reason


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--loops", default="lean,generate", help="decode loops to measure, one after the other")
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "cancel_latency")
    loaded = _common.load_as_the_app(args.model, dtype=args.dtype)
    ids = prompt_ids(loaded, args.prompt_tokens)
    print(
        f"model: {loaded.name} ({loaded.dtype}), prompt: {len(ids)} tokens, torch threads: "
        f"{__import__('torch').get_num_threads()}"
    )
    for loop in args.loops.split(","):
        measure_loop(loaded, ids, loop, args.repeats)


def measure_loop(loaded, ids, loop: str, repeats: int) -> None:
    prefill_seconds(loaded, ids[:64], loop)  # warm-up
    prefills = [prefill_seconds(loaded, ids, loop) for _ in range(repeats)]
    prefill = statistics.median(prefills)
    print()
    print(f"== {loop} loop")
    print(
        f"prefill (TTFT with 1 new token): median {prefill * 1000:.0f} ms over {repeats} runs "
        f"({', '.join(f'{p * 1000:.0f}' for p in prefills)} ms)"
    )
    print("stop during prefill, requested at a fraction of the measured prefill time:")
    print(
        f"  {'at':>6} {'cancel latency (stop -> finished)':>34} {'as share of prefill':>20} {'tokens after stop':>18}"
    )
    for fraction in (0.1, 0.5, 0.9):
        results = [stop_after(loaded, ids, fraction * prefill, loop) for _ in range(repeats)]
        latencies = [r[0] for r in results]
        median = statistics.median(latencies)
        print(
            f"  {fraction:6.0%} {median * 1000:24.0f} ms (max {max(latencies) * 1000:4.0f}) "
            f"{median / prefill:19.0%} {max(r[1] for r in results):18d}   reasons: "
            f"{sorted({r[2] for r in results})}"
        )
    decode = [stop_at_token(loaded, ids[:200], 10, loop) for _ in range(max(repeats, 5))]
    print(
        f"stop during decode (at token 10, prompt {min(200, len(ids))} tokens): stop -> finished "
        f"median "
        f"{statistics.median(r[0] for r in decode) * 1000:.0f} ms, max {max(r[0] for r in decode) * 1000:.0f} ms; "
        f"tokens after the stop: max {max(r[1] for r in decode)}; reasons: {sorted({r[2] for r in decode})}"
    )


if __name__ == "__main__":
    main()
