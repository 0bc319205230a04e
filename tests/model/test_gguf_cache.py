"""The converted-model cache: verified on every load, and rebuilt when it is corrupt."""

import os
import shutil
import time
from pathlib import Path

import pytest

from core.cache_paths import cache_root
from core.model.gguf_cache import (
    LEGACY_STAGING_MAX_AGE_S,
    MANIFEST_NAME,
    cache_folder_for,
    file_sha256,
    remove_abandoned_staging,
    verify_cache,
)
from core.model.loader import load_model
from core.quant.gguf_header import read_header


@pytest.mark.model
def test_a_corrupted_cache_is_detected_and_rebuilt(embedded_model, tmp_path, monkeypatch):
    gguf = embedded_model.source.gguf_file
    digest = file_sha256(gguf)
    original = cache_folder_for(digest)
    assert verify_cache(original, digest)
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    copy = cache_folder_for(digest)
    assert copy != original and str(tmp_path) in str(copy)
    shutil.copytree(original, copy)
    assert verify_cache(copy, digest)

    weights = copy / "model.safetensors"
    with open(weights, "r+b") as handle:  # flip bytes in the middle: same size, wrong content
        handle.seek(weights.stat().st_size // 2)
        handle.write(b"\xff" * 64)
    assert not verify_cache(copy, digest)

    abandoned = staging_folder(copy.parent, f"{dead_pid()}-killed")  # a window closed mid-conversion

    reports = []
    reloaded = load_model(None, dtype="float32", progress=lambda fraction, message: reports.append(message))
    assert any("first launch" in message for message in reports)  # the rebuild shows its progress
    assert verify_cache(copy, digest)
    assert not abandoned.exists()
    assert [path.name for path in copy.parent.iterdir()] == [copy.name]  # and its own staging is gone too
    assert reloaded.weight_bytes == embedded_model.weight_bytes


def test_a_missing_or_foreign_manifest_fails_verification(tmp_path):
    folder = tmp_path / "cache-entry"
    folder.mkdir()
    assert not verify_cache(folder, "0" * 64)
    (folder / MANIFEST_NAME).write_text('{"format": 1, "gguf_sha256": "other", "files": {}}')
    assert not verify_cache(folder, "0" * 64)
    (folder / MANIFEST_NAME).write_text("{not json")
    assert not verify_cache(folder, "0" * 64)


def test_cache_root_honours_the_override(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path


def dead_pid() -> int:
    """A process id no process can have: one above the kernel's limit."""
    return int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def staging_folder(parent: Path, suffix: str) -> Path:
    folder = parent / f".building-{suffix}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"half written")
    return folder


def test_only_staging_folders_whose_process_is_gone_are_removed(tmp_path):
    dead = staging_folder(tmp_path, f"{dead_pid()}-abc")
    live = staging_folder(tmp_path, f"{os.getpid()}-def")  # another conversion still running
    legacy_old = staging_folder(tmp_path, "k2j3h4")
    legacy_new = staging_folder(tmp_path, "x9y8z7")
    old = time.time() - LEGACY_STAGING_MAX_AGE_S - 60
    os.utime(legacy_old, (old, old))
    finished = tmp_path / "0123abcd-v1"
    finished.mkdir()
    assert sorted(remove_abandoned_staging(tmp_path)) == sorted([dead, legacy_old])
    assert live.exists() and legacy_new.exists() and finished.exists()
    assert not dead.exists() and not legacy_old.exists()
    assert remove_abandoned_staging(tmp_path / "missing") == []


def test_the_native_cache_key_follows_the_model_not_its_quantisation(tmp_path):
    from tiny_gguf import write_tiny_family

    q8 = read_header(write_tiny_family(tmp_path / "q8.gguf", "llama", "Q8_0"))
    q4 = read_header(write_tiny_family(tmp_path / "q4.gguf", "llama", "Q4_0"))
    other_vocabulary = read_header(write_tiny_family(tmp_path / "vocab.gguf", "llama", "Q8_0", vocab=300))
    other_family = read_header(write_tiny_family(tmp_path / "qwen2.gguf", "qwen2", "Q8_0"))
    assert q8.tensors["blk.0.attn_q.weight"].type_id != q4.tensors["blk.0.attn_q.weight"].type_id
    assert q8.model_digest == q4.model_digest
    assert len({q8.model_digest, other_vocabulary.model_digest, other_family.model_digest}) == 3


def test_within_a_conversion_each_gguf_is_parsed_once_and_restored_after(tmp_path):
    import gguf
    from tiny_gguf import write_tiny_family

    from core.model.gguf_reads import shared_gguf_reads

    path = write_tiny_family(tmp_path / "tiny.gguf", "llama", "Q8_0", vocab=300)
    reader_class = gguf.GGUFReader
    with shared_gguf_reads():
        first, again = gguf.GGUFReader(str(path)), gguf.GGUFReader(path)
        assert first is again and isinstance(first, reader_class)
        assert first.fields["general.architecture"] is not None
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    assert gguf.GGUFReader is reader_class and gguf.GGUFReader(str(path)) is not first


@pytest.mark.model
@pytest.mark.subprocess
def test_a_load_from_the_cache_imports_no_auto_class(native_model):
    """With the tokenizer cached, a native load opens it and its config by their own classes: importing
    transformers' Auto classes (every family's mappings) cost each load of a GGUF half a second."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from core.model.loader import load_model\n"
        "load_model(None)\n"
        "auto = sorted(m for m in sys.modules if m.startswith('transformers.models.auto'))\n"
        "print(auto); sys.exit(1 if auto else 0)\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
