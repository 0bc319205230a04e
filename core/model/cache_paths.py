"""Where Latency Lab keeps converted models: the user's cache directory, or LATENCYLAB_CACHE_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_root() -> Path:
    override = os.environ.get("LATENCYLAB_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("latencylab"))
