"""Render a chat template within a time and size budget, interruptible by the reply's Stop.

A chat template is code that comes with the model file. It renders in a worker process
(core/chats/template_worker.py) with a memory budget; this side waits at most TEMPLATE_TIME_S for the text, and
kills the worker when the time runs out or Stop is pressed (a new one starts for the next render). The time is the
template's own: it starts once the worker says it is ready, since a worker started anew on a busy machine took much
of the budget to start, and a trivial template then "did not finish". Whatever goes wrong is one ChatTemplateError
line, never a traceback.
"""

from __future__ import annotations

import contextvars
import subprocess
import threading
import time
from contextlib import contextmanager

from core.child_process import python_module, start_child
from core.errors import LatencyLabError
from core.framing import FramedSocket

TEMPLATE_TIME_S = 2.0  # a real template renders in about a millisecond
TEMPLATE_MAX_CHARS = 1_000_000  # the template's own text: message contents are placeholders while it renders
TEMPLATE_MEMORY_BYTES = 512 * 2**20
WORKER_START_S = 60.0  # the worker's own start (Python and jinja2): slow on a loaded machine, never the template's
WORKER_COMMAND = python_module("core.chats.template_worker")  # started with its memory budget (core/child_process.py)
_POLL_S = 0.02  # how often a wait looks at the Stop event

_interrupt: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("template_interrupt", default=None)


class ChatTemplateError(LatencyLabError):
    """The model's chat template could not render this chat; the message says why, in one line."""


class TemplateInterrupted(LatencyLabError):
    """Stop was pressed while the template rendered: nothing was generated."""

    def __init__(self):
        super().__init__("stopped while the chat template was being rendered; nothing was generated.")


@contextmanager
def stop_renders_on(event: threading.Event | None):
    """Renders on this thread, inside the block, end at once when event is set."""
    token = _interrupt.set(event)
    try:
        yield
    finally:
        _interrupt.reset(token)


class TemplateWorker:
    """The worker process, started on first use (or by prestart) and started anew after it was killed."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._connection: FramedSocket | None = None
        self._ready = False  # the worker said it has started: its renders' time is the templates' own

    def prestart(self) -> None:
        """Start the worker now, in the background (its imports overlap the model's load)."""
        with self._lock:
            self._start()

    def render(self, source: str, messages: list[dict], variables: dict) -> str:
        stop = _interrupt.get()
        with self._lock:
            connection = self._start()
            try:
                if not self._ready:
                    self._wait(connection, stop, WORKER_START_S, "the chat template's renderer did not start")
                    connection.recv()  # ("ready", None)
                    self._ready = True
                connection.send((source, messages, variables, TEMPLATE_MAX_CHARS))
                self._wait(connection, stop, TEMPLATE_TIME_S, "the chat template did not finish")
                status, value = connection.recv()
            except (EOFError, OSError):
                self._kill()
                raise ChatTemplateError(
                    "the chat template's renderer ended before it answered (did the template run out of memory?)."
                ) from None
        if status != "ok":
            raise ChatTemplateError(value.rstrip(".") + ".")
        return value

    def close(self) -> None:
        with self._lock:
            self._kill()

    def _wait(self, connection: FramedSocket, stop: threading.Event | None, seconds: float, what: str) -> None:
        """Until the worker has something to say; the worker is killed at a Stop, or after seconds."""
        deadline = time.monotonic() + seconds
        while not connection.poll(_POLL_S):
            if stop is not None and stop.is_set():
                self._kill()
                raise TemplateInterrupted()
            if time.monotonic() > deadline:
                self._kill()
                raise ChatTemplateError(f"{what} within {seconds:g} s, so it was stopped.")

    def _start(self) -> FramedSocket:
        """The running worker's connection; the worker is started first when there is none."""
        connection = self._connection
        if self._process is not None and self._process.poll() is None and connection is not None:
            return connection
        self._ready = False
        self._process, ours = start_child(WORKER_COMMAND, str(TEMPLATE_MEMORY_BYTES))
        self._connection = connection = FramedSocket(ours)
        return connection

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None


_worker = TemplateWorker()


def template_worker() -> TemplateWorker:
    """The process's one renderer: every chat's renders take turns on it."""
    return _worker


def render_chat_template(tokenizer, messages: list[dict]) -> str:
    """The tokenizer's chat template over messages, with the generation prompt, as apply_chat_template renders it."""
    source = tokenizer.get_chat_template()
    variables = dict(tokenizer.special_tokens_map.items())
    return _worker.render(source, [dict(message) for message in messages], variables)
