"""The engine in its own process, as vLLM's V1 engine core: the window's painting never holds the model loop's GIL.

The window spawns a fresh interpreter (`python -m core.engine.process`, never a fork after Qt exists,
and without re-running the window's own main module as multiprocessing's spawn would) and talks to
it over a private socket pair, never a TCP port. Inside, EngineCore runs as in-process; a sender
thread writes events, so decode never waits on the pipe. The engine exits when the window is gone:
at EOF on the socket, or through the parent-death signal.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from core.engine.messages import Delivered, EngineStopped, Shutdown

PR_SET_PDEATHSIG = 1
# Past this the engine is killed: closing the window must end the whole app within 2 s.
SHUTDOWN_WAIT_S = 0.8


class EngineProcess:
    """The window's side: send() requests, watch fileno(), take_events() when it is readable."""

    def __init__(self):
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "core.engine.process", str(theirs.fileno()), str(os.getpid())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, close_fds=True)
        theirs.close()
        self._connection = Connection(ours.detach())
        self.closed = False
        self.stopped: EngineStopped | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self.stopped is None and self._process.poll() is None

    def send(self, request: object) -> None:
        if self.stopped is not None:
            return
        try:
            self._connection.send(request)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self._mark_stopped()

    def fileno(self) -> int:
        return self._connection.fileno()

    def take_events(self) -> list[Delivered]:
        """Every event waiting now, stamped on arrival; an EngineStopped last if the engine has gone."""
        taken = []
        if self.stopped is not None:
            return taken
        try:
            while self._connection.poll(0):
                event = self._connection.recv()
                taken.append(Delivered(event, time.perf_counter_ns()))
        except (EOFError, OSError):
            taken.append(Delivered(self._mark_stopped(), time.perf_counter_ns()))
        return taken

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
        self._connection.close()
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


def engine_main(connection, parent_pid: int) -> None:
    """The engine process: requests from the pipe to EngineCore, events back through a sender thread."""
    _die_with_parent(parent_pid)
    # Ctrl+C in the terminal reaches the whole process group: the window decides, and the engine follows it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    outgoing: queue.SimpleQueue = queue.SimpleQueue()

    def send_events() -> None:
        while (event := outgoing.get()) is not None:
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
    import torch  # noqa: F401
    import transformers  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401  (the lazy parts the load uses)


def _die_with_parent(parent_pid: int) -> None:
    """On Linux the kernel kills the engine when the window's process dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(0)


if __name__ == "__main__":
    engine_main(Connection(int(sys.argv[1])), int(sys.argv[2]))
