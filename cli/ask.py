"""`latencylab ask`: one question, the reply streamed to stdout, and optionally the metrics as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from core.chats.session import ChatSession
from core.errors import LatencyLabError
from core.timing.events import TokenEvent
from core.generation.reply import Generation
from core.model.loader import load_model
from core.model.preflight import check_before_loading
from core.chats.context_fit import check_reply_budget
from core.settings import GenerationSettings
from core.timing.trace import GenerationTrace
from cli.progress_printer import ProgressPrinter


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
        check_before_loading(args.model, args.dtype, args.allow_pickle)
        loaded = load_model(args.model, device=args.device, dtype=args.dtype, progress=ProgressPrinter(),
                            trust_remote_code=args.trust_remote_code, allow_pickle=args.allow_pickle)
        check_reply_budget(settings.max_new_tokens, loaded.context_window)
    except LatencyLabError as error:
        print(f"latencylab: error: {error}", file=sys.stderr)
        return 1
    session = ChatSession(system_prompt=args.system)
    session.add_user(args.prompt)
    try:
        prompt = session.build_prompt(loaded.tokenizer, loaded.context_window, settings.max_new_tokens)
    except LatencyLabError as error:
        print(f"latencylab: error: {error}", file=sys.stderr)
        return 1
    if prompt.notice:
        print(f"latencylab: {prompt.notice}", file=sys.stderr)
    generation = Generation(loaded, prompt.input_ids, settings)
    if generation.decode_loop_note:
        print(f"latencylab: decoding with generate(): {generation.decode_loop_note}", file=sys.stderr)
    generation.start()
    trace = GenerationTrace(generation.request_start_ns, prompt.prompt_tokens)
    stream_to_stdout = not args.no_stream and not args.json
    for event in generation:
        trace.record(event)
        if stream_to_stdout and isinstance(event, TokenEvent) and event.text:
            sys.stdout.write(event.text)
            sys.stdout.flush()
    generation.join()
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
        "token_ids": trace.token_ids,
        "text": trace.text,
        "stop_reason": trace.stop_reason,
        "error": trace.error,
    }
