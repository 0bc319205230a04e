"""Read a GGUF header fast: scalar metadata and tensor locations, skipping the vocabulary arrays.

gguf.GGUFReader turns each of a vocabulary's 100k strings into numpy views, which took 4 to 16 s a
load here; the weights never need them (the tokenizer is built once, then cached).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

# Metadata value types: fixed sizes and struct formats; 8 is a string, 9 an array.
_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_id: int
    dims: tuple[int, ...]  # innermost first, as GGUF lists them
    offset: int  # from the start of the file


@dataclass(frozen=True)
class GGUFHeader:
    fields: dict  # scalars and strings; arrays are left out
    tensors: dict[str, TensorInfo]
    array_lengths: dict[str, int] = field(default_factory=dict)  # each array's item count (e.g. the vocabulary's)


def read_header(path: Path) -> GGUFHeader:
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _parse(data)


def _parse(data) -> GGUFHeader:
    if bytes(data[:4]) != b"GGUF":
        raise ValueError("it does not start with the GGUF magic bytes")
    offset = 4
    version, tensor_count, kv_count = struct.unpack_from("<IQQ", data, offset)
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    offset += 20

    def string(at: int) -> tuple[str, int]:
        (length,) = struct.unpack_from("<Q", data, at)
        return bytes(data[at + 8:at + 8 + length]).decode("utf-8", errors="replace"), at + 8 + length

    def skip(value_type: int, at: int) -> int:
        if value_type in _FORMATS:
            return at + struct.calcsize(_FORMATS[value_type])
        if value_type == _STRING:
            (length,) = struct.unpack_from("<Q", data, at)
            return at + 8 + length
        item_type, count = struct.unpack_from("<IQ", data, at)
        at += 12
        if item_type in _FORMATS:
            return at + count * struct.calcsize(_FORMATS[item_type])
        for _ in range(count):
            at = skip(item_type, at)
        return at

    fields: dict = {}
    array_lengths: dict[str, int] = {}
    for _ in range(kv_count):
        key, offset = string(offset)
        (value_type,) = struct.unpack_from("<I", data, offset)
        offset += 4
        if value_type in _FORMATS:
            (fields[key],) = struct.unpack_from(_FORMATS[value_type], data, offset)
        elif value_type == _STRING:
            fields[key], _ = string(offset)
        elif value_type == _ARRAY:
            (array_lengths[key],) = struct.unpack_from("<Q", data, offset + 4)
        offset = skip(value_type, offset)
    infos = []
    for _ in range(tensor_count):
        name, offset = string(offset)
        (n_dims,) = struct.unpack_from("<I", data, offset)
        dims = struct.unpack_from(f"<{n_dims}Q", data, offset + 4)
        type_id, relative = struct.unpack_from("<IQ", data, offset + 4 + 8 * n_dims)
        offset += 4 + 8 * n_dims + 12
        infos.append((name, type_id, dims, relative))
    alignment = fields.get("general.alignment", DEFAULT_ALIGNMENT)
    # As llama.cpp: the alignment must be a power of two, and every tensor's offset a multiple of it.
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"its general.alignment ({alignment}) is not a power of two")
    start = (offset + alignment - 1) // alignment * alignment
    if infos and start > len(data):
        raise ValueError(f"its general.alignment ({alignment}) puts the tensor data at byte {start:,}, past the end "
                         f"of the file ({len(data):,} bytes)")
    for name, _, _, relative in infos:
        if relative % alignment:
            raise ValueError(f"its tensor {name[:80]} starts at offset {relative:,}, not a multiple of the file's "
                             f"alignment ({alignment})")
    tensors = {name: TensorInfo(name, type_id, tuple(int(d) for d in dims), start + relative)
               for name, type_id, dims, relative in infos}
    return GGUFHeader(fields, tensors, array_lengths)
