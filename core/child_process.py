"""A child Python process on a private socket pair, which ends when the process that started it ends.

The engine and the chat template's renderer start so: a fresh interpreter (never a fork after Qt or torch exist),
given one end of a socket pair (never a TCP port) and the parent's process id. In the child, as_child() arms the
parent-death signal, so the kernel kills it when its parent dies, even by SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1


def python_module(name: str) -> tuple[str, ...]:
    """The command that runs a module of this project in a fresh interpreter."""
    return (sys.executable, "-m", name)


def start_child(command: Sequence[str], *arguments: str) -> tuple[subprocess.Popen, socket.socket]:
    """Run `command SOCKET_FD PARENT_PID *arguments` and return it with this process's end of the socket pair."""
    ours, theirs = socket.socketpair()
    try:
        process = subprocess.Popen(
            [*command, str(theirs.fileno()), str(os.getpid()), *arguments],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            close_fds=True,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return process, ours


def as_child(argv: Sequence[str]) -> tuple[socket.socket, list[str]]:
    """In the child, with its arguments after the program's name: its end of the socket pair and the arguments
    start_child was given. From here the child dies with its parent; Ctrl+C in the terminal, which reaches the whole
    process group, is left to the parent, and the child follows it."""
    fd, parent_pid, *rest = argv
    _die_with_parent(int(parent_pid))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return socket.socket(fileno=int(fd)), rest


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(0)
