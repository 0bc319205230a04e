"""Count a model's parameters from file headers alone (GGUF, safetensors), without reading any weights.

A header is untrusted input: every length and count in it is checked against the file's size before
it is used, and every problem becomes a ModelLoadError that names the file and what is wrong.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import TypeGuard

from core.errors import ModelLoadError
from core.model.address_space import address_space_refusal
from core.quant.gguf_header import GGUFHeader, GGUFHeaderError, UnknownQuantType, read_header

# A safetensors header is JSON naming each tensor; 100 MB is far beyond any real one (the format caps it there).
_SAFETENSORS_MAX_HEADER = 100 * 2**20


class _Corrupt(Exception):
    """Internal: what is wrong with the header, turned into a ModelLoadError naming the file."""


def gguf_header(path: Path) -> GGUFHeader:
    """The file's header, read once by the one GGUF walker (core/quant/gguf_header.py); ModelLoadError naming the
    file and what is wrong when it is corrupt, unreadable, or uses a quant type this app does not know."""
    path = Path(path)
    try:
        return read_header(path)
    except UnknownQuantType as problem:
        raise ModelLoadError(
            f"the model file {path.name} uses a quant type this app does not know ({problem}); "
            f"it may need a newer version of Latency Lab."
        ) from None
    except GGUFHeaderError as problem:
        raise ModelLoadError(f"the model file {path.name} is not a readable GGUF file: {problem}.") from None
    except OSError as error:
        refusal = address_space_refusal(path, error)
        raise ModelLoadError(
            refusal or f"the model file {path.name} could not be read: {error.strerror or error}."
        ) from None


def gguf_parameter_count(path: Path, header: GGUFHeader | None = None) -> int | None:
    """The weights' element count from the header alone; None for a valid GGUF too old to read (version 1),
    ModelLoadError when corrupt."""
    header = header or gguf_header(path)
    return header.parameter_count if header.readable else None


def safetensors_parameter_count(folder: Path) -> int | None:
    """Sum of tensor sizes over every .safetensors file in the folder, or None when there is none."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    return sum(_safetensors_file_count(path) for path in files)


def _safetensors_file_count(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise _Corrupt(f"it is only {size} bytes long, too short for a safetensors header")
            (header_length,) = struct.unpack("<Q", prefix)
            if header_length > min(size - 8, _SAFETENSORS_MAX_HEADER):
                raise _Corrupt(f"its header claims {header_length:,} bytes, but the file holds {size:,}")
            raw = handle.read(header_length)
        try:
            header = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise _Corrupt("its header is not valid JSON") from None
        return _count_safetensors_header(header, size - 8 - header_length)
    except _Corrupt as problem:
        raise ModelLoadError(f"the model file {path.name} is not a readable safetensors file: {problem}.") from None
    except OSError as error:
        raise ModelLoadError(f"the model file {path.name} could not be read: {error.strerror or error}.") from None


def _count_safetensors_header(header: object, data_bytes: int) -> int:
    if not isinstance(header, dict):
        raise _Corrupt("its header is not a JSON object")
    total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not _is_int_list(shape) or any(d < 0 for d in shape):
            raise _Corrupt(f"tensor {str(name)[:80]!r} has no valid shape")
        if not _is_int_list(offsets) or len(offsets) != 2 or not 0 <= offsets[0] <= offsets[1] <= data_bytes:
            raise _Corrupt(f"tensor {str(name)[:80]!r} lies outside the file")
        total += math.prod(shape)
    return total


def _is_int_list(value: object) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
