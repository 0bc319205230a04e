"""Run `latencylab` in a fresh process where every socket is refused, and count what tried to connect."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from core.model.offline import OFFLINE_VARIABLES

SCRIPT = textwrap.dedent("""
    import socket, sys
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(args[1:] if len(args) > 1 else args)
        raise OSError("network access attempted")
    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.getaddrinfo = refuse
    socket.create_connection = refuse
    from cli.main import main
    code = main(sys.argv[1:])
    print("ATTEMPTS", len(attempts), attempts[:3], file=sys.stderr)
    sys.exit(code)
""")


def latencylab_offline(args: list[str], cwd, extra_env: dict | None = None, timeout: int = 300):
    """No offline variable is set beforehand: the app must choose offline mode itself."""
    env = {key: value for key, value in os.environ.items() if key not in OFFLINE_VARIABLES}
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
    )
