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


def test_a_native_load_resolves_its_spec_once_and_walks_its_header_once(tmp_path, monkeypatch):
    """The issue's count was 3 resolutions and 4-5 header walks per load: now the header is read once and passed on."""
    import sys

    from tiny_gguf import write_tiny_llama

    import core.model.source
    import core.quant.gguf_header

    path = write_tiny_llama(tmp_path / "tiny.gguf")
    walks, resolutions = [], []
    parse, resolve = core.quant.gguf_header._parse, core.model.source.resolve_model_source
    monkeypatch.setattr(core.quant.gguf_header, "_parse", lambda reader: walks.append(1) or parse(reader))

    def counted_resolve(spec):
        resolutions.append(spec)
        return resolve(spec)

    for module in [module for name, module in sys.modules.items() if name.startswith("core.") and module]:
        if getattr(module, "resolve_model_source", None) is resolve:
            monkeypatch.setattr(module, "resolve_model_source", counted_resolve)
    loaded = load_model(str(path))  # native: the memory check, the kernels' check and the weights' reader
    assert loaded.precision.startswith("native") and loaded.parameter_count > 0
    assert (len(resolutions), len(walks)) == (1, 1)
