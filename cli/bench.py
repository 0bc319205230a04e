"""`latencylab bench`: test the prefill-and-decode chapter's claims on this machine, headless."""

from __future__ import annotations

import argparse
import sys
import threading

from cli.output_path import output_problem
from cli.progress_printer import ProgressPrinter
from core.errors import InvalidSettingsError
from core.lab.config import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_HISTORY_TURNS,
    DEFAULT_NEW_TOKENS,
    DEFAULT_PROMPT_WORDS,
    DEFAULT_REPEATS,
    DEFAULT_SWEEPS,
    SWEEPS,
    LabConfig,
    default_dtypes,
    parse_int_list,
    parse_name_list,
)
from core.settings import GenerationSettings
from core.terminal_text import for_stream

EXIT_INTERRUPTED = 130  # the shell's convention for a command ended by Ctrl+C


def _list_type(parse, what: str):
    def convert(text: str):
        try:
            return parse(text, what)
        except InvalidSettingsError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = what  # argparse names the type in its messages
    return convert


def add_bench_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="test the chapter's latency claims on this machine (prompt, precision, batch, bandwidth, history)",
        description="Measure how prompt length, weight precision and batch size change TTFT and decode speed, "
        "measure memory bandwidth, and judge the chapter's four claims. --model, --dtype and "
        "--device choose the model for the prompt and batch sweeps.",
    )
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument(
        "--sweeps",
        type=_list_type(parse_name_list, "sweeps"),
        default=DEFAULT_SWEEPS,
        help=f"comma-separated, from {','.join(SWEEPS)} (default: all but speculation and size)",
    )
    parser.add_argument(
        "--prompt-words",
        type=_list_type(parse_int_list, "prompt words"),
        default=DEFAULT_PROMPT_WORDS,
        help="words of filler in each prompt (default: 10,100,500,1500)",
    )
    parser.add_argument(
        "--new-tokens",
        type=int,
        default=DEFAULT_NEW_TOKENS,
        help="tokens decoded per run, exactly (default: %(default)s)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=DEFAULT_REPEATS,
        help="timed runs per row; rows report the median (default: %(default)s)",
    )
    parser.add_argument(
        "--dtypes",
        type=_list_type(parse_name_list, "dtypes"),
        default=None,
        help=f"precisions for the precision sweep (default: all the loader knows, now {','.join(default_dtypes())})",
    )
    parser.add_argument(
        "--batch-sizes",
        type=_list_type(parse_int_list, "batch sizes"),
        default=DEFAULT_BATCH_SIZES,
        help="default: 1,2,4,8,16,32",
    )
    parser.add_argument(
        "--history-turns",
        type=int,
        default=DEFAULT_HISTORY_TURNS,
        help="turns of the history sweep's chat, each timed with the prompt cache on and off (default: %(default)s)",
    )
    parser.add_argument(
        "--size-models",
        nargs="+",
        metavar="MODEL",
        default=(),
        help="the size sweep's models, two or more (.gguf files, folders, 'embedded'): decode speed against their "
        "weight bytes, each loaded in turn at --dtype",
    )
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--csv", metavar="FILE", help="write the results as CSV, one row per measurement")
    parser.set_defaults(handler=run_bench, bench_parser=parser)


def config_from_args(args: argparse.Namespace, settings: GenerationSettings) -> LabConfig:
    """Raises InvalidSettingsError for values argparse's types cannot judge alone (ranges, duplicates)."""
    return LabConfig(
        sweeps=tuple(args.sweeps),
        prompt_words=tuple(args.prompt_words),
        new_tokens=args.new_tokens,
        repeats=args.repeats,
        dtypes=tuple(args.dtypes) if args.dtypes else None,
        batch_sizes=tuple(args.batch_sizes),
        history_turns=args.history_turns,
        size_models=tuple(args.size_models),
        model=args.model,
        dtype=args.dtype,
        device=args.device,
        decode_loop=settings.decode_loop,
    )


def checked_loader(args: argparse.Namespace):
    """The lab's loader with the same opt-ins as `ask`: --allow-pickle and --trust-remote-code."""

    def load(spec: str | None, *, device: str, dtype: str, progress):
        from core.backend.choice import load_any
        from core.backend.load_options import LoadOptions

        return load_any(
            spec,
            device=device,
            dtype=dtype,
            progress=progress,
            options=LoadOptions.from_args(args),
        )

    return load


def run_bench(args: argparse.Namespace, settings: GenerationSettings) -> int:
    try:
        config = config_from_args(args, settings)
    except InvalidSettingsError as error:
        args.bench_parser.error(str(error))
    for flag, path in (("--json", args.json), ("--csv", args.csv)):
        problem = output_problem(path) if path else None
        if problem:
            args.bench_parser.error(f"{flag} {path}: {problem}")
    from cli.bench_report import format_summary
    from core.lab.results import save_results_csv, save_results_json
    from core.lab.runner import LabObserver, run_lab

    printer = ProgressPrinter()
    cancel = threading.Event()
    outcome: dict = {}

    def work() -> None:
        try:
            outcome["results"] = run_lab(
                config, observer=LabObserver(progress=printer), cancel=cancel, loader=checked_loader(args)
            )
        except BaseException as error:  # noqa: BLE001 - reported on the main thread as one line
            outcome["error"] = error

    # The sweeps run on a thread so that Ctrl+C, which only the main thread receives, can cancel them cleanly.
    worker = threading.Thread(target=work, name="latencylab-bench", daemon=True)
    worker.start()
    interrupted = False
    while worker.is_alive():
        try:
            worker.join(0.2)
        except KeyboardInterrupt:
            interrupted = True
            cancel.set()
            print("\nlatencylab: cancelling after the current measurement…", file=sys.stderr)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if "error" in outcome:
        failure = outcome["error"]
        print(f"latencylab: error: {type(failure).__name__}: {failure}", file=sys.stderr)
        return 1
    results = outcome["results"]
    if results.error and not results.row_count():
        print(f"latencylab: error: {results.error}", file=sys.stderr)
        return 1
    status = 0
    for path, save in ((args.json, save_results_json), (args.csv, save_results_csv)):
        if path:
            try:
                save(results, path)
            except OSError as error:  # strerror alone: the error's own names are the staging file's
                print(f"latencylab: error: could not write {path}: {error.strerror or error}", file=sys.stderr)
                status = 1
    print(format_summary(results))
    if results.error:
        print(f"latencylab: error: {results.error}", file=sys.stderr)
        return 1
    failed = results.failed_sweeps()
    if failed and not interrupted:
        for sweep in failed:
            print(f"latencylab: error: nothing was measured in the {sweep} sweep:", file=sys.stderr)
            for row in results.rows(sweep):
                name = row.get("model") or row.get("dtype") or "?"
                print(f"  {for_stream(str(name), sys.stderr)}: {for_stream(row['error'], sys.stderr)}", file=sys.stderr)
        return 1
    return EXIT_INTERRUPTED if interrupted else status
