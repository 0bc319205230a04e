"""Write a file so that a crash or a full disk at any moment leaves either the old file or the new one, never half.

Every file the app writes goes through here: saved chats and their exports, trace and lab exports, plot images,
the benchmarks' JSON.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

TEMP_PREFIX = ".tmp-"
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def ensure_private_dir(folder: Path) -> Path:
    """Create the folder readable by the user only; tighten it if it already exists with looser rights."""
    folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if os.name == "posix" and (folder.stat().st_mode & 0o077):
        folder.chmod(PRIVATE_DIR_MODE)
    return folder


def atomic_write_bytes(path: Path, data: bytes, mode: int = PRIVATE_FILE_MODE) -> None:
    """Temporary file in the same folder, fsync, rename over the target, then fsync the folder."""
    path = Path(path)
    descriptor, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)  # mkstemp already uses 0600; say so explicitly for other umasks and OSes
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_folder(path.parent)


def atomic_write_text(path: Path, text: str, mode: int = PRIVATE_FILE_MODE) -> None:
    """UTF-8 text, newlines as given (a CSV's own line ends stay)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def is_temp_file(path: Path) -> bool:
    return path.name.startswith(TEMP_PREFIX) and path.name.endswith(".part")


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry is on disk; not every OS lets a folder be opened.
    if os.name != "posix":
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
