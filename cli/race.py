"""`latencylab race "PROMPT" --a KEY=VALUE... --b KEY=VALUE...`: two configurations answer one prompt, and a verdict.

The common options given before or after `race` apply to both sides; --a and --b change one side each, with the
options' own names as keys (`--a streaming=on --b streaming=off`). By default A runs, then B, each alone; --live
runs both at once. Ctrl+C stops the race, and what ran is still printed.
"""

from __future__ import annotations

import argparse
import threading
from dataclasses import replace
from pathlib import Path
from typing import cast

from cli.exit_paths import (
    INTERRUPTED_STATUS,
    JOIN_TIMEOUT_S,
    OUTPUT_FAILED_STATUS,
    OutputLost,
    hard_exit,
    say,
    say_cache_notices,
    silence_stdout,
    stdout_problem,
    write_out,
)
from cli.progress_printer import ProgressPrinter
from cli.prompt_arg import prompt_argument, text_argument
from cli.speculation_flags import draft_model_problem, speculation_problem
from core.backend.load_options import LoadOptions
from core.errors import InvalidSettingsError, LatencyLabError
from core.race.config import RaceConfig
from core.race.document import race_json
from core.race.runner import RaceObserver, RaceResult, run_race
from core.race.sides import KEYS, RaceSide, parse_side
from core.race.verdict import span
from core.settings import TPOT_BUDGET, TTFT_BUDGET, GenerationSettings, LatencyBudget

BAD_SETTINGS_STATUS = 2


def add_race_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser(
        "race",
        help="race two configurations on one prompt: A then B, each alone (or --live), and a verdict",
        description="The common options apply to both sides; --a and --b set one side's KEY=VALUE pairs. Keys: "
        f'{", ".join(KEYS)}; switches take on or off. Example: latencylab race "Why is the sky blue?" '
        "--a streaming=on --b streaming=off",
    )
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument("prompt", type=prompt_argument, help="the question both sides answer")
    parser.add_argument("--a", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="side A's settings")
    parser.add_argument("--b", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="side B's settings")
    parser.add_argument(
        "--live",
        action="store_true",
        help="run A and B at the same time (they share the CPU): for a local model against a server, or two servers",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the race as one JSON object: both full reports (as ask --json, with the "
        "waterfall) and the verdict; the file opens again in the window",
    )
    parser.add_argument("--system", default="", type=text_argument, help="system prompt, for both sides")
    parser.add_argument(
        "--history",
        metavar="CHAT.json",
        default=None,
        help="a chat exported from the window (File → Export chat): its turns come before the prompt "
        "on both sides, so the prompt cache has a history to reuse",
    )
    parser.add_argument(
        "--ttft-budget",
        type=float,
        default=TTFT_BUDGET.default,
        metavar="SECONDS",
        help=f"the wait before text appears that is within budget (default: {TTFT_BUDGET.default:g})",
    )
    parser.add_argument(
        "--tpot-budget",
        type=float,
        default=TPOT_BUDGET.default * 1000,
        metavar="MS",
        help="the TPOT within budget while streaming, in ms (default: "
        f"{TPOT_BUDGET.default * 1000:g}, a 250 wpm reader's pace)",
    )
    parser.set_defaults(handler=run_race_command)


def run_race_command(args: argparse.Namespace, settings: GenerationSettings) -> int:
    try:
        config = race_config(args, settings)
    except LatencyLabError as error:
        say(f"race: {error}")
        return BAD_SETTINGS_STATUS
    problem = stdout_problem()
    if problem:
        say(f"error: {problem}")
        return OUTPUT_FAILED_STATUS
    try:
        result, interrupted = _run(config, args)
    except LatencyLabError as error:  # run_race says a side's own failure in its result; this is the race's
        say(f"race: {error}")
        return 1
    try:
        write_out(race_json(result) + "\n" if args.json else verdict_text(result))
    except OutputLost as lost:
        silence_stdout()
        if lost.message:
            say(f"error: {lost.message}")
        return lost.status
    if interrupted:
        say("stopped (Ctrl+C): " + result.status_line)
        return INTERRUPTED_STATUS
    failed = [run for run in result.sides if run.error or run.trace is None]
    for run in failed:
        say(f"{run.side.name} {run.state}")
    return 1 if failed else 0


def race_config(args: argparse.Namespace, settings: GenerationSettings) -> RaceConfig:
    """Both sides over the common options; InvalidSettingsError (or a file's error) in one line."""
    given = tuple(name for name in getattr(args, "given", {}) if name in ("dtype", "device", "decode_loop"))
    base = RaceSide(
        "A",
        model=args.model or "embedded",
        dtype=args.dtype,
        device=args.device,
        settings=settings,
        server_timeout_s=getattr(args, "server_timeout", None),
        given=given,
    )
    a, b = parse_side("A", args.a, base), parse_side("B", args.b, base)
    for side in (a, b):  # before either side loads, as ask says it (a race ran B, then said A could not start)
        problem = speculation_problem(side.model, side.settings) or draft_model_problem(side.settings.draft_model)
        if problem:
            raise InvalidSettingsError(f"side {side.name}: {problem}")
    if not TPOT_BUDGET.low < args.tpot_budget / 1000 <= TPOT_BUDGET.high:
        raise InvalidSettingsError(
            f"--tpot-budget must be above 0 and at most {TPOT_BUDGET.high * 1000:,g} ms; got {args.tpot_budget:g}."
        )
    budget = LatencyBudget(args.ttft_budget, args.tpot_budget / 1000)
    system, history = args.system, cast(tuple[tuple[str, str], ...], ())
    if args.history:
        system_from_chat, history = read_history(args.history)
        system = system or system_from_chat
    return RaceConfig(args.prompt, a, b, live=args.live, system_prompt=system, history=history, budget=budget)


def read_history(path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(system prompt, turns) of an exported chat."""
    from core.bounded_read import NotReadable, read_named_file
    from core.chats.chat_schema import MAX_CHAT_FILE_BYTES
    from core.chats.record import decode_document

    try:
        record = decode_document(read_named_file(path, MAX_CHAT_FILE_BYTES))
    except NotReadable as refused:
        raise InvalidSettingsError(f"--history: cannot read {path}: {refused}") from None
    except LatencyLabError as error:
        raise InvalidSettingsError(f"--history: {Path(path).name} is not a chat: {error}") from None
    return record.system_prompt, tuple((message.role, message.content) for message in record.messages)


def _run(config: RaceConfig, args: argparse.Namespace) -> tuple[RaceResult, bool]:
    """The race on a worker thread, so Ctrl+C here stops it at once and what ran is still reported."""
    models: dict = {}
    printer = ProgressPrinter()

    def load(side: RaceSide):
        from core.backend.choice import load_any

        if side.load_key not in models:
            models[side.load_key] = load_any(
                side.model,
                device=side.device,
                dtype=side.dtype,
                progress=printer,
                options=replace(LoadOptions.from_args(args), server_timeout_s=side.server_timeout_s),
            )
            notice = models[side.load_key].notice
            if notice:
                say(notice)
            say_cache_notices()
        return models[side.load_key]

    cancel, ended = threading.Event(), threading.Event()
    outcome: dict = {}
    observer = RaceObserver(progress=lambda message: say(message))

    def race() -> None:
        try:
            outcome["result"] = run_race(config, load, cancel=cancel, observer=observer)
        except Exception as error:  # noqa: BLE001 - raised again on the caller's thread, with its handlers
            outcome["error"] = error
        finally:
            ended.set()

    # Waited for through an Event: a Ctrl+C inside Thread.join() can leave the thread reported as ended while it
    # still runs (CPython's join is not safe against KeyboardInterrupt before 3.13).
    threading.Thread(target=race, name="latencylab-race", daemon=True).start()
    interrupted = False
    while not ended.is_set():
        try:
            ended.wait(0.2)
        except KeyboardInterrupt:
            interrupted = True
            cancel.set()
            say("stopping the race (Ctrl+C); what ran is kept")
            if not ended.wait(JOIN_TIMEOUT_S):  # a reply stops at its next layer or token; a load cannot be cut short
                say("stopped (Ctrl+C) while loading a model, which cannot be interrupted")
                hard_exit(INTERRUPTED_STATUS)
    if "error" in outcome:  # the thread has ended, so leaving through Python's own exit is safe
        raise outcome["error"]
    return outcome["result"], interrupted


def verdict_text(result: RaceResult) -> str:
    """The race for a person: each side's numbers and budget, the verdict, and both replies."""
    lines = [f"Race ({result.config.mode}): {result.status_line}"]
    label_a, label_b = result.labels
    for run, label in zip(result.sides, (label_a, label_b)):
        lines.append(f"{run.side.name} ({label}): {_numbers(run, result)}")
        lines += [f"  {note}" for note in run.notes]
    verdict = result.verdict()
    if verdict is not None:
        lines.append(f"Verdict: {verdict.sentence}.")
    from core.timing.budget import budget_words, judge, tally_line

    budget = result.config.budget
    marks = [judge(run.trace, run.side.streaming, budget) for run in result.sides if run.trace]
    lines.append(f"Budget ({budget_words(budget)}): {tally_line(marks)}.")
    for run in result.sides:
        if run.trace is not None:
            lines.append(f"--- {run.side.name}'s reply ---")
            lines.append(run.trace.text)
    return "\n".join(lines) + "\n"


def _numbers(run, result: RaceResult) -> str:
    from core.timing.budget import judge
    from core.timing.reading import reader_wait_s, visible_steps

    if run.trace is None:
        return run.state
    trace = run.trace
    metrics = trace.metrics()
    parts = [
        f"TTFT {_maybe(metrics.ttft_s)}",
        f"TPOT {_maybe(metrics.tpot_s)}",
        f"E2E {_maybe(metrics.e2e_s)}",
        f"{trace.output_tokens} tokens",
    ]
    steps = visible_steps(trace, run.side.streaming)
    if steps:
        parts.append(f"text after {span(steps[0][0])}")
        wait = reader_wait_s(steps)
        if run.side.streaming:
            parts.append("the reader never waited" if not wait else f"the reader waited {span(wait)}")
    if trace.cached_tokens:
        parts.append(f"{trace.cached_tokens:,} of {trace.prompt_tokens:,} prompt tokens cached")
    state = "" if run.state == "finished" else f" [{run.state}]"
    return ", ".join(parts) + f"; {judge(trace, run.side.streaming, result.config.budget).line}{state}"


def _maybe(value: float | None) -> str:
    return "—" if value is None else span(value)
