"""The engine in its own process, as vLLM's V1 engine core: the window's painting never holds the model loop's GIL.

The window spawns a fresh interpreter (`python -m core.engine.process`, never a fork after Qt exists,
and without re-running the window's own main module as multiprocessing's spawn would) and talks to
it over a private socket pair, never a TCP port (core/child_process.py starts it; core/framing.py frames
both ends). Inside, EngineCore runs as in-process; a sender
thread writes events, so decode never waits on the pipe, and a heartbeat when it has had nothing to
send for a moment. The engine exits when the window is gone: at EOF on the socket, or through the
parent-death signal.

The window's end never blocks on the engine: its socket is non-blocking, requests wait in a queue that
is written as the socket takes them (the window drains it when the socket is writable), and events are
read as they arrive and unpickled only once whole. So a stopped (SIGSTOP) or wedged engine cannot freeze
the window, and every way the engine ends reaches the window as one EngineStopped.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from core import startup_gc
from core.child_process import as_child, python_module, start_child
from core.engine.messages import EVENTS, Delivered, EngineStopped, Heartbeat, Request, Shutdown
from core.framing import FrameDecoder, FramedSocket, encode

# Past this the engine is killed: closing the window must end the whole app within 2 s.
SHUTDOWN_WAIT_S = 0.8
# The engine's sender says it is alive after this long with nothing else to send.
HEARTBEAT_S = 0.5
_READ_CHUNK = 1 << 16


class EngineProcess:
    """The window's side: send() requests, watch fileno() to read and (while wants_to_write) to write."""

    def __init__(self):
        self._process, ours = start_child(python_module("core.engine.process"))
        ours.setblocking(False)
        self._socket = ours
        self._outgoing = bytearray()  # framed requests the socket has not taken yet
        self._incoming = FrameDecoder()  # events as their bytes arrive
        # One buffer read into again and again: recv() allocated and shrank 64 KB per call, a third of a ms each.
        self._chunk = memoryview(bytearray(_READ_CHUNK))
        self.closed = False
        self.stopped: EngineStopped | None = None
        self._stop_reported = False
        self.last_heard_ns = time.perf_counter_ns()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self.stopped is None and self._process.poll() is None

    @property
    def wants_to_write(self) -> bool:
        """Requests are waiting for the socket to take them (the engine is slow to read, or stopped)."""
        return bool(self._outgoing) and self.stopped is None

    @property
    def stop_unreported(self) -> bool:
        """The engine has ended and take_events() has not handed that on yet."""
        return self.stopped is not None and not self._stop_reported

    def send(self, request: Request) -> None:
        """Queue the request and write what the socket takes now; never blocks. A dead engine is noted, and
        take_events() reports it."""
        if self.stopped is not None:
            return
        self._outgoing += encode(request)
        self.flush()

    def flush(self) -> None:
        """Write queued requests until the socket would block (the window calls this when it is writable)."""
        while self._outgoing and self.stopped is None:
            try:
                written = self._socket.send(self._outgoing)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EPIPE, ECONNRESET: the engine is gone
                self._mark_stopped()
                return
            del self._outgoing[:written]

    def fileno(self) -> int:
        return self._socket.fileno()

    def silent_for_s(self) -> float:
        """Seconds since anything (an event or a heartbeat) last arrived from the engine."""
        return (time.perf_counter_ns() - self.last_heard_ns) / 1e9

    def take_events(self) -> list[Delivered]:
        """Every whole event waiting now, stamped on arrival; never blocks. An EngineStopped comes last, once,
        when the engine has gone (seen here, on a write, or ended by end())."""
        taken = []
        if self.stopped is None:
            ended = False
            try:
                while read := self._socket.recv_into(self._chunk):
                    self._incoming.feed(self._chunk[:read])
                    if read < len(self._chunk):
                        break  # all there was: asking again only raises BlockingIOError (a frame's read takes one call)
                else:
                    ended = True  # EOF: the engine closed its end
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                ended = True
            now = time.perf_counter_ns()
            try:
                events = self._incoming.messages()
            except Exception:  # noqa: BLE001 - a garbled stream: the engine is not to be trusted further
                events, ended = [], True
            if events:
                self.last_heard_ns = now
            taken = [Delivered(event, now) for event in events if isinstance(event, EVENTS)]
            if ended:
                self._mark_stopped()
        if self.stop_unreported and self.stopped is not None:
            self._stop_reported = True
            taken.append(Delivered(self.stopped, time.perf_counter_ns()))
        return taken

    def end(self, description: str) -> EngineStopped:
        """Kill the engine now (it may be stopped or stuck) and take `description` as how it ended."""
        if self.stopped is None:
            self._process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(2.0)
            self.stopped = EngineStopped(description, expected=self.closed)
        return self.stopped

    def close(self, timeout_s: float = SHUTDOWN_WAIT_S) -> bool:
        """Ask the engine to stop and exit; kill it if it has not within timeout_s. Leaves no child behind."""
        if self.closed:
            return True
        self.closed = True
        self.send(Shutdown())
        try:
            self._process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(2.0)
        self._socket.close()
        return self._process.poll() is not None

    def _mark_stopped(self) -> EngineStopped:
        if self.stopped is None:
            try:
                code = self._process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            self.stopped = EngineStopped(describe_exit(code), expected=self.closed)
        return self.stopped


def describe_exit(code: int | None) -> str:
    if code is None:
        return "the engine stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the engine process was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
    return f"the engine process exited with code {code}"


def engine_main(connection: FramedSocket) -> None:
    """The engine process: requests from the pipe to EngineCore, events back through a sender thread."""
    outgoing: queue.Queue = queue.Queue()

    def send_events() -> None:
        while True:
            try:
                event = outgoing.get(timeout=HEARTBEAT_S)
            except queue.Empty:
                event = Heartbeat()  # nothing to say for a while: say that it is alive, so silence means stuck
            if event is None:
                return
            try:
                connection.send(event)
            except (BrokenPipeError, ConnectionResetError, OSError):
                os._exit(0)  # the window is gone

    sender = threading.Thread(target=send_events, name="latencylab-engine-sender", daemon=True)
    sender.start()
    # The slow imports start at once, while the window paints, rather than when the first load arrives. On the
    # compute thread, where the load will run next: two threads importing transformers at once can see a
    # half-initialised module.
    from core.compute_thread import compute_thread

    compute_thread().submit(_import_the_model_stack)
    from core.engine.core import EngineCore

    core = EngineCore(outgoing.put)
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            break  # the window closed its end, or died
        if isinstance(request, Shutdown):
            break
        try:
            core.handle(request)
        except Exception as error:  # noqa: BLE001 - a bad request must not end the engine
            print(f"latencylab engine: {type(error).__name__}: {error}", file=sys.stderr)
    core.stop_everything()
    outgoing.put(None)
    sender.join(0.3)
    # The compute thread may be inside torch; ending the interpreter around it can abort the process.
    os._exit(0)


def _import_the_model_stack() -> None:
    from core.model.transformers_index import keep_transformers_index

    keep_transformers_index()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    # The lazy parts a GGUF's load on the kernels uses; the float path imports its model classes when it loads one.
    from transformers import GenerationConfig, PretrainedConfig, TokenizersBackend  # noqa: F401

    # Here, not after the first load: the engine loads other models later, and a frozen model is never collected.
    startup_gc.started()


if __name__ == "__main__":
    startup_gc.hold()
    engine_socket, _ = as_child(sys.argv[1:])
    engine_main(FramedSocket(engine_socket))
