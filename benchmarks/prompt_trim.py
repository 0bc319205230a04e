"""Time to trim a long chat's prompt to the context window, 100 vs 600 turns of ~2 kB: linear means ≤ 7×.

Each build starts from an empty token-count cache (the first prompt of a reopened chat), and a second
build of the same chat shows the cached case (the next turn of an open chat).
Run: .venv/bin/python benchmarks/prompt_trim.py [--short 100] [--long 600] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import time

from _common import cpu_description

from core.chats import prompt_ids
from core.chats.session import ChatSession
from core.model.loader import load_model

TARGET_RATIO = 7.0
VOCABULARY = (
    "the",
    "dragon",
    "slept",
    "under",
    "a",
    "mountain",
    "of",
    "gold",
    "while",
    "villagers",
    "argued",
    "about",
    "whose",
    "turn",
    "it",
    "was",
    "to",
    "bring",
    "bread",
    "and",
    "cheese",
    "tonight",
    "quietly",
    "river",
    "lantern",
    "winter",
    "stone",
    "bridge",
    "merchant",
    "songs",
    "smoke",
    "ember",
    "wing",
)


def long_chat(turns: int) -> ChatSession:
    session = ChatSession(system_prompt="Be brief.")
    for turn in range(turns):
        # About 2 kB of distinct prose per message, with the same token density however long the chat is.
        pick = random.Random(turn).choice
        words = " ".join(pick(VOCABULARY) for _ in range(400))
        session.add_user(f"Question: {words}"[:2048])
        session.add_assistant(f"Answer: {words[::-1]}"[:2048])
    session.add_user("And the last question?")
    return session


def build_seconds(tokenizer, session: ChatSession, cold: bool) -> tuple[float, int]:
    if cold:
        prompt_ids.content_token_counts = prompt_ids.ContentTokenCounts()
        import core.chats.session as session_module

        session_module.content_token_counts = prompt_ids.content_token_counts
    started = time.perf_counter()
    build = session.build_prompt(tokenizer, 8192, 256)
    return time.perf_counter() - started, build.dropped_messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=100)
    parser.add_argument("--long", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tokenizer = load_model(None).tokenizer
    print(cpu_description())
    results = {}
    for turns in (args.short, args.long):
        session = long_chat(turns)
        cold = sorted(build_seconds(tokenizer, session, cold=True) for _ in range(args.repeats))
        warm = sorted(build_seconds(tokenizer, session, cold=False) for _ in range(args.repeats))
        results[turns] = cold[len(cold) // 2][0]
        print(
            f"{turns:4d} turns: trim {cold[len(cold) // 2][0] * 1000:8.1f} ms from an empty cache, "
            f"{warm[len(warm) // 2][0] * 1000:7.1f} ms cached; {cold[0][1]} of {2 * turns + 1} messages left out"
        )
    ratio = results[args.long] / results[args.short]
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(
        f"{args.long} vs {args.short} turns: {ratio:.2f}x the time (target <= {TARGET_RATIO:g}x, "
        f"linear = {args.long / args.short:g}x): {verdict}"
    )


if __name__ == "__main__":
    main()
