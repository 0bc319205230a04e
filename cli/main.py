"""Parse the command line and dispatch: `ask`, `bench`, or the chat window when no subcommand is given."""

from __future__ import annotations

import argparse
import sys

from core.errors import InvalidSettingsError
from core.settings import DECODE_LOOP_CHOICES, DEVICE_CHOICES, DTYPE_CHOICES, GenerationSettings
from cli.risky_options import add_risky_options, warn_about_risky_options


def add_common_options(parser: argparse.ArgumentParser, suppress_defaults: bool = False) -> None:
    """Model and sampling options, accepted before or after the subcommand.

    The subcommand's copies default to SUPPRESS so they never overwrite a value given before it.
    """
    def default(value):
        return argparse.SUPPRESS if suppress_defaults else value

    parser.add_argument("--model", default=default(None),
                        help="'embedded' (default: SmolLM2-135M-Instruct), a .gguf file, a model folder or a hub id")
    parser.add_argument("--dtype", default=default("float32"), choices=DTYPE_CHOICES, help="weight precision")
    parser.add_argument("--device", default=default("cpu"), choices=DEVICE_CHOICES)
    parser.add_argument("--max-new-tokens", type=int, default=default(256))
    parser.add_argument("--temperature", type=float, default=default(0.0), help="0 means greedy decoding")
    parser.add_argument("--top-p", type=float, default=default(1.0))
    parser.add_argument("--seed", type=int, default=default(None))
    parser.add_argument("--decode-loop", default=default("lean"), choices=DECODE_LOOP_CHOICES,
                        help="lean: our own decode loop for Llama-family models (others fall back to generate); "
                             "generate: transformers' model.generate")
    add_risky_options(parser, default)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latencylab",
        description="A chat client for local language models with a live latency meter. "
                    "With no command it opens the chat window.",
    )
    add_common_options(parser)
    parser.add_argument("--profile-ui", metavar="FILE", default=None,
                        help="write the window's launch time, event-loop stalls and token-to-paint delays to FILE")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    from cli.ask import add_ask_parser
    from cli.bench import add_bench_parser

    add_ask_parser(subparsers, add_common_options)
    add_bench_parser(subparsers, add_common_options)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl+C outside a reply (while importing, say): no traceback; a load may still be running, so os._exit.
        from cli.exit_paths import INTERRUPTED_STATUS, end_generation

        return end_generation(None, INTERRUPTED_STATUS, "stopped (Ctrl+C)")


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = GenerationSettings(
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed,
            decode_loop=args.decode_loop,
        )
    except InvalidSettingsError as error:
        parser.error(str(error))
    warn_about_risky_options(args, sys.stderr)
    if args.command is None:
        from gui.launch import launch_window

        return launch_window(args, settings)
    from core.model.offline import use_offline_mode_for

    use_offline_mode_for(args.model)
    return args.handler(args, settings)


if __name__ == "__main__":
    sys.exit(main())
