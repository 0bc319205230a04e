"""How `latencylab ask` ends when stdout breaks or the user presses Ctrl+C: stop the reply, wait for it, one line."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from core.terminal_text import for_stream

# The shell's convention for a process ended by a signal: 128 + its number.
BROKEN_PIPE_STATUS = 128 + signal.SIGPIPE  # 141, what `yes | head -1` reports for yes
INTERRUPTED_STATUS = 128 + signal.SIGINT  # 130
OUTPUT_FAILED_STATUS = 1
# A stop lands within one decoder layer or token (README, Stop latency); this is only a backstop.
JOIN_TIMEOUT_S = 10.0


class OutputLost(Exception):
    """stdout cannot take the reply: a reader that went away, a full disk, or a closed descriptor."""

    def __init__(self, status: int, message: str | None):
        super().__init__(message or "broken pipe")
        self.status = status
        self.message = message


def stdout_problem() -> str | None:
    """Why nothing can be printed (stdout closed before we started), or None."""
    if sys.stdout is None:
        return "stdout is closed, so the reply could not be printed"
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return None  # not a file (a test's capture, an embedding host): writes will tell
    try:
        os.fstat(descriptor)
    except OSError:
        return "stdout is closed, so the reply could not be printed"
    return None


def write_out(text: str) -> None:
    """Write and flush, turning every failure into OutputLost with its exit status."""
    try:
        sys.stdout.write(for_stream(text, sys.stdout))
        sys.stdout.flush()
    except BrokenPipeError:
        raise OutputLost(BROKEN_PIPE_STATUS, None) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise OutputLost(OUTPUT_FAILED_STATUS, f"could not write the reply to stdout: {reason}") from None
    except ValueError as error:  # a closed file object, or text the stream cannot encode
        raise OutputLost(OUTPUT_FAILED_STATUS, f"could not write the reply to stdout: {error}") from None


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's own flush at exit cannot fail a second time."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def say(line: str) -> None:
    """One line on stderr; a broken stderr is not worth a traceback either."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"latencylab: {for_stream(line, sys.stderr)}", file=sys.stderr, flush=True)


def say_cache_notices() -> None:
    """Cache files set aside since the last call (core/cache_file.py), each said once."""
    from core.cache_file import take_notices

    for notice in take_notices():
        say(f"note: {notice}")


@contextlib.contextmanager
def stop_on_interrupt(generation):
    """While a reply streams, Ctrl+C stops it instead of raising KeyboardInterrupt wherever the main thread is: an
    event already taken from the reply but not yet recorded in its trace was lost that way (a stopped reply's JSON
    read " upon" for "Once upon", under load). The reply ends at the next layer or token and its finish arrives as
    usual, so the caller shows every token made before the stop, as `ollama run` keeps a stopped reply. Yields a
    threading.Event set once Ctrl+C came. A second Ctrl+C meanwhile is ignored; a reply that has not returned
    within JOIN_TIMEOUT_S ends the process, as end_generation does. Off the main thread (no signal handler can be
    set there) Ctrl+C keeps Python's own behaviour."""
    interrupted = threading.Event()

    def give_up() -> None:
        say("stopped (Ctrl+C), but the reply did not stop in time")
        hard_exit(INTERRUPTED_STATUS)

    backstop = threading.Timer(JOIN_TIMEOUT_S, give_up)
    backstop.daemon = True

    def on_interrupt(signum, frame) -> None:
        if not interrupted.is_set():
            interrupted.set()
            generation.stop()
            backstop.start()

    try:
        previous = signal.signal(signal.SIGINT, on_interrupt)
    except ValueError:  # not the main thread
        yield interrupted
        return
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
        backstop.cancel()


def stopped(generation) -> bool:
    """Stop the reply and wait up to JOIN_TIMEOUT_S for its work to return (the compute thread out of torch)."""
    generation.stop()
    return generation.join(JOIN_TIMEOUT_S)


def end_generation(generation, status: int, note: str | None) -> int:
    """Stop the reply and wait until the compute thread has left torch, then return status.

    Leaving the interpreter while that thread is inside torch aborts the process ("terminate called
    without an active exception", exit 134), so when the wait fails, or no reply can be stopped (a load
    in progress), the process ends here with os._exit after flushing what can be flushed.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not interrupt the cleanup
    if note:
        say(note)
    if generation is not None and stopped(generation):
        return status
    hard_exit(status)
    return status  # not reached


def hard_exit(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
