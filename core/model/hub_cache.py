"""The Hugging Face cache on this machine, read by hand: which hub ids can load without a download."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

# huggingface_hub is not imported for this: it reads the offline switches once, at import, and they
# are set after a model spec is resolved (core/model/offline.py).


def hub_cache_folder() -> Path:
    """HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub: huggingface_hub's own order."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home).expanduser() / "huggingface" / "hub"


def cached_hub_ids() -> list[str]:
    """Model ids with at least one downloaded snapshot, from the models--org--name folders."""
    try:
        entries = list(hub_cache_folder().iterdir())
    except OSError:
        return []
    ids = []
    for entry in entries:
        if entry.name.startswith("models--") and _has_snapshot(entry):
            ids.append(entry.name[len("models--") :].replace("--", "/"))
    return sorted(ids)


def is_cached(hub_id: str) -> bool:
    return _has_snapshot(hub_cache_folder() / ("models--" + hub_id.replace("/", "--")))


def close_names(text: str, candidates: list[str]) -> list[str]:
    """Up to three names close to text (case-insensitive), best first."""
    by_lower = {name.lower(): name for name in candidates}
    return [by_lower[name] for name in difflib.get_close_matches(text.lower(), list(by_lower), n=3, cutoff=0.6)]


def _has_snapshot(folder: Path) -> bool:
    try:
        return any((folder / "snapshots").iterdir())
    except OSError:
        return False
