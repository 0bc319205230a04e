"""Model-file headers are untrusted: truncated, flipped or absurd GGUF and safetensors headers give one clear error."""

from __future__ import annotations

import json
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ModelLoadError
from core.model.preflight import check_before_loading
from core.model.source import embedded_gguf_path
from core.model.weight_count import gguf_parameter_count, safetensors_parameter_count

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def header_end(path) -> int:
    """Where the real GGUF's header (metadata and tensor infos, then alignment padding) ends: its first tensor."""
    from core.quant.gguf_header import read_header

    return min(info.offset for info in read_header(path).tensors.values())


@pytest.fixture(scope="module")
def real_header():
    path = embedded_gguf_path()
    end = header_end(path)
    with open(path, "rb") as handle:
        return handle.read(end + 64)


def outcome(count_function, target, name: str):
    """A count, None (unknown) or ModelLoadError naming the file; any other exception fails the test."""
    try:
        result = count_function(target)
    except ModelLoadError as error:
        assert name in str(error) and "\n" not in str(error)
        return "error"
    assert result is None or (isinstance(result, int) and result >= 0)
    return result


@FUZZ
@given(fraction=st.floats(0.0, 1.0))
def test_a_gguf_cut_anywhere_in_its_header(tmp_path, real_header, fraction):
    path = tmp_path / "cut.gguf"
    path.write_bytes(real_header[: int(len(real_header) * fraction)])
    outcome(gguf_parameter_count, path, "cut.gguf")


@FUZZ
@given(
    flips=st.lists(st.tuples(st.integers(0, 4095), st.integers(1, 255)), min_size=1, max_size=6),
    anywhere=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 255)), max_size=3),
)
def test_a_gguf_with_flipped_header_bytes(tmp_path, real_header, flips, anywhere):
    data = bytearray(real_header)
    for position, mask in flips:
        data[position] ^= mask
    for fraction, mask in anywhere:
        data[int(fraction * (len(data) - 1))] ^= mask
    path = tmp_path / "flipped.gguf"
    path.write_bytes(bytes(data))
    outcome(gguf_parameter_count, path, "flipped.gguf")


def gguf(*parts: bytes) -> bytes:
    return b"GGUF" + b"".join(parts)


ABSURD_GGUF = {
    "empty file": b"",
    "magic only": b"GGUF",
    "2^63 tensors": gguf(struct.pack("<IQQ", 3, 2**63, 0)),
    "2^62 metadata entries": gguf(struct.pack("<IQQ", 3, 0, 2**62)),
    "key of 2^64-1 bytes": gguf(struct.pack("<IQQ", 3, 0, 1), struct.pack("<Q", 2**64 - 1)),
    "array of 2^61 uint64": gguf(
        struct.pack("<IQQ", 3, 0, 1), struct.pack("<Q", 1), b"k", struct.pack("<IIQ", 9, 10, 2**61)
    ),
    "array of 2^60 strings": gguf(
        struct.pack("<IQQ", 3, 0, 1), struct.pack("<Q", 1), b"k", struct.pack("<IIQ", 9, 8, 2**60)
    ),
    "unknown value type": gguf(struct.pack("<IQQ", 3, 0, 1), struct.pack("<Q", 1), b"k", struct.pack("<I", 77)),
    "arrays nested 100 deep": gguf(
        struct.pack("<IQQ", 3, 0, 1), struct.pack("<Q", 1), b"k", struct.pack("<I", 9), struct.pack("<IQ", 9, 1) * 100
    ),
    "tensor of 2^32-1 dimensions": gguf(
        struct.pack("<IQQ", 3, 1, 0), struct.pack("<Q", 1), b"t", struct.pack("<I", 2**32 - 1), b"\0" * 64
    ),
    "version 99": gguf(struct.pack("<IQQ", 99, 0, 0)),
}


@pytest.mark.parametrize("name", list(ABSURD_GGUF))
def test_absurd_gguf_headers_are_refused_in_one_line(tmp_path, name):
    path = tmp_path / "absurd.gguf"
    path.write_bytes(ABSURD_GGUF[name])
    assert outcome(gguf_parameter_count, path, "absurd.gguf") == "error"


def test_a_version_one_gguf_is_unknown_not_corrupt(tmp_path):
    path = tmp_path / "old.gguf"
    path.write_bytes(gguf(struct.pack("<III", 1, 0, 0), b"\0" * 16))
    assert gguf_parameter_count(path) is None


def safetensors_bytes(header: object, data: bytes = b"", length: int | None = None) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


GOOD_HEADER = {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {"format": "pt"}}
ABSURD_SAFETENSORS = {
    "3 bytes": b"abc",
    "header of 2^62 bytes": safetensors_bytes(GOOD_HEADER, b"\0" * 24, length=2**62),
    "header longer than the file": safetensors_bytes(GOOD_HEADER, length=10_000),
    "header not JSON": safetensors_bytes(b"{not json"),
    "header not UTF-8": safetensors_bytes(b"\xff\xfe"),
    "header a list": safetensors_bytes([1, 2, 3]),
    "shape not a list": safetensors_bytes({"w": {"shape": "big", "data_offsets": [0, 0]}}),
    "negative shape": safetensors_bytes({"w": {"shape": [-1, 2**62], "data_offsets": [0, 0]}}),
    "offsets past the end": safetensors_bytes({"w": {"shape": [2**40], "data_offsets": [0, 2**42]}}, b"\0" * 24),
    "entry not an object": safetensors_bytes({"w": 5}),
    "deep JSON": safetensors_bytes(b"[" * 100_000 + b"]" * 100_000),
}


@pytest.mark.parametrize("name", list(ABSURD_SAFETENSORS))
def test_absurd_safetensors_headers_are_refused_in_one_line(tmp_path, name):
    (tmp_path / "model.safetensors").write_bytes(ABSURD_SAFETENSORS[name])
    assert outcome(safetensors_parameter_count, tmp_path, "model.safetensors") == "error"


def test_a_good_safetensors_header_is_counted(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(GOOD_HEADER, b"\0" * 24))
    assert safetensors_parameter_count(tmp_path) == 6


@FUZZ
@given(cut=st.floats(0.0, 1.0), flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 255)), max_size=4))
def test_the_real_tiny_safetensors_cut_or_flipped(tmp_path_factory, tiny_model_folder, cut, flips):
    original = (tiny_model_folder / "model.safetensors").read_bytes()
    (header_length,) = struct.unpack("<Q", original[:8])
    data = bytearray(original[: 8 + header_length + 64])
    for fraction, mask in flips:
        data[int(fraction * (len(data) - 1))] ^= mask
    folder = tmp_path_factory.mktemp("cut")
    (folder / "model.safetensors").write_bytes(bytes(data[: max(int(len(data) * cut), 0)]))
    outcome(safetensors_parameter_count, folder, "model.safetensors")


@pytest.mark.parametrize("make", ["truncated gguf", "3-byte safetensors", "2^62-byte header"])
def test_the_cli_answers_a_corrupt_model_file_in_one_line(tmp_path, make, run_cli):
    if make == "truncated gguf":
        target = tmp_path / "t.gguf"
        with open(embedded_gguf_path(), "rb") as handle:
            target.write_bytes(handle.read(1000))  # `head -c 1000 embedded.gguf > t.gguf`
        name = "t.gguf"
    else:
        target = tmp_path / "folder"
        target.mkdir()
        (target / "config.json").write_text(json.dumps({"model_type": "llama"}))
        body = b"abc" if make == "3-byte safetensors" else safetensors_bytes(GOOD_HEADER, length=2**62)
        (target / "model.safetensors").write_bytes(body)
        name = "model.safetensors"
    with pytest.raises(ModelLoadError, match=name):
        check_before_loading(str(target), "float32")
    result = run_cli("ask", "hi", "--model", str(target), "--max-new-tokens", "2")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("latencylab:")]
    assert len(said) == 1 and said[0].startswith("latencylab: error: the model file " + name), result.stderr


def test_a_seeded_table_of_cuts_through_the_whole_gguf_header(tmp_path, real_header):
    """Beyond hypothesis's sample: 200 seeded cut points, each either counted or refused by name."""
    rng = random.Random(15)
    results = set()
    for cut in sorted(rng.randrange(len(real_header)) for _ in range(200)):
        path = tmp_path / f"cut-{cut}.gguf"
        path.write_bytes(real_header[:cut])
        results.add(outcome(gguf_parameter_count, path, path.name))
        path.unlink()
    assert results == {"error"}  # a header cut short is never mistaken for a model
