"""`latencylab chat`: a chat in the terminal, one message per line on stdin, each reply streamed as it comes.

As `ollama run` and `llama-cli` do, for people who live in a terminal and for scripts. The chat keeps its
history, so the prompt cache prefills only each new turn; `--json` prints one object per turn (the fields of
`ask --json`, plus the turn and how much of the prompt was cached).
"""

from __future__ import annotations

import argparse
import io
import sys

from cli.ask import stream_reply
from cli.exit_paths import (
    INTERRUPTED_STATUS,
    OUTPUT_FAILED_STATUS,
    OutputLost,
    end_generation,
    say,
    say_cache_notices,
    silence_stdout,
    stdout_problem,
    write_out,
)
from cli.progress_printer import ProgressPrinter
from cli.prompt_arg import text_argument
from core.backend.load_options import LoadOptions
from core.chats.session import MAX_MESSAGE_CHARS, Message
from core.errors import LatencyLabError, MessageTooLongError
from core.generation.reply import Reply
from core.generation.request import ReplyRequest
from core.settings import GenerationSettings

CHAT_ID = "terminal"  # the one chat of this process, for the prompt cache
PROMPT = ">>> "  # shown on stderr before each message when stdin is a terminal


def add_chat_parser(subparsers: argparse._SubParsersAction, add_common_options) -> None:
    parser = subparsers.add_parser("chat", help="chat in the terminal: one message per line on stdin")
    add_common_options(parser, suppress_defaults=True)
    parser.add_argument("--system", default="", type=text_argument, help="system prompt")
    parser.add_argument("--no-stream", action="store_true", help="print each reply only once it is complete")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per turn: the reply, its latencies and its prompt cache",
    )
    parser.set_defaults(handler=run_chat)


def input_lines(stream=None):
    """stdin's lines as text; bytes that are not UTF-8 become U+FFFD with a warning, as in `ask`'s argument.

    A line longer than a message may be (MAX_MESSAGE_CHARS) is never held whole: it is read past in pieces and
    given as a MessageTooLongError in its place, so the chat says so and goes on."""
    stream = stream if stream is not None else sys.stdin
    raw = getattr(stream, "buffer", None)
    text = stream if raw is None else io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline=None)
    number = 0
    while True:
        line = text.readline(MAX_MESSAGE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_MESSAGE_CHARS and not line.endswith("\n"):
            read = len(line)
            while line and not line.endswith("\n"):
                line = text.readline(2**20)
                read += len(line)
            yield MessageTooLongError(read - 1 if line.endswith("\n") else read, MAX_MESSAGE_CHARS)
            continue
        yield text_argument(line, f"line {number} of stdin")


def run_chat(args: argparse.Namespace, settings: GenerationSettings) -> int:
    """Every way out stops the running reply and waits for the compute thread first, as `ask` does."""
    from core.backend.choice import load_any  # as in run_ask: not on every command's path

    problem = stdout_problem()
    if problem:
        say(f"error: {problem}")
        return OUTPUT_FAILED_STATUS
    if sys.stdin is None:  # fd 0 closed (`<&-`): said before the model loads, not as a traceback after it
        say("error: stdin is closed; chat reads one message a line from it (ask takes one question as an argument)")
        return 2  # as a usage error
    generation: Reply | None = None
    status = 0
    try:
        try:
            loaded = load_any(
                args.model,
                device=args.device,
                dtype=args.dtype,
                progress=ProgressPrinter(),
                options=LoadOptions.from_args(args),
            )
        except LatencyLabError as error:
            say(f"error: {error}")
            return 1
        if loaded.notice:
            say(loaded.notice)
        say_cache_notices()
        messages: list[Message] = []
        interactive = sys.stdin is not None and sys.stdin.isatty()
        turn = 0
        for line in _lines(interactive):
            if isinstance(line, MessageTooLongError):
                say(f"error: {line} The chat goes on.")
                status = 1
                continue
            text = line.rstrip("\n")
            if not text.strip():
                continue
            request = ReplyRequest(args.system, (*messages, Message("user", text)), settings, chat_id=CHAT_ID)
            try:
                generation, prompt = loaded.prepare(request, streaming=not args.no_stream)
            except LatencyLabError as error:
                say(f"error: {error} (this message was not sent; the chat goes on)")
                status = 1
                continue
            if prompt.notice:
                say(prompt.notice)
            turn += 1
            reply_status, trace = stream_reply(args, settings, loaded, generation, {"turn": turn})
            generation = None
            if reply_status == INTERRUPTED_STATUS:  # as `ollama run`: Ctrl+C ends the reply, not the chat
                say("stopped (Ctrl+C); the chat goes on (Ctrl+D ends it)")
                reply_status = 0
            status = status or reply_status
            messages += [Message("user", text), Message("assistant", trace.text)]
        return status
    except KeyboardInterrupt:
        return end_generation(generation, INTERRUPTED_STATUS, "stopped (Ctrl+C)")
    except OutputLost as lost:
        silence_stdout()
        return end_generation(generation, lost.status, lost.message and f"error: {lost.message}")


def _lines(interactive: bool):
    lines = input_lines()
    while True:
        if interactive:
            print(PROMPT, end="", file=sys.stderr, flush=True)
        try:
            line = next(lines)
        except StopIteration:
            return
        yield line
        if interactive:
            write_out("")  # a closed stdout shows here, before the next message is read
