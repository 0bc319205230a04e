"""This test process's own child processes, less the chat-template renderer it keeps for in-process replies."""

from __future__ import annotations

import psutil


def children() -> list[psutil.Process]:
    """Children that a window or engine left behind: the template worker (core/chats/template_worker.py) is the
    process's own, started by the in-process engine's renders, and stays for the next one."""
    found = []
    for child in psutil.Process().children():
        try:
            if "core.chats.template_worker" not in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found
