"""Parse the command line and dispatch: `ask`, `chat`, `bench`, `race`, `doctor`, `proxy`, or the chat window when no subcommand is given."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import NoReturn

from cli.remote_flags import apply_remote_flags
from cli.risky_options import add_risky_options, warn_about_risky_options
from cli.speculation_flags import draft_model_problem, speculation_problem
from core import startup_gc
from core.errors import InvalidSettingsError
from core.remote.spec import PROTOCOLS
from core.settings import (
    DECODE_LOOP,
    DEVICE,
    DRAFT_TOKENS,
    DTYPE,
    MAX_NEW_TOKENS,
    MIN_SAMPLING_TEMPERATURE,
    SEED,
    SERVER_TIMEOUT,
    SPECULATION,
    TEMPERATURE,
    TOP_P,
    GenerationSettings,
)


def add_common_options(parser: argparse.ArgumentParser, suppress_defaults: bool = False) -> None:
    """Model and sampling options, accepted before or after the subcommand, with core/settings.py's limits.

    Every option defaults to None (or SUPPRESS on a subcommand's copy, so it never overwrites a value
    given before it): main() can then tell a flag the user gave from a default, and the window lets the
    flags given on its command line win over its saved settings.
    """

    def default(value):
        return argparse.SUPPRESS if suppress_defaults else value

    parser.add_argument(
        "--model",
        default=default(None),
        help="'embedded' (default: SmolLM2-135M-Instruct), a .gguf file, a model folder, a hub id, "
        "or a server's URL (http://127.0.0.1:8080/v1); a server's API key is read from "
        "LATENCYLAB_API_KEY",
    )
    parser.add_argument(
        "--served-model",
        default=default(None),
        metavar="NAME",
        help="with a server URL: which of its models to use (default: the first it lists)",
    )
    parser.add_argument(
        "--protocol",
        default=default(None),
        choices=PROTOCOLS,
        help="with a server URL: openai (chat completions over SSE), ollama (its native /api/chat), "
        "or auto: detect (default)",
    )
    parser.add_argument(
        "--server-timeout",
        type=float,
        default=default(None),
        metavar="SECONDS",
        help=f"with a server URL: give up when it sends nothing for this long; {_range(SERVER_TIMEOUT)} "
        f"(default: {SERVER_TIMEOUT.default:g})",
    )
    parser.add_argument(
        "--dtype", default=default(None), choices=DTYPE.choices, help=f"weight precision (default: {DTYPE.default})"
    )
    parser.add_argument("--device", default=default(None), choices=DEVICE.choices, help=f"default: {DEVICE.default}")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=default(None),
        help=f"{_range(MAX_NEW_TOKENS)} (default: {MAX_NEW_TOKENS.default})",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=default(None),
        help=f"0 (greedy decoding) or {MIN_SAMPLING_TEMPERATURE:g} to {TEMPERATURE.high:g} "
        f"(default: {TEMPERATURE.default:g})",
    )
    parser.add_argument(
        "--top-p",
        type=float,
        default=default(None),
        help=f"above {TOP_P.low:g}, at most {TOP_P.high:g} (default: {TOP_P.default:g})",
    )
    parser.add_argument(
        "--seed", type=int, default=default(None), help=f"{_range(SEED)} (default: a random seed for each reply)"
    )
    parser.add_argument(
        "--decode-loop",
        default=default(None),
        choices=DECODE_LOOP.choices,
        help="lean: our own decode loop for Llama, Qwen, Mistral, Phi-3 and Gemma models "
        "(others fall back); "
        f"generate: transformers' model.generate (default: {DECODE_LOOP.default})",
    )
    parser.add_argument(
        "--no-prompt-cache",
        dest="prompt_cache",
        action="store_const",
        const=False,
        default=default(None),
        help="prefill the whole chat at every turn instead of reusing the cached history "
        "(default: the prompt cache is on)",
    )
    parser.add_argument(
        "--speculate",
        dest="speculation",
        default=default(None),
        choices=SPECULATION.choices,
        help="speculative decoding: ngram drafts from the prompt and the reply so far (prompt lookup), draft from "
        "--draft-model; the model checks a step's drafts in one pass, on the C kernels; a greedy reply is the same "
        "(default: off)",
    )
    parser.add_argument(
        "--draft-model",
        default=default(None),
        metavar="FILE.gguf",
        help="a smaller GGUF of the same vocabulary that drafts for the model (implies --speculate draft)",
    )
    parser.add_argument(
        "--draft-tokens",
        type=int,
        default=default(None),
        help=f"with --speculate: at most this many drafts a step, {_range(DRAFT_TOKENS)} "
        f"(default: {DRAFT_TOKENS.default:g})",
    )
    add_risky_options(parser, default)


def _range(limit) -> str:
    return f"{limit.low:,g} to {limit.high:,g}" if not limit.whole else f"{int(limit.low):,} to {int(limit.high):,}"


SETTING_FLAGS = (
    "max_new_tokens",
    "temperature",
    "top_p",
    "seed",
    "decode_loop",
    "prompt_cache",
    "speculation",
    "draft_tokens",
    "draft_model",
)
LOAD_FLAGS = {"dtype": DTYPE.default, "device": DEVICE.default}
# The commands that load a model through load_any, which ends the start (core/startup_gc.py) once it has.
LOADING_COMMANDS = ("ask", "chat", "bench", "race")


def given_flags(args: argparse.Namespace) -> dict:
    """The model and sampling options the user typed, by name; the ones left out are absent."""
    names = (*SETTING_FLAGS, *LOAD_FLAGS, "model")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latencylab",
        description="A chat client for local language models with a live latency meter. "
        "With no command it opens the chat window.",
    )
    add_common_options(parser)
    parser.add_argument(
        "--profile-ui",
        metavar="FILE",
        default=None,
        help="write the window's launch time, event-loop stalls and token-to-paint delays to FILE",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    from cli.ask import add_ask_parser
    from cli.bench import add_bench_parser
    from cli.chat import add_chat_parser
    from cli.doctor import add_doctor_parser
    from cli.proxy import add_proxy_parser
    from cli.race import add_race_parser

    add_ask_parser(subparsers, add_common_options)
    add_chat_parser(subparsers, add_common_options)
    add_bench_parser(subparsers, add_common_options)
    add_race_parser(subparsers, add_common_options)
    add_doctor_parser(subparsers, add_common_options)
    add_proxy_parser(subparsers, add_common_options)
    return parser


def refuse(parser: argparse.ArgumentParser, erring: argparse.ArgumentParser, problem: str) -> NoReturn:
    """Exit 2 with the command's own usage (`ask`'s options, not the program's), then "latencylab: error: ..." as
    every refusal reads."""
    erring.print_usage(sys.stderr)
    parser.exit(2, f"{parser.prog}: error: {problem}\n")


def command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The command's own parser (the program's, without a command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def utf8_output() -> None:
    """stdout and stderr in UTF-8 whatever the locale: with LANG=C a reply in any other script failed with "'ascii'
    codec can't encode". A character the stream cannot take is replaced, never an error."""
    for stream in (sys.stdout, sys.stderr):
        # Not a text stream (a test's capture), or already closed.
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(encoding="utf-8", errors="replace")  # type: ignore[union-attr]


def run() -> int:
    """The program's entry point (`latencylab`, `python -m cli.main`): main() with the cycle collector held while it
    starts (core/startup_gc.py). Tests call main() in their own process, whose collector is theirs."""
    startup_gc.hold()
    return main()


def main(argv: list[str] | None = None) -> int:
    if sys.stderr is None:  # fd 2 closed (`2>&-`): progress and notes go nowhere, the reply still to stdout
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's life
    utf8_output()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl+C outside a reply (while importing, say): no traceback; a load may still be running, so os._exit.
        from cli.exit_paths import INTERRUPTED_STATUS, end_generation

        return end_generation(None, INTERRUPTED_STATUS, "stopped (Ctrl+C)")


def profile_problem(path: str | None) -> str | None:
    """--profile-ui's file checked at launch: it was written only later, with a traceback at each write."""
    from cli.output_path import output_problem

    problem = output_problem(path) if path else None
    return f"--profile-ui {path}: {problem}" if problem else None


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    erring = command_parser(parser, args.command)
    given = given_flags(args)
    if given.get("draft_model") and "speculation" not in given:
        args.speculation = given["speculation"] = "draft"  # a draft model given is speculation asked for
    try:
        settings = GenerationSettings(**{name: given[name] for name in SETTING_FLAGS if name in given})
    except InvalidSettingsError as error:
        refuse(parser, erring, str(error))
    problem = (
        apply_remote_flags(args)
        or speculation_problem(args.model, settings)
        or draft_model_problem(settings.draft_model)
        or profile_problem(getattr(args, "profile_ui", None))
    )
    if problem:
        refuse(parser, erring, problem)
    given = given_flags(args)
    args.given = given
    for name, fallback in LOAD_FLAGS.items():
        setattr(args, name, given.get(name, fallback))
    warn_about_risky_options(args, sys.stderr)
    if args.command is None:
        from gui.launch import launch_window

        return launch_window(args, settings)
    from core.model.offline import use_offline_mode_for

    use_offline_mode_for(args.model)
    if args.command not in LOADING_COMMANDS:
        startup_gc.started()  # nothing more to import that lives for ever; the others start once their model loads
    return args.handler(args, settings)


if __name__ == "__main__":
    sys.exit(run())
