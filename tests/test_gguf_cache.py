"""The converted-model cache: verified on every load, and rebuilt when it is corrupt."""

import shutil

import pytest

from core.cache_paths import cache_root
from core.gguf_cache import MANIFEST_NAME, cache_folder_for, file_sha256, verify_cache
from core.loader import load_model


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

    reports = []
    reloaded = load_model(None, progress=lambda fraction, message: reports.append(message))
    assert any("first launch" in message for message in reports)  # the rebuild shows its progress
    assert verify_cache(copy, digest)
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
