"""Count a model's parameters from file headers alone (GGUF, safetensors), without reading any weights.

A header is untrusted input: every length and count in it is checked against the file's size before
it is used, and every problem becomes a ModelLoadError that names the file and what is wrong.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from pathlib import Path
from typing import TypeGuard

from core.errors import ModelLoadError

# GGUF metadata value types: fixed sizes in bytes; 8 is a string, 9 an array.
_GGUF_FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_MAX_DIMS = 8  # ggml's own limit is 4
_GGUF_MAX_NESTING = 8
# A safetensors header is JSON naming each tensor; 100 MB is far beyond any real one (the format caps it there).
_SAFETENSORS_MAX_HEADER = 100 * 2**20


class _Corrupt(Exception):
    """Internal: what is wrong with the header, turned into a ModelLoadError naming the file."""


class _UnknownType(Exception):
    """Internal: a tensor's quant type id is not one gguf knows."""


def gguf_parameter_count(path: Path) -> int | None:
    """Walk the header by hand: gguf.GGUFReader decodes every tokenizer string and takes seconds.

    None when the file is a valid GGUF this walker does not count (version 1); ModelLoadError when corrupt.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 24:
                raise _Corrupt(f"it is only {size} bytes long, too short for a GGUF header")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                reader = _Reader(data, size)
                total = _walk_gguf(reader)
                if reader.data_needed > size:
                    raise _Corrupt(f"it is truncated: its tensors need {reader.data_needed:,} bytes and the file "
                                   f"holds {size:,}")
                return total
    except _UnknownType as problem:
        raise ModelLoadError(f"the model file {path.name} uses a quant type this app does not know ({problem}); "
                             f"it may need a newer version of Latency Lab.") from None
    except _Corrupt as problem:
        raise ModelLoadError(f"the model file {path.name} is not a readable GGUF file: {problem}.") from None
    except OSError as error:
        raise ModelLoadError(f"the model file {path.name} could not be read: {error.strerror or error}.") from None


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


class _Reader:
    """Reads little-endian values from a buffer, refusing any read past its end."""

    def __init__(self, data, size: int):
        self.data = data
        self.size = size
        self.offset = 0
        self.data_needed = 0  # where the last tensor's data ends, once the header is walked

    def take(self, length: int) -> int:
        """Advance past length bytes; return where they start."""
        if length < 0 or length > self.size - self.offset:
            raise _Corrupt(f"the header is cut off or claims {length:,} bytes at byte {self.offset:,} "
                           f"of {self.size:,}")
        start = self.offset
        self.offset += length
        return start

    def unpack(self, fmt: str) -> tuple:
        start = self.take(struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.data, start)

    def count(self, what: str, smallest_item: int) -> int:
        """A count read from the header, refused when even the smallest items could not fit in the file."""
        (value,) = self.unpack("<Q")
        if value * smallest_item > self.size - self.offset:
            raise _Corrupt(f"it claims {value:,} {what} at byte {self.offset - 8:,}, more than the file can hold")
        return value

    def skip_string(self) -> None:
        (length,) = self.unpack("<Q")
        self.take(length)


def _walk_gguf(reader: _Reader) -> int | None:
    if bytes(reader.data[:4]) != b"GGUF":
        raise _Corrupt("it does not start with the GGUF magic bytes")
    reader.take(4)
    (version,) = reader.unpack("<I")
    if version < 2:
        return None  # version 1 used 32-bit counts; too old to count, not corrupt
    if version > 3:
        raise _Corrupt(f"its version {version} is unknown")
    tensor_count = reader.count("tensors", 8 + 4 + 8 + 4 + 8)
    kv_count = reader.count("metadata entries", 8 + 4)
    for _ in range(kv_count):
        reader.skip_string()
        (value_type,) = reader.unpack("<I")
        _skip_value(reader, value_type, 0)
    total = 0
    extents = []
    for _ in range(tensor_count):
        reader.skip_string()
        (n_dims,) = reader.unpack("<I")
        if not 1 <= n_dims <= _GGUF_MAX_DIMS:
            raise _Corrupt(f"a tensor claims {n_dims} dimensions at byte {reader.offset - 4:,}")
        dims = reader.unpack(f"<{n_dims}Q")
        type_id, offset = reader.unpack("<IQ")  # the quantisation type and the data offset
        total += math.prod(dims)
        extents.append((type_id, offset, math.prod(dims)))
    # Tensor data starts after the header, padded to an alignment (32 unless the file says otherwise);
    # counting no padding keeps the check safe whatever the alignment.
    reader.data_needed = reader.offset + max((offset + _tensor_bytes(type_id, count) for type_id, offset, count
                                              in extents), default=0)
    return total


def _tensor_bytes(type_id: int, count: int) -> int:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block_size, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
    except (ValueError, KeyError):
        raise _UnknownType(f"type id {type_id}") from None
    return count // block_size * block_bytes


def _skip_value(reader: _Reader, value_type: int, depth: int) -> None:
    if value_type in _GGUF_FIXED_SIZES:
        reader.take(_GGUF_FIXED_SIZES[value_type])
    elif value_type == _GGUF_STRING:
        reader.skip_string()
    elif value_type == _GGUF_ARRAY:
        if depth >= _GGUF_MAX_NESTING:
            raise _Corrupt("its metadata nests arrays too deeply")
        (item_type,) = reader.unpack("<I")
        item_size = _GGUF_FIXED_SIZES.get(item_type)
        count = reader.count("array items", item_size or 8)
        if item_size is not None:
            reader.take(count * item_size)
            return
        for _ in range(count):
            _skip_value(reader, item_type, depth + 1)
    else:
        raise _Corrupt(f"its metadata has an unknown value type {value_type} at byte {reader.offset - 4:,}")
