"""`latencylab proxy --upstream URL`: a pass-through between the user's tools and their server that times every
request, one line each on stdout (or JSONL with --jsonl)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from pathlib import Path

from core.settings import PROXY_HOST, PROXY_PORT, GenerationSettings

DEFAULT_PORT = int(PROXY_PORT.default)


def add_proxy_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser(
        "proxy",
        help="sit between your tools and an LLM server and time every request they make",
        description="A pass-through proxy: point any OpenAI-compatible or Ollama client at it instead of the server. "
        "Every request is forwarded untouched (streaming too, chunk by chunk as it comes); generation requests "
        "(/v1/chat/completions, /v1/completions, /api/chat, /api/generate) are timed: TTFT, TPOT, ITL, E2E, tokens, "
        "the client's process, and how many requests were in flight. API keys pass through and are never stored.",
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the server to forward to, e.g. http://127.0.0.1:11434 (Ollama) or http://127.0.0.1:8080/v1",
    )
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    parser.add_argument(
        "--host",
        default=None,
        help=f"address to listen on (default: {PROXY_HOST}, this machine only); any other is reachable from elsewhere",
    )
    parser.add_argument(
        "--jsonl",
        metavar="FILE",
        default=None,
        help="append each request's record to FILE as one JSON line ('-': stdout)",
    )
    parser.add_argument(
        "--keep-bodies",
        action="store_true",
        help="keep each generation request's body and reply text in its record (default: prompts and replies are "
        "not kept)",
    )
    parser.set_defaults(handler=run_proxy)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535 (0: any free one), not {port}")
    return port


def run_proxy(args: argparse.Namespace, settings: GenerationSettings) -> int:
    # Here, not at the top: every command builds this parser, and aiohttp's import is a fifth of a second.
    from core.proxy.log import RecordWriter
    from core.proxy.proxy_thread import ProxyStartError, ProxyThread
    from core.proxy.upstream import BadUpstream

    try:
        proxy = ProxyThread(args.upstream, host=args.host or PROXY_HOST, port=args.port, keep_bodies=args.keep_bodies)
    except BadUpstream as error:
        _error(f"--upstream: {error}")
        return 2
    if not proxy.loopback_only:
        print(
            f"warning: listening on {proxy.host}, so other machines can reach it: anyone who can connect can use "
            f"your server through it",
            file=sys.stderr,
        )
    with contextlib.ExitStack() as closing:
        if args.jsonl in (None, "-"):
            proxy.subscribe(RecordWriter(sys.stdout, jsonl=args.jsonl == "-"))
        else:
            try:
                log = closing.enter_context(Path(args.jsonl).open("a", encoding="utf-8"))
            except OSError as error:
                _error(f"--jsonl: cannot write {args.jsonl}: {error.strerror or error}")
                return 2
            proxy.subscribe(RecordWriter(sys.stdout, jsonl=False))
            proxy.subscribe(RecordWriter(log, jsonl=True))
        try:
            proxy.start()
        except ProxyStartError as error:
            _error(str(error))
            return 1
        print(f"latencylab proxy: {proxy.url} -> {proxy.upstream} (Ctrl+C stops)", file=sys.stderr, flush=True)
        _wait_for_a_stop()
        proxy.stop()
    return 0


def _error(problem: str) -> None:
    """One line, as argparse words the command's own refusals ("latencylab proxy: error: argument --port ...")."""
    print(f"latencylab proxy: error: {problem}", file=sys.stderr)


def _wait_for_a_stop() -> None:
    """Until Ctrl+C or SIGTERM (a service manager's stop). Both raise KeyboardInterrupt here: a handler that set an
    Event instead deadlocked now and then, taking the Event's lock that the wait it interrupted already held."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)
