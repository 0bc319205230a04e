"""`latencylab ask`: one question, the reply streamed to stdout, and optionally the metrics as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from core.chats.session import Message
from core.errors import LatencyLabError
from core.timing.events import TokenEvent
from core.generation.request import ReplyRequest, prepare_reply
from core.model.loader import load_model
from core.settings import GenerationSettings
from core.timing.trace import GenerationTrace  # the report's input type
from cli.progress_printer import PrefillLine, ProgressPrinter


def add_ask_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser("ask", help="ask one question and print the reply")
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument("prompt", help="the question to ask")
    parser.add_argument("--system", default="", help="system prompt")
    parser.add_argument("--no-stream", action="store_true", help="print the reply only once it is complete")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the reply and its latencies")
    parser.set_defaults(handler=run_ask)


def run_ask(args: argparse.Namespace, settings: GenerationSettings) -> int:
    try:
        loaded = load_model(args.model, device=args.device, dtype=args.dtype, progress=ProgressPrinter(),
                            trust_remote_code=args.trust_remote_code, allow_pickle=args.allow_pickle)
        generation, prompt = prepare_reply(loaded, ReplyRequest(args.system, (Message("user", args.prompt),),
                                                                settings))
    except LatencyLabError as error:
        print(f"latencylab: error: {error}", file=sys.stderr)
        return 1
    if prompt.notice:
        print(f"latencylab: {prompt.notice}", file=sys.stderr)
    if generation.decode_loop_note:
        print(f"latencylab: decoding with generate(): {generation.decode_loop_note}", file=sys.stderr)
    prefill_line = PrefillLine(sys.stderr)
    generation.on_progress = prefill_line
    generation.start()
    stream_to_stdout = not args.no_stream and not args.json
    for event in generation:
        prefill_line.end()
        if stream_to_stdout and isinstance(event, TokenEvent) and event.text:
            sys.stdout.write(event.text)
            sys.stdout.flush()
    prefill_line.end()
    generation.join()
    trace = generation.trace
    if args.json:
        report = ask_report(loaded.describe(), trace, settings)
        report["decode_loop"] = generation.decode_loop
        print(json.dumps(report, ensure_ascii=False))
    elif stream_to_stdout:
        print(trace.tail_text)
    else:
        print(trace.text)
    if trace.error:
        print(f"latencylab: generation failed: {trace.error}", file=sys.stderr)
        return 1
    return 0


def ask_report(model_facts: dict, trace: GenerationTrace, settings: GenerationSettings) -> dict:
    metrics = trace.metrics()
    return {
        **model_facts,
        "settings": settings.to_dict(),
        "prompt_tokens": trace.prompt_tokens,
        "output_tokens": trace.output_tokens,
        "ttft_s": metrics.ttft_s,
        "tpot_s": metrics.tpot_s,
        "e2e_s": metrics.e2e_s,
        "itl_s": list(metrics.itl_s),
        "itl_p50_s": metrics.itl_p50_s,
        "itl_p90_s": metrics.itl_p90_s,
        "itl_p99_s": metrics.itl_p99_s,
        "prefill_tok_s": metrics.prefill_tok_s,
        "decode_tok_s": metrics.decode_tok_s,
        "token_times_s": trace.token_times_s(),
        # The prompt's pass, layer by layer: seconds since request start, fraction of the layers done.
        "prefill_progress": [{"t_s": (stamp - trace.request_start_ns) / 1e9, "fraction": fraction}
                             for stamp, fraction in trace.prefill_progress],
        "token_ids": trace.token_ids,
        "text": trace.text,
        "stop_reason": trace.stop_reason,
        "error": trace.error,
    }
