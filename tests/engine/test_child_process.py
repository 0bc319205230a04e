"""A child started by core/child_process.py gets its socket and arguments, and ends when its parent is killed."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil
import pytest

from core.child_process import start_child
from core.framing import FramedSocket

pytestmark = pytest.mark.subprocess  # each test starts a python process of its own making

# Says what it was given on its socket, then waits for a signal: only the parent-death signal comes.
CHILD = (
    "import signal, sys\n"
    "from core.child_process import as_child\n"
    "from core.framing import FramedSocket\n"
    "ours, rest = as_child(sys.argv[1:])\n"
    "FramedSocket(ours).send(rest)\n"
    "signal.pause()\n"
)
# Starts CHILD, prints its process id, then waits to be killed.
PARENT = (
    "import signal, sys\n"
    "from core.child_process import start_child\n"
    f"process, ours = start_child((sys.executable, '-c', {CHILD!r}))\n"
    "print(process.pid, flush=True)\n"
    "signal.pause()\n"
)


def test_the_child_gets_its_socket_and_arguments():
    process, ours = start_child((sys.executable, "-c", CHILD), "one", "two")
    try:
        link = FramedSocket(ours)
        assert link.poll(60) and link.recv() == ["one", "two"]
    finally:
        process.kill()
        process.wait()
        ours.close()


def test_the_child_dies_with_its_parent_even_by_sigkill():
    """The child never reads its socket: only the parent-death signal can end it."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        assert parent.stdout is not None
        child = psutil.Process(int(parent.stdout.readline()))
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        gone, alive = psutil.wait_procs([child], timeout=30)
        assert child in gone and not alive
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and child.is_running():
            child.kill()
        if parent.stdout is not None:
            parent.stdout.close()
