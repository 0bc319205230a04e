"""Delay from a token's put() stamp to its arrival at a consumer on another thread, as p50 and p99.

Run: .venv/bin/python benchmarks/stamp_to_consumer.py [--tokens 200] [--model embedded]
"""

from __future__ import annotations

import argparse
import os
import time

import _common  # (offline mode)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from core.chats.session import ChatSession
from core.generation.local_reply import LocalReply
from core.settings import GenerationSettings
from core.timing.events import TokenEvent
from core.timing.metrics import percentile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--model", default=None)
    parser.add_argument("--dtype", default="float32")
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "stamp_to_consumer")
    loaded = _common.load_as_the_app(args.model, dtype=args.dtype)
    session = ChatSession()
    session.add_user("Write a long story about a lighthouse keeper.")
    ids = session.build_prompt(loaded.tokenizer, loaded.context_window, args.tokens).input_ids
    delays_us, gaps_s = [], []
    generation = LocalReply(loaded, ids, GenerationSettings(max_new_tokens=args.tokens)).start()
    previous = None
    for event in generation:
        arrived = time.perf_counter_ns()
        if isinstance(event, TokenEvent):
            delays_us.append((arrived - event.timestamp_ns) / 1000)
            if previous is not None:
                gaps_s.append((event.timestamp_ns - previous) / 1e9)
            previous = event.timestamp_ns
    generation.join()
    p50, p99 = percentile(delays_us, 50), percentile(delays_us, 99)
    tpot_us = percentile(gaps_s, 50) * 1e6
    print(f"tokens: {len(delays_us)}  model: {loaded.name} ({loaded.dtype})")
    print(f"put() stamp -> consumer thread delay: p50 {p50:.0f} us, p99 {p99:.0f} us, max {max(delays_us):.0f} us")
    print(
        f"as a share of the median inter-token gap ({tpot_us / 1000:.1f} ms): "
        f"p50 {p50 / tpot_us:.2%}, p99 {p99 / tpot_us:.2%}"
    )


if __name__ == "__main__":
    main()
