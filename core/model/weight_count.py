"""Count a model's parameters from file headers alone (GGUF, safetensors), without reading any weights."""

from __future__ import annotations

import json
import math
import mmap
import struct
from pathlib import Path

# GGUF metadata value types: fixed sizes in bytes; 8 is a string, 9 an array.
_GGUF_FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def gguf_parameter_count(path: Path) -> int:
    """Walk the header by hand: gguf.GGUFReader decodes every tokenizer string and takes seconds."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError("not a GGUF file")
        version, tensor_count, kv_count = struct.unpack_from("<IQQ", data, 4)
        if version < 2:
            raise ValueError(f"GGUF version {version} is too old to count")
        offset = 4 + 4 + 8 + 8
        for _ in range(kv_count):
            offset = _skip_string(data, offset)
            (value_type,) = struct.unpack_from("<I", data, offset)
            offset = _skip_value(data, offset + 4, value_type)
        total = 0
        for _ in range(tensor_count):
            offset = _skip_string(data, offset)
            (n_dims,) = struct.unpack_from("<I", data, offset)
            dims = struct.unpack_from(f"<{n_dims}Q", data, offset + 4)
            offset += 4 + 8 * n_dims + 4 + 8  # dims, then the quantisation type and the data offset
            total += math.prod(dims)
        return total


def safetensors_parameter_count(folder: Path) -> int | None:
    """Sum of tensor sizes over every .safetensors file in the folder, or None when there is none."""
    files = sorted(Path(folder).glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            (header_length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(header_length))
        total += sum(math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__")
    return total


def _skip_string(data: mmap.mmap, offset: int) -> int:
    (length,) = struct.unpack_from("<Q", data, offset)
    return offset + 8 + length


def _skip_value(data: mmap.mmap, offset: int, value_type: int) -> int:
    if value_type in _GGUF_FIXED_SIZES:
        return offset + _GGUF_FIXED_SIZES[value_type]
    if value_type == _GGUF_STRING:
        return _skip_string(data, offset)
    if value_type == _GGUF_ARRAY:
        item_type, count = struct.unpack_from("<IQ", data, offset)
        offset += 12
        if item_type in _GGUF_FIXED_SIZES:
            return offset + count * _GGUF_FIXED_SIZES[item_type]
        for _ in range(count):
            offset = _skip_value(data, offset, item_type)
        return offset
    raise ValueError(f"unknown GGUF value type {value_type}")
