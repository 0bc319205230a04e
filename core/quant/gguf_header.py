"""Read a GGUF header once, checked: scalar metadata, array lengths and tensor locations, skipping the arrays' items.

The one walker of GGUF headers. A load reads it once (ModelSource.header) and passes it on: the memory check,
the kernels' check and the weights' reader all take the same GGUFHeader.

A header is untrusted input: every length and count in it is checked against the file's size before it is used,
and every problem becomes a GGUFHeaderError saying what is wrong. gguf.GGUFReader turns each of a vocabulary's
100k strings into numpy views, which took 4 to 16 s a load here; the weights never need them.
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

# Metadata value types: fixed sizes and struct formats; 8 is a string, 9 an array.
_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32
_MAX_DIMS = 8  # ggml's own limit is 4
_MAX_NESTING = 8
_SMALLEST_TENSOR_ENTRY = 8 + 4 + 8 + 4 + 8  # an empty name, one dimension, its type and its offset
_SMALLEST_METADATA_ENTRY = 8 + 4  # an empty key and its type
# Metadata that says how the weights are encoded, not what the model is: llama.cpp's quantiser rewrites these and
# keeps the rest, so two quantisations of one model share everything a tokenizer and a config are built from.
_ENCODING_KEYS = ("general.file_type", "general.quantization_version")
_ENCODING_PREFIX = "quantize."


class GGUFHeaderError(ValueError):
    """What is wrong with a GGUF header, in words that follow "the file is not a readable GGUF file: "."""


class UnknownQuantType(GGUFHeaderError):
    """A tensor's quant type id is not one gguf knows: the file may be newer than this app."""

    def __init__(self, type_id: int):
        super().__init__(f"type id {type_id}")
        self.type_id = type_id


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_id: int
    dims: tuple[int, ...]  # innermost first, as GGUF lists them
    offset: int  # from the start of the file


@dataclass(frozen=True)
class GGUFHeader:
    version: int  # 1 is too old to read: then fields and tensors are empty
    fields: dict  # scalars and strings; arrays are left out
    tensors: dict[str, TensorInfo]
    array_lengths: dict[str, int] = field(default_factory=dict)  # each array's item count (e.g. the vocabulary's)
    # sha256 of the metadata entries, bytes as stored, but for those about the weights' encoding: equal for every
    # quantisation of one model, so its tokenizer is built once for all of them (and a 4 GB file is not hashed whole).
    model_digest: str = ""

    @property
    def readable(self) -> bool:
        return self.version >= 2

    @property
    def parameter_count(self) -> int:
        return sum(math.prod(info.dims) for info in self.tensors.values())


def read_header(path: Path) -> GGUFHeader:
    """The file's header; GGUFHeaderError (or UnknownQuantType) when it is corrupt, OSError when unreadable."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < 24:
            raise GGUFHeaderError(f"it is only {size} bytes long, too short for a GGUF header")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(_Reader(data, size))


_LENGTH = struct.Struct("<Q")


class _Reader:
    """Reads little-endian values from a buffer, refusing any read past its end."""

    def __init__(self, data, size: int):
        self.data = data
        self.size = size
        self.offset = 0

    def take(self, length: int) -> int:
        """Advance past length bytes; return where they start."""
        if length < 0 or length > self.size - self.offset:
            raise GGUFHeaderError(
                f"the header is cut off or claims {length:,} bytes at byte {self.offset:,} of {self.size:,}"
            )
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
            raise GGUFHeaderError(
                f"it claims {value:,} {what} at byte {self.offset - 8:,}, more than the file can hold"
            )
        return value

    def string(self) -> str:
        (length,) = self.unpack("<Q")
        start = self.take(length)
        return bytes(self.data[start : start + length]).decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        (length,) = self.unpack("<Q")
        self.take(length)


def _parse(reader: _Reader) -> GGUFHeader:
    if bytes(reader.data[:4]) != b"GGUF":
        raise GGUFHeaderError("it does not start with the GGUF magic bytes")
    reader.take(4)
    (version,) = reader.unpack("<I")
    if version < 2:
        return GGUFHeader(version, {}, {})  # version 1 used 32-bit counts: too old to read, not corrupt
    if version > 3:
        raise GGUFHeaderError(f"its version {version} is unknown")
    tensor_count = reader.count("tensors", _SMALLEST_TENSOR_ENTRY)
    kv_count = reader.count("metadata entries", _SMALLEST_METADATA_ENTRY)
    fields: dict = {}
    array_lengths: dict[str, int] = {}
    digest = hashlib.sha256()
    for _ in range(kv_count):
        entry = reader.offset
        key = reader.string()
        (value_type,) = reader.unpack("<I")
        if value_type in _FORMATS:
            (fields[key],) = struct.unpack_from(_FORMATS[value_type], reader.data, reader.offset)
            _skip_value(reader, value_type, 0)
        elif value_type == _STRING:
            fields[key] = reader.string()
        else:
            if value_type == _ARRAY and reader.offset + 12 <= reader.size:
                (array_lengths[key],) = struct.unpack_from("<Q", reader.data, reader.offset + 4)
            _skip_value(reader, value_type, 0)
        if key not in _ENCODING_KEYS and not key.startswith(_ENCODING_PREFIX):
            digest.update(reader.data[entry : reader.offset])
    infos = []
    for _ in range(tensor_count):
        name = reader.string()
        (n_dims,) = reader.unpack("<I")
        if not 1 <= n_dims <= _MAX_DIMS:
            raise GGUFHeaderError(f"a tensor claims {n_dims} dimensions at byte {reader.offset - 4:,}")
        dims = reader.unpack(f"<{n_dims}Q")
        type_id, relative = reader.unpack("<IQ")  # the quantisation type and the data's offset
        infos.append((name, type_id, tuple(int(d) for d in dims), relative))
    _check_data_fits(reader, infos)
    alignment = fields.get("general.alignment", DEFAULT_ALIGNMENT)
    # As llama.cpp: the alignment must be a power of two, and every tensor's offset a multiple of it.
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFHeaderError(f"its general.alignment ({alignment}) is not a power of two")
    start = (reader.offset + alignment - 1) // alignment * alignment
    if infos and start > reader.size:
        raise GGUFHeaderError(
            f"its general.alignment ({alignment}) puts the tensor data at byte {start:,}, past "
            f"the end of the file ({reader.size:,} bytes)"
        )
    for name, _, _, relative in infos:
        if relative % alignment:
            raise GGUFHeaderError(
                f"its tensor {name[:80]} starts at offset {relative:,}, not a multiple of the "
                f"file's alignment ({alignment})"
            )
    tensors = {name: TensorInfo(name, type_id, dims, start + relative) for name, type_id, dims, relative in infos}
    return GGUFHeader(version, fields, tensors, array_lengths, digest.hexdigest())


def _check_data_fits(reader: _Reader, infos: list) -> None:
    """The tensors' data must fit after the header. Counting no alignment padding keeps this safe whatever the
    alignment; the weights' reader checks each tensor's exact extent (core/quant/gguf_blocks.py)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    needed, last = 0, ""
    for name, type_id, dims, relative in infos:
        try:
            block_size, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
        except (ValueError, KeyError):
            raise UnknownQuantType(type_id) from None
        end = relative + math.prod(dims) // block_size * block_bytes
        if end > needed:
            needed, last = end, name
    if infos and reader.offset + needed > reader.size:
        raise GGUFHeaderError(
            f"it is truncated: its tensors need {reader.offset + needed:,} bytes (to the end of "
            f"{last[:80]}) and the file holds {reader.size:,}"
        )


def _skip_value(reader: _Reader, value_type: int, depth: int) -> None:
    if value_type in _FORMATS:
        reader.take(struct.calcsize(_FORMATS[value_type]))
    elif value_type == _STRING:
        reader.skip_string()
    elif value_type == _ARRAY:
        if depth >= _MAX_NESTING:
            raise GGUFHeaderError("its metadata nests arrays too deeply")
        (item_type,) = reader.unpack("<I")
        item_size = struct.calcsize(_FORMATS[item_type]) if item_type in _FORMATS else None
        count = reader.count("array items", item_size or 8)
        if item_size is not None:
            reader.take(count * item_size)
            return
        if item_type == _STRING:
            _skip_strings(reader, count)
            return
        for _ in range(count):
            _skip_value(reader, item_type, depth + 1)
    else:
        raise GGUFHeaderError(f"its metadata has an unknown value type {value_type} at byte {reader.offset - 4:,}")


def _skip_strings(reader: _Reader, count: int) -> None:
    """count strings skipped in one tight loop: a vocabulary and its merges are most of a header (Llama 3's, 400,000
    strings), and the general path's calls per string took 0.2 s for SmolLM2's 98,000. A string that runs past the
    end is refused by the general path, with its message."""
    data, size, offset = reader.data, reader.size, reader.offset
    length_at = _LENGTH.unpack_from
    for _ in range(count):
        if offset + 8 <= size:
            (length,) = length_at(data, offset)
            if length <= size - offset - 8:
                offset += 8 + length
                continue
        reader.offset = offset
        reader.skip_string()  # the string at offset runs past the end: refused there, with the general path's words
        offset = reader.offset
    reader.offset = offset


def raw_metadata(path: Path, prefix: str) -> list[bytes]:
    """The metadata entries whose keys start with prefix, each as its bytes in the file (key, type and value): what a
    writer copies to give another file the same tokenizer without decoding its 100k strings."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        reader = _Reader(data, os.fstat(handle.fileno()).st_size)
        if bytes(data[:4]) != b"GGUF":
            raise GGUFHeaderError("it does not start with the GGUF magic bytes")
        reader.take(4)
        (version,) = reader.unpack("<I")
        if version not in (2, 3):
            raise GGUFHeaderError(f"its version {version} is not one this reader copies from")
        reader.count("tensors", _SMALLEST_TENSOR_ENTRY)
        kv_count = reader.count("metadata entries", _SMALLEST_METADATA_ENTRY)
        entries = []
        for _ in range(kv_count):
            entry = reader.offset
            key = reader.string()
            (value_type,) = reader.unpack("<I")
            _skip_value(reader, value_type, 0)
            if key.startswith(prefix):
                entries.append(bytes(data[entry : reader.offset]))
        return entries
