"""Run the latencylab command in a subprocess, as a user would from a shell."""

from __future__ import annotations

import os
import subprocess
import sys


def latencylab(*args, env=None, timeout=300):
    environment = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=environment)
