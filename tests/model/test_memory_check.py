"""Out of memory is answered before loading: parameter counts from file headers against free memory."""

import pytest

from core.errors import ModelLoadError
from core.model import memory_check
from core.model.preflight import check_before_loading
from core.model.source import embedded_gguf_path
from core.model.weight_count import gguf_parameter_count, safetensors_parameter_count


def test_parameter_counts_come_from_headers_and_match_the_model(embedded_model, tiny_model, tiny_model_folder):
    assert gguf_parameter_count(embedded_gguf_path()) == embedded_model.parameter_count
    assert safetensors_parameter_count(tiny_model_folder) == tiny_model.parameter_count


def test_a_folder_without_safetensors_has_no_count(tmp_path):
    assert safetensors_parameter_count(tmp_path) is None


def test_not_a_gguf_is_a_clear_error_naming_the_file(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"NOPE" + b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="fake.gguf is not a readable GGUF file"):
        gguf_parameter_count(path)


def test_a_model_larger_than_free_memory_is_refused_with_both_sizes(monkeypatch):
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 200 * 10**6)
    with pytest.raises(ModelLoadError) as refused:
        check_before_loading(None, "float32")
    message = str(refused.value)
    assert "needs about 0.5 GB of memory and only 0.2 GB is free" in message and "SmolLM2" in message
    # What would fit, in the same line: the file's own blocks, memory-mapped on the kernels (0.1 GB).
    assert "native (the file's own 0.1 GB, memory-mapped) would fit" in message and "\n" not in message


def test_a_real_size_float32_is_refused_before_any_work_naming_what_fits(monkeypatch, tmp_path):
    """float32 of a 7B is about 27 GB: refused in one line, with native named as what fits (its 3.9 GB file)."""
    from tools.real_size import write

    path = tmp_path / "llama-2-7b-Q4_0.gguf"
    write(path, "llama-2-7b", "Q4_0", header_only=True)  # the real header; the data a hole of its size
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 20 * 10**9)
    with pytest.raises(ModelLoadError) as refused:
        check_before_loading(str(path), "float32")
    message = str(refused.value)
    assert "as float32, but it needs about 27" in message and "only 20.0 GB is free" in message
    assert "native (the file's own 3.9 GB, memory-mapped) would fit" in message


def test_without_the_kernels_native_precision_needs_about_twice_the_file_not_a_float32_copy(monkeypatch, tmp_path):
    import core.kernels.build as build

    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))  # no kernels built here, and no compiler
    monkeypatch.setattr(build, "compiler", lambda: None)
    size = embedded_gguf_path().stat().st_size
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 3 * size)
    check_before_loading(None, "native")  # torch's int4 packing: fits where float32 (5x the file) would not
    with pytest.raises(ModelLoadError, match="needs about 0.5 GB"):
        check_before_loading(None, "float32")
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: size)
    with pytest.raises(ModelLoadError, match=r"as native, but it needs about 0\.2 GB of memory and only 0\.1 GB"):
        check_before_loading(None, "native")


def test_on_the_kernels_a_file_larger_than_free_memory_loads_with_a_warning_about_its_speed(monkeypatch, real_model):
    from core.model.loader import load_model

    size = embedded_gguf_path().stat().st_size
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: size // 2)
    check_before_loading(None, "native")  # memory-mapped: nothing to refuse
    loaded = load_model(None)
    note = loaded.describe().precision_note
    assert "larger than the free memory (0.0 GB)" in note and "read from disk as each token needs them" in note


def test_enough_memory_or_an_unknown_size_passes(monkeypatch, tmp_path):
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 10**12)
    check_before_loading(None, "float32")
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: None)
    check_before_loading(None, "float32")
    check_before_loading(str(tmp_path / "missing"), "float32")  # the loader reports a bad path itself


def test_the_check_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(memory_check, "available_memory_bytes", lambda: 1)
    monkeypatch.setenv("LATENCYLAB_SKIP_MEMORY_CHECK", "1")
    check_before_loading(None, "float32")


def test_free_memory_is_read_on_this_machine():
    available = memory_check.available_memory_bytes()
    assert available is None or available > 10**6


def test_an_address_space_limit_too_small_for_the_load_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(memory_check, "address_space_limit", lambda: 10**9)
    monkeypatch.setattr(memory_check, "address_space_in_use", lambda: 9 * 10**8)
    with pytest.raises(ModelLoadError) as refused:
        check_before_loading(None, "native")
    message = str(refused.value)
    assert "may use only 1.00 GB of address space (ulimit -v), 0.90 GB of it in use" in message and "\n" not in message
    assert "loading SmolLM2" in message and "ulimit -v unlimited" in message


def test_room_under_the_address_space_limit_or_no_limit_passes(monkeypatch):
    monkeypatch.setattr(memory_check, "address_space_in_use", lambda: 9 * 10**8)
    monkeypatch.setattr(memory_check, "address_space_limit", lambda: None)
    check_before_loading(None, "native")
    monkeypatch.setattr(memory_check, "address_space_limit", lambda: 4 * 10**9)
    check_before_loading(None, "native")


# The app as a user with `ulimit -v` runs it: torch and transformers imported (as by the time the tokenizer is built),
# then the limit set a little above what the process holds, short of the file and the tokenizer's room.
UNDER_A_LIMIT = """
import resource, sys
import torch, transformers
from core.model.memory_check import address_space_in_use
limit = address_space_in_use() + 150 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
from cli.main import main
sys.exit(main(["ask", "Hi", "--max-new-tokens", "3"]))
"""


@pytest.mark.model
@pytest.mark.subprocess
def test_ask_under_a_small_ulimit_v_ends_in_one_line_not_an_abort(tmp_path):
    """Was: the tokenizer's allocator aborted the process (exit 134, 'memory allocation of 64 bytes failed'), or the
    refused mmap read as 'truncated or corrupt'. Either refusal (the map or the tokenizer's room) is right here."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", UNDER_A_LIMIT], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    errors = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(errors) == 1 and "address space (ulimit -v)" in errors[0], errors
    assert "corrupt" not in done.stderr and "Traceback" not in done.stderr
