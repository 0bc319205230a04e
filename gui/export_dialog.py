"""One save-as dialog for every export in the app: ask for a path, write, and say how it went."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

from core.errors import LatencyLabError


def export_with_dialog(
    parent: QWidget, title: str, pattern: str, writer: Callable[[str], object], report: Callable[[str], None]
) -> None:
    """writer(path) may raise OSError or LatencyLabError, or return False when it could not write."""
    path, _ = QFileDialog.getSaveFileName(parent, title, "", pattern)
    if not path:
        return
    try:
        ok = writer(path)
    except (OSError, LatencyLabError) as error:
        report(f"Could not save: {error}")
        return
    report(f"Could not save {Path(path).name}." if ok is False else f"Saved {Path(path).name}.")
