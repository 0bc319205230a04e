"""Loading: the embedded GGUF, a local folder, progress reports, and one clear error for every failure."""

import pytest

from core.errors import ModelLoadError
from core.model.loader import load_model


def test_embedded_model_facts(embedded_model):
    assert "SmolLM2-135M" in embedded_model.name
    assert embedded_model.dtype == "float32" and embedded_model.device == "cpu"
    assert embedded_model.context_window == 8192
    assert 130e6 < embedded_model.parameter_count < 140e6
    assert embedded_model.weight_bytes == embedded_model.parameter_count * 4
    assert embedded_model.tokenizer.eos_token_id in embedded_model.eos_token_ids


def test_local_folder_loads_and_reports_progress(tiny_model_folder):
    reports = []
    loaded = load_model(str(tiny_model_folder), dtype="bfloat16", progress=lambda f, m: reports.append((f, m)))
    assert loaded.source.kind == "folder" and loaded.dtype == "bfloat16"
    assert str(next(loaded.model.parameters()).dtype) == "torch.bfloat16"
    fractions = [fraction for fraction, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) >= 3


def test_missing_path_says_what_was_tried(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelLoadError, match="no such file or folder") as caught:
        load_model(str(missing))
    assert str(missing) in str(caught.value)


def test_unknown_hub_id_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not found locally") as caught:
        load_model("latencylab-test/definitely-not-a-model")
    assert "latencylab-test/definitely-not-a-model" in str(caught.value)


def test_corrupt_gguf_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00\x01garbage" * 100)
    with pytest.raises(ModelLoadError, match="not a readable GGUF file") as caught:
        load_model(str(broken))
    assert "broken.gguf" in str(caught.value)


def test_folder_without_weights_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelLoadError, match="neither a config.json nor a .gguf"):
        load_model(str(tmp_path))


def test_unknown_dtype_is_refused_before_loading():
    with pytest.raises(ModelLoadError, match="dtype must be one of"):
        load_model(None, dtype="float8")
