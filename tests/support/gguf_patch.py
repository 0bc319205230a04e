"""Edit a GGUF's header in place for crafted-file tests: a metadata number, or a tensor's dimensions."""

from __future__ import annotations

import struct
from dataclasses import dataclass

_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


@dataclass(frozen=True)
class Layout:
    fields: dict[str, tuple[int, str]]  # scalar key -> (offset of its value, struct format)
    tensors: dict[str, tuple[int, int]]  # tensor name -> (offset of its dims, how many)


def layout(data: bytes) -> Layout:
    """Where each scalar metadata value and each tensor's dimensions sit in a (well-formed) GGUF."""
    offset = 4
    _, tensor_count, kv_count = struct.unpack_from("<IQQ", data, offset)
    offset += 20

    def string(at: int) -> tuple[str, int]:
        (length,) = struct.unpack_from("<Q", data, at)
        return data[at + 8 : at + 8 + length].decode(), at + 8 + length

    def skip(kind: int, at: int) -> int:
        if kind in _FORMATS:
            return at + struct.calcsize(_FORMATS[kind])
        if kind == 8:
            return string(at)[1]
        item, count = struct.unpack_from("<IQ", data, at)
        at += 12
        for _ in range(count):
            at = skip(item, at)
        return at

    fields = {}
    for _ in range(kv_count):
        key, offset = string(offset)
        (kind,) = struct.unpack_from("<I", data, offset)
        offset += 4
        if kind in _FORMATS:
            fields[key] = (offset, _FORMATS[kind])
        offset = skip(kind, offset)
    tensors = {}
    for _ in range(tensor_count):
        name, offset = string(offset)
        (n_dims,) = struct.unpack_from("<I", data, offset)
        tensors[name] = (offset + 4, n_dims)
        offset += 4 + 8 * n_dims + 12
    return Layout(fields, tensors)


def patched(
    data: bytes, fields: dict[str, object] | None = None, dims: dict[str, tuple[int, ...]] | None = None
) -> bytes:
    """data with metadata values replaced (packed in each field's own type; ints wrap to its width) and tensors'
    dimensions replaced (rows first, as many as the tensor has)."""
    where = layout(data)
    edited = bytearray(data)
    for key, value in (fields or {}).items():
        offset, fmt = where.fields[key]
        if fmt[-1] in "fd":
            struct.pack_into(fmt, edited, offset, float(value))
        else:
            bits = 8 * struct.calcsize(fmt)
            struct.pack_into(fmt.upper() if fmt[-1] != "?" else fmt, edited, offset, int(value) % 2**bits)
    for name, rows_first in (dims or {}).items():
        offset, n_dims = where.tensors[name]
        if len(rows_first) != n_dims:
            raise ValueError(f"{name} has {n_dims} dimensions")
        struct.pack_into(f"<{n_dims}Q", edited, offset, *reversed(rows_first))
    return bytes(edited)
