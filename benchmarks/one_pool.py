"""Why every load and reply runs on one compute thread: decode with one OpenMP pool against two.

A second thread that has run any parallel torch op keeps a pool of its own until it ends. With more
pool threads than cores, libgomp stops spinning between parallel regions, and decode (many short
regions) slows down even though the second pool is idle. Each round measures bare-generate TPOT on
the compute thread alone, then while a second thread with its own pool is alive, side by side.
Run: .venv/bin/python benchmarks/one_pool.py [--dtype int4] [--rounds 5] [--tokens 48]
"""

from __future__ import annotations

import argparse
import threading

import _common  # (sets the import path and offline mode)
from _common import bare_tpot, median


class SecondPool:
    """A thread that runs one parallel torch op, so it owns a pool, and then waits until released."""

    def __init__(self):
        self._ready, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold, name="second-pool", daemon=True)

    def __enter__(self):
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc):
        self._release.set()
        self._thread.join()

    def _hold(self) -> None:
        import torch

        torch.ones(4_000_000).sum()  # large enough that torch splits it across its threads
        self._ready.set()
        self._release.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int4")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=48)
    _common.add_json_option(parser)
    args = parser.parse_args()
    _common.start_report(args, "one_pool")
    import torch

    loaded = _common.load_as_the_app(None, dtype=args.dtype)  # on the compute thread, like every bare_tpot below
    prompt = torch.tensor([loaded.tokenizer("Hello! Please tell me about the sea.")["input_ids"]])
    bare_tpot(loaded.model, prompt, 4)
    one, two, after = [], [], []
    for _ in range(args.rounds):
        one.append(bare_tpot(loaded.model, prompt, args.tokens))
        with SecondPool():
            two.append(bare_tpot(loaded.model, prompt, args.tokens))
        after.append(bare_tpot(loaded.model, prompt, args.tokens))
    print(
        f"model {loaded.name} ({args.dtype}), {torch.get_num_threads()} torch threads; "
        f"{args.rounds} interleaved rounds of {args.tokens} tokens"
    )
    for label, values in (("one pool", one), ("a second pool alive", two), ("second pool ended", after)):
        print(
            f"{label:<22} TPOT median {median(values) * 1000:6.1f} ms  ("
            + ", ".join(f"{v * 1000:.1f}" for v in values)
            + ")"
        )
    print(
        f"a second pool makes decode {median(two) / median(one):.2f}x slower; the app keeps one "
        f"(core/compute_thread.py)"
    )


if __name__ == "__main__":
    main()
