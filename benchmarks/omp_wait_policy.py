"""OpenMP's wait policy on a 2-core machine, quiet and with one other busy program: which one should the engine use?

The kernels and torch both run OpenMP teams whose threads meet at a barrier many times a token. Whether a
waiting thread spins (ACTIVE), sleeps at once (PASSIVE) or spins a while then sleeps (libgomp's default, no
variable set) decides what another program's load costs. Each measurement is a fresh `latencylab ask --json`
process (an ACTIVE team spins even while idle, so no process is kept between runs), native precision, greedy,
the same question, interleaved policy by policy within each round.

Prints the median TPOT and TTFT per policy, quiet and loaded, and the CPU flags. "CPU got" is the engine threads'
CPU time over wall time per thread asked for (core/timing/cpu_share.py): what the threads really ran.

Run: .venv/bin/python benchmarks/omp_wait_policy.py [--rounds 3] [--tokens 64] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import _common

ROOT = Path(__file__).resolve().parents[1]
# How a waiting OpenMP thread waits: libgomp's default spins GOMP_SPINCOUNT (300,000) turns, then sleeps.
POLICIES = {
    "default": {},
    "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
    "spin 10k": {"GOMP_SPINCOUNT": "10000"},
    "spin 1k": {"GOMP_SPINCOUNT": "1000"},
}
QUESTION = "Write a long story about a cat who learns to sail across the sea."


def ask(policy: str, threads: int, tokens: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    env.update(POLICIES[policy])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "ask",
            QUESTION,
            "--json",
            "--temperature",
            "0",
            "--max-new-tokens",
            str(tokens),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{policy}: latencylab ask failed: {result.stderr.strip()[-300:]}")
    return json.loads(result.stdout)


def busy() -> subprocess.Popen:
    """One other program keeping one core busy, as a compile or a browser tab would."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    _common.add_json_option(parser)
    args = parser.parse_args()
    report = _common.start_report(args, "omp_wait_policy")
    print(
        f"latencylab ask, native, {args.tokens} greedy tokens, {args.threads} threads, {args.rounds} rounds, "
        f"policies interleaved in each round"
    )
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(args.rounds):
        for load in ("quiet", "one busy program"):
            other = busy() if load != "quiet" else None
            try:
                for policy in POLICIES:
                    runs.setdefault((load, policy), []).append(ask(policy, args.threads, args.tokens))
            finally:
                if other is not None:
                    other.kill()
                    other.wait()
    print(f"\n{'load':<17} {'policy':<9} {'TPOT ms':>8} {'TTFT ms':>8} {'tokens':>6} {'CPU got':>8}")
    for (load, policy), done in runs.items():
        tpot = _common.median([run["tpot_s"] for run in done]) * 1000
        ttft = _common.median([run["ttft_s"] for run in done]) * 1000
        share = [run.get("cpu", {}).get("cpu_share") for run in done]
        got = (
            _common.median([value for value in share if value is not None])
            if any(s is not None for s in share)
            else float("nan")
        )
        print(f"{load:<17} {policy:<9} {tpot:>8.1f} {ttft:>8.1f} {done[0]['output_tokens']:>6} {got:>8.2f}")
        report.figure(f"tpot_ms_{load.replace(' ', '_')}_{policy.lower().replace(' ', '_')}", tpot)
    for load in ("quiet", "one busy program"):
        best = min(POLICIES, key=lambda p: _common.median([run["tpot_s"] for run in runs[(load, p)]]))
        print(f"{load}: fastest TPOT with {best}")


if __name__ == "__main__":
    main()
