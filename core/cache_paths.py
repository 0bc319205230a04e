"""Where Latency Lab keeps what it builds (model caches, compiled kernels): the user cache, or LATENCYLAB_CACHE_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_root() -> Path:
    override = os.environ.get("LATENCYLAB_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("latencylab"))
