"""Save a widget's picture as a PNG file atomically: a full disk leaves the file that was there, never half of one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QPixmap

from core.atomic_file import atomic_write_bytes


def save_png(pixmap: QPixmap, path: str | Path) -> bool:
    """Encode in memory, then write through core/atomic_file.py; OSError (a full disk, no such folder) is raised.
    False when Qt could not encode the picture."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    encoded = pixmap.save(buffer, "PNG")
    buffer.close()
    if not encoded:
        return False
    atomic_write_bytes(Path(path), bytes(data.data()))
    return True
