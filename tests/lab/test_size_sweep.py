"""The size sweep: the same question on models of several sizes, decode speed against weight bytes, and its verdict."""

from __future__ import annotations

import json

import pytest

from core.errors import InvalidSettingsError
from core.lab.config import LabConfig
from core.lab.results import results_from_json, results_to_json
from core.lab.runner import run_lab
from core.model.source import embedded_gguf_path
from tools import quant_files

pytestmark = [pytest.mark.model, pytest.mark.llama_cpp]


def test_each_model_is_timed_and_the_claim_judged_from_their_bytes(tmp_path):
    small, large = embedded_gguf_path(), quant_files.quant_file("Q8_0")  # 96 MB (Q4_1) and 1.5x that (Q8_0)
    missing = tmp_path / "not-here.gguf"
    config = LabConfig(sweeps=("size",), size_models=(str(large), str(missing), str(small)), new_tokens=8, repeats=1)
    results = run_lab(config)
    large_row, missing_row, small_row = results.size
    assert large_row["model"] == large.name and small_row["model"] == small.name
    assert missing_row["model"] == "not-here.gguf" and missing_row["error"] and "tpot_s" not in missing_row
    assert large_row["weight_bytes"] > 1.4 * small_row["weight_bytes"]
    for row in (small_row, large_row):
        assert row["tpot_s"] > 0 and row["decode_tok_s"] == pytest.approx(1 / row["tpot_s"])
        assert row["read_bytes_s"] == pytest.approx(row["weight_bytes"] * row["decode_tok_s"])
    (verdict,) = [v for v in results.verdicts if v["key"] == "size"]
    assert isinstance(verdict["holds"], bool) and verdict["evidence"].index(small.name) < verdict["evidence"].index(
        large.name
    )  # smallest first, whatever order they were named in
    assert results_from_json(json.dumps(json.loads(results_to_json(results)))).size == results.size


def test_the_size_sweep_needs_two_models():
    with pytest.raises(InvalidSettingsError, match="two or more models"):
        LabConfig(sweeps=("size",), size_models=("embedded",))
    with pytest.raises(InvalidSettingsError, match="two or more models"):
        LabConfig(sweeps=("size",), size_models=("embedded", "embedded"))


def test_each_model_s_weights_are_freed_once_its_row_is_measured():
    """A 7B and a 1B need not fit together: each model's C memory goes before the next loads, not at a collection."""
    from core.backend.choice import load_any

    loaded = []

    def load(*args, **kwargs):
        model = load_any(*args, **kwargs)
        loaded.append(model)
        return model

    small, large = embedded_gguf_path(), quant_files.quant_file("Q8_0")
    config = LabConfig(sweeps=("size",), size_models=(str(small), str(large)), new_tokens=2, repeats=1)
    results = run_lab(config, loader=load)
    assert [row["model"] for row in results.size] == [small.name, large.name] and len(loaded) == 2
    for model in loaded:
        with pytest.raises(RuntimeError, match="the model is closed"):
            model.model.kernel.embed([1])
