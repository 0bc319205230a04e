"""Speculative decoding with prompt lookup (or a draft model): TPOT with it against without, and against llama-server's
own (ngram-simple, or -md with the same draft model).

Targets (issue #39): on a copying prompt, TPOT with prompt lookup <= 0.7x without it; against llama-server with
`--spec-type ngram-simple` on the same file and prompts, through Latency Lab's own client, our TPOT <= 1.0x its TPOT
and our acceptance rate at least its own (draft_n_accepted / draft_n). Greedy, interleaved round by round, median of
the rounds, with the CPU's flags. The replies with and without speculation are compared token for token too.
With --draft-model FILE.gguf the drafts come from that model (the same vocabulary), step by step, and llama-server
runs `-md FILE --spec-draft-n-max k` on the same pair.
Run: .venv/bin/python benchmarks/speculative.py [--rounds 3] [--tokens 128] [--model FILE.gguf] [--no-server]
     [--draft-model FILE.gguf] [--kernels avx2]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import _common  # (sets offline mode)
from _common import median

PARAGRAPH = (
    "The lighthouse keeper climbed the narrow stairs every evening at dusk, carrying a small lamp and a notebook in "
    "which he wrote the weather, the ships he saw, and the names of the birds that rested on the rail."
)
MISSPELT = (
    "The lighthouse keeper climbd the narow stairs evry evening at dusk, carying a smal lamp and a notebok in "
    "wich he wrote the wether, the ships he saw, and the names of the brids that rested on the rail."
)
PROMPTS = {
    "copy": f"Repeat this text exactly, word for word: {PARAGRAPH}",
    "spelling": f"Fix the spelling in this paragraph and give it back: {MISSPELT}",
    # Free writing: few of its n-grams recur, so what matters is what the wrong guesses cost.
    "free": "Write a short story about a lighthouse keeper and the birds that rest on his rail.",
}
COPY_TARGET = 0.7
SERVER_TARGET = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft-tokens", type=int, default=8, help="at most this many a pass (the app's default)")
    parser.add_argument("--model", default=None, help="a GGUF file (default: the embedded model)")
    parser.add_argument("--no-server", action="store_true", help="leave llama-server out")
    parser.add_argument("--draft-model", default=None, help="draft with this GGUF instead of prompt lookup")
    _common.add_json_option(parser)
    _common.add_kernels_option(parser)
    args = parser.parse_args()
    _common.use_kernels(args.kernels)
    report = _common.start_report(args, "speculative")
    import torch

    from core.backend.choice import load_any
    from core.chats.session import Message
    from core.compute_thread import on_compute_thread
    from core.generation.request import ReplyRequest
    from core.model.source import embedded_gguf_path
    from core.settings import GenerationSettings
    from core.timing.metrics import compute_metrics

    on_compute_thread(lambda: torch.set_num_threads(args.threads))
    gguf = args.model or str(embedded_gguf_path())
    local = load_any(args.model, dtype="native")  # on the C kernels, where drafts are verified
    print(f"{local.describe().model}: {local.describe().runtime}; {args.threads} threads; greedy, {args.tokens} tokens")
    print(f"drafts: {args.draft_model or 'prompt lookup'}, up to {args.draft_tokens} a step")
    plain = GenerationSettings(max_new_tokens=args.tokens)
    method = "draft" if args.draft_model else "ngram"
    spec = replace(plain, speculation=method, draft_tokens=args.draft_tokens, draft_model=args.draft_model)
    sides = {"off": plain, "ngram": spec}  # "ngram": the speculating side, whichever drafts it
    servers = {}
    if not args.no_server:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/, which the tests share (not the package)
        from tools.llama_cpp_server import LlamaCppServer

        theirs = (
            ("-md", args.draft_model, "--spec-draft-n-max", str(args.draft_tokens))
            if args.draft_model
            else ("--spec-type", "ngram-simple")
        )
        for name, extra in (("server off", ()), ("server ngram", theirs)):
            server = LlamaCppServer(gguf, threads=args.threads, extra_args=extra)
            server.wait_ready()
            servers[name] = (server, load_any(server.url))

    def ask(model, settings, prompt: str):
        request = ReplyRequest("", (Message("user", prompt),), settings)
        reply, _ = model.prepare(request, streaming=True)
        trace = reply.run_to_end()
        metrics = compute_metrics(trace.request_start_ns, trace.timestamps_ns, trace.prompt_tokens)
        return trace, metrics.tpot_s

    engines = {name: (local, settings) for name, settings in sides.items()}
    engines.update({name: (model, plain) for name, (_, model) in servers.items()})
    tpots = {(engine, prompt): [] for engine in engines for prompt in PROMPTS}
    last = {}
    try:
        for model, settings in engines.values():
            ask(model, replace(settings, max_new_tokens=8), PROMPTS["copy"])  # warm-up
        load_start = os.getloadavg()[0]
        for _ in range(args.rounds):
            for prompt_name, prompt in PROMPTS.items():
                for engine, (model, settings) in engines.items():
                    trace, tpot = ask(model, settings, prompt)
                    tpots[(engine, prompt_name)].append(tpot)
                    last[(engine, prompt_name)] = trace
    finally:
        for server, _ in servers.values():
            server.stop()
    print(f"load average {load_start:.2f} before the rounds, {os.getloadavg()[0]:.2f} after")
    for prompt_name in PROMPTS:
        off, ngram = last[("off", prompt_name)], last[("ngram", prompt_name)]
        same = off.token_ids == ngram.token_ids
        spec = ngram.speculation
        acceptance = spec.acceptance if spec else None
        ratio = median(tpots[("ngram", prompt_name)]) / median(tpots[("off", prompt_name)])
        line = (
            f"{prompt_name:>8}: {ngram.output_tokens} tokens; TPOT off {median(tpots[('off', prompt_name)]) * 1e3:.2f} ms, "
            f"{method} {median(tpots[('ngram', prompt_name)]) * 1e3:.2f} ms = {ratio:.2f}x"
            + (
                f" (target <= {COPY_TARGET}: {'met' if ratio <= COPY_TARGET else 'NOT met'})"
                if prompt_name == "copy"
                else ""
            )
            + f"; accepted {spec.accepted}/{spec.drafted} drafts ({(acceptance or 0):.0%}) in {spec.passes} passes; "
            f"same reply as without: {same}"
        )
        print(line)
        report.figure(
            f"{prompt_name}_tpot_ratio",
            ratio,
            f"<= {COPY_TARGET}" if prompt_name == "copy" else None,
            ratio <= COPY_TARGET if prompt_name == "copy" else None,
        )
        report.figure(f"{prompt_name}_acceptance", acceptance)
        if servers:
            theirs = last[("server ngram", prompt_name)]
            timings = (theirs.server.timings if theirs.server else None) or {}
            drafted, accepted = timings.get("draft_n"), timings.get("draft_n_accepted")
            their_acceptance = accepted / drafted if drafted else None
            versus = median(tpots[("ngram", prompt_name)]) / median(tpots[("server ngram", prompt_name)])
            print(
                f"{'':>10}llama-server: TPOT off {median(tpots[('server off', prompt_name)]) * 1e3:.2f} ms, "
                f"{'-md' if args.draft_model else 'ngram-simple'} {median(tpots[('server ngram', prompt_name)]) * 1e3:.2f} ms; "
                f"ours/theirs with "
                f"speculation {versus:.2f}x (target <= {SERVER_TARGET}: {'met' if versus <= SERVER_TARGET else 'NOT met'}); "
                f"its acceptance {accepted}/{drafted}"
                + (
                    f" ({their_acceptance:.0%}); ours at least its own: {(acceptance or 0) >= their_acceptance}"
                    if their_acceptance is not None
                    else " (not reported)"
                )
            )


if __name__ == "__main__":
    main()
