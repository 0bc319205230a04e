"""`latencylab ask`: one question, the reply streamed to stdout, and optionally the metrics as JSON."""

from __future__ import annotations

import argparse
import sys

from cli.exit_paths import (
    INTERRUPTED_STATUS,
    OUTPUT_FAILED_STATUS,
    OutputLost,
    end_generation,
    say,
    say_cache_notices,
    silence_stdout,
    stdout_problem,
    stop_on_interrupt,
    write_out,
)
from cli.progress_printer import PrefillLine, ProgressPrinter
from cli.prompt_arg import prompt_argument, text_argument
from core.backend.load_options import LoadOptions
from core.chats.session import Message
from core.errors import LatencyLabError
from core.generation.reply import Reply
from core.generation.request import ReplyRequest
from core.model.facts import ModelFacts
from core.settings import GenerationSettings
from core.timing.events import FinishedEvent, PrefillProgress, TokenEvent
from core.timing.export import json_text, reply_report
from core.timing.trace import ReplyTrace


def add_ask_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser("ask", help="ask one question and print the reply")
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument("prompt", type=prompt_argument, help="the question to ask")
    parser.add_argument("--system", default="", type=text_argument, help="system prompt")
    parser.add_argument("--no-stream", action="store_true", help="print the reply only once it is complete")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the reply and its latencies")
    parser.set_defaults(handler=run_ask)


def run_ask(args: argparse.Namespace, settings: GenerationSettings) -> int:
    """Every way out stops the reply and waits for the compute thread first (cli/exit_paths.py)."""
    # Here, not at the top: every command (the window's too) builds the parser that imports this module, and the
    # backends' imports (HTTP clients among them) are a third of a second.
    from core.backend.choice import load_any

    problem = stdout_problem()
    if problem:
        say(f"error: {problem}")
        return OUTPUT_FAILED_STATUS
    generation: Reply | None = None
    try:
        try:
            loaded = load_any(
                args.model,
                device=args.device,
                dtype=args.dtype,
                progress=ProgressPrinter(),
                options=LoadOptions.from_args(args),
            )
            generation, prompt = loaded.prepare(
                ReplyRequest(args.system, (Message("user", args.prompt),), settings),
                streaming=not args.no_stream,
            )
        except LatencyLabError as error:
            say(f"error: {error}")
            return 1
        if prompt.notice:
            say(prompt.notice)
        if loaded.notice:
            say(loaded.notice)
        if generation.decode_loop_note:
            say(f"decoding on the {generation.decode_loop} loop: {generation.decode_loop_note}")
        say_cache_notices()
        status, _ = stream_reply(args, settings, loaded, generation)
        if status == INTERRUPTED_STATUS:
            say("stopped (Ctrl+C)")
        return status
    except KeyboardInterrupt:
        return end_generation(generation, INTERRUPTED_STATUS, "stopped (Ctrl+C)")
    except OutputLost as lost:
        silence_stdout()
        return end_generation(generation, lost.status, lost.message and f"error: {lost.message}")


def stream_reply(
    args: argparse.Namespace, settings: GenerationSettings, loaded, generation: Reply, extra: dict | None = None
) -> tuple[int, ReplyTrace]:
    """Print one reply as it streams (or whole, or as one JSON object with `extra` in it); (exit status, trace).
    Ctrl+C stops the reply and prints what it made: the status is then INTERRUPTED_STATUS."""
    prefill_line = PrefillLine(sys.stderr)
    stream_to_stdout = not args.no_stream and not args.json

    def show(event) -> None:
        if isinstance(event, PrefillProgress):
            prefill_line(event)
            return
        if isinstance(event, (TokenEvent, FinishedEvent)):
            prefill_line.end()
        if stream_to_stdout and isinstance(event, TokenEvent) and event.text:
            write_out(event.text)

    with stop_on_interrupt(generation) as stopped_by_user:
        # Started inside: a Ctrl+C while start() returns (its request already sent) stops the reply and prints it
        # as one mid-stream does (the JSON was missing now and then, under load)
        generation.start()
        for event in generation:  # after a Ctrl+C: the tokens made before the stop took hold, and the finish
            show(event)
    interrupted = stopped_by_user.is_set()
    prefill_line.end()
    generation.join()
    trace = generation.trace
    assert trace is not None  # started above
    facts = loaded.describe()
    from core.diagnosis.diagnose import diagnose_reply  # as load_any in run_ask

    trace.diagnosis = diagnose_reply(trace, facts)
    if args.json:
        report = {**(extra or {}), **reply_report(facts.to_dict(), trace, settings)}
        report["decode_loop"] = generation.decode_loop
        report["roofline"] = _roofline(facts, trace)
        write_out(json_text(report, ensure_ascii=False) + "\n")  # NaN or infinity: null, and "null_because" says so
        say_cache_notices()  # the ceilings the roofline read
    elif interrupted and not trace.text:
        pass  # stopped before its first token: no empty line
    elif stream_to_stdout:
        write_out(trace.tail_text + "\n")
    else:
        write_out(trace.text + "\n")
    if interrupted:
        return INTERRUPTED_STATUS, trace
    if trace.error:
        say(f"generation failed: {trace.error}")
        return 1, trace
    return 0, trace


def _roofline(facts: ModelFacts, trace: ReplyTrace) -> dict | None:
    """The reply's two phases against this machine's ceilings; None for a server's reply (its shape and machine
    are not ours to count)."""
    if not facts.arithmetic:
        return None
    from core.roofline.ceilings import cached_ceilings
    from core.roofline.placement import reply_placement

    return reply_placement(trace, facts.arithmetic, cached_ceilings())
