"""Checks before a load that give a clearer answer than the loader's own failure: pickle-only folders, memory."""

from __future__ import annotations

from pathlib import Path

from core.errors import ModelLoadError
from core.model.memory_check import check_memory
from core.model.source import ModelSource, resolve_model_source, with_header

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


def check_before_loading(spec: str | None, dtype: str, allow_pickle: bool = False) -> None:
    """Raise ModelLoadError with advice; return quietly when the loader itself should decide (a bad spec)."""
    try:
        source = resolve_model_source(spec)
    except ModelLoadError:
        return  # the loader reports a bad spec itself
    check_source_before_loading(with_header(source), dtype, allow_pickle)


def check_source_before_loading(source: ModelSource, dtype: str, allow_pickle: bool = False) -> None:
    """The same checks on a source already resolved, its GGUF header read (the loader's way: once per load)."""
    if not allow_pickle:
        refuse_pickle_only_folder(source)
    check_memory(source, dtype)


def refuse_pickle_only_folder(source: ModelSource) -> None:
    if source.kind != "folder":
        return
    folder = Path(source.location)
    if any(folder.glob("*.safetensors")):
        return
    pickles = sorted(path.name for path in folder.iterdir() if path.suffix.lower() in PICKLE_SUFFIXES)
    if pickles:
        raise ModelLoadError(
            f"the folder {folder.name!r} holds only pickle checkpoints ({', '.join(pickles[:3])}), which can run "
            f"code when loaded. Latency Lab loads safetensors or GGUF; convert the model, or pass --allow-pickle "
            f"if you trust these files."
        )
