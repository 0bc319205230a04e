"""The chosen model's figures from its header alone: the embedded model's, a crafted file's, and what they say
against crafted memory and ceilings; a broken file is one line, never a traceback."""

from __future__ import annotations

import pytest

from core.doctor.check import FAIL, INFO, OK, WARN
from core.doctor.memory import Memory
from core.doctor.model_checks import ceilings_check, decode_check, fit_check, model_check
from core.doctor.model_figures import model_figures
from core.doctor.run import run_doctor
from core.model.source import resolve_model_source, with_header
from core.quant.gguf_blocks import GGUFWeights
from core.quant.gguf_header import read_header
from core.roofline.ceilings import Ceiling, Ceilings
from core.roofline.counts import decode_counts
from tests.tiny_gguf import HEADS, HIDDEN, KV_HEADS, LAYERS, write_tiny_family

GB = 10**9


def figures_of(spec, dtype="native"):
    return model_figures(with_header(resolve_model_source(spec)), dtype)


def dram(bytes_per_s: float) -> Ceilings:
    ceiling = Ceiling("dram", "DRAM", "byte/s", bytes_per_s, bytes_per_s, 5, "crafted")
    return Ceilings({"dram": ceiling}, "a CPU", 2, None, "2026-01-01T00:00:00+00:00", 0.0, False, from_cache=True)


def memory(available: int) -> Memory:
    return Memory(64 * GB, available, 0, 0, None)


def test_the_embedded_models_figures_come_from_its_header():
    figures = figures_of("embedded")
    header = read_header(figures.file)
    assert figures.context == header.fields["llama.context_length"] == 8192
    assert 0 < figures.weight_bytes <= figures.file_bytes
    assert figures.parameters == header.parameter_count
    assert figures.file_type == "Q4_1"
    # float16 keys and values: 2 x 30 layers x 3 KV heads x 64 dims x 2 bytes
    assert figures.kv_bytes_per_token() == 23_040
    assert figures.kv_bytes_at_context() == 23_040 * 8192
    check = model_check(figures)
    assert check.status == INFO and "context 8,192 tokens" in check.figure and "22.5 KiB a token" in check.figure


def test_a_crafted_files_context_and_kv_cache(tmp_path):
    path = write_tiny_family(tmp_path / "tiny.gguf", "llama", vocab=512)
    figures = figures_of(str(path))
    head_dim = HIDDEN // HEADS
    assert figures.context == 256
    assert figures.kv_bytes_per_token() == 2 * LAYERS * KV_HEADS * head_dim * 2
    weights = GGUFWeights(path)
    assert figures.weight_bytes == sum(weights.raw(name).nbytes for name in weights.names())  # as the file holds them


def test_converted_dtypes_count_their_own_bytes():
    native, converted = figures_of("embedded"), figures_of("embedded", "float32")
    assert converted.weight_bytes == 4 * converted.parameters
    assert converted.kv_bytes_per_token() == 2 * native.kv_bytes_per_token()  # float32 keys and values
    assert figures_of("embedded", "int4").shape is None  # per-group scales: not estimated


def test_fit_against_free_memory():
    figures = figures_of("embedded")
    weights, kv = figures.load_bytes, figures.kv_bytes_at_context()
    roomy = fit_check(figures, memory(weights + kv + GB))
    assert roomy.status == OK
    # The mapped file whole, beside the model line's weights: "needs 98 MB for weights" read as a second count of them
    assert (
        roomy.figure.startswith("needs 98 MB for the model as loaded")
        and "weights 97 MB" in model_check(figures).figure
    )
    tight = fit_check(figures, memory(weights + kv // 2))
    assert tight.status == WARN
    assert f"past about {(kv // 2) // figures.kv_bytes_per_token():,} tokens" in tight.advice
    too_big = fit_check(figures, memory(weights // 2))
    assert too_big.status == WARN and "smaller quant" in too_big.advice
    assert fit_check(figures, Memory(None, None, None, None, None)).figure.startswith("unknown")


def test_expected_decode_speed_from_the_dram_ceiling():
    figures = figures_of("embedded")
    check = decode_check(figures, dram(20e9))
    first = decode_counts(figures.shape, 0).bytes
    assert check.status == OK
    assert check.value["tokens_per_s"] == pytest.approx(20e9 / first)
    assert check.value["tokens_per_s_at_context"] < check.value["tokens_per_s"]  # the KV cache read grows
    assert check.figure.startswith(f"at most {20e9 / first:,.0f} tok/s")
    without = decode_check(figures, None)
    assert without.status == INFO and "no memory ceiling measured" in without.figure


def test_no_ceilings_say_how_to_measure_them():
    check = ceilings_check(None)
    assert check.status == INFO
    assert "latencylab doctor --measure" in check.advice and "latencylab bench --sweeps bandwidth" in check.advice
    loaded = dram(5e9)
    loaded.loaded = True
    assert ceilings_check(loaded).status == WARN


def test_a_broken_model_file_is_one_line(tmp_path):
    path = write_tiny_family(tmp_path / "tiny.gguf", "llama", vocab=512)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut short
    report = run_doctor(str(path), probe_s=0.05)
    model = report.check("model")
    assert model is not None and model.status == FAIL and model.figure.startswith("cannot be read: ")
    assert "truncated" in model.figure and "download it again" in model.advice  # there, but not readable
    assert report.failed
    assert report.check("cores") is not None and report.check("kernels") is not None  # the rest still checked


def test_a_device_the_model_cannot_load_on_fails_before_any_load(tmp_path):
    """`--device cuda` with a GGUF in its own quants: refused with or without a GPU (the layers are torch's CPU
    kernels there), so the doctor says so as the load would, instead of all ok."""
    import torch

    path = write_tiny_family(tmp_path / "tiny.gguf", "llama", vocab=512)
    report = run_doctor(str(path), device="cuda", probe_s=0.05)
    device = report.check("device")
    why = "CPU kernels" if torch.cuda.is_available() else "no CUDA device"
    assert device is not None and device.status == FAIL and why in device.figure
    assert "use --device cpu" in device.advice and report.failed
    assert run_doctor(str(path), probe_s=0.05).check("device") is None  # the CPU needs no line


def test_a_model_folders_figures_come_from_its_config(tmp_path):
    import json

    import numpy as np
    from safetensors.numpy import save_file

    from core.model.source import ModelSource

    config = {
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file({"embed": np.zeros((100, 64), dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    figures = model_figures(ModelSource("folder", str(tmp_path), "tiny"), "float32")
    assert figures.context == 2048 and figures.parameters == 6400
    assert figures.weight_bytes == 6400 * 4
    assert figures.kv_bytes_per_token() == 2 * 4 * 2 * 16 * 4  # keys and values, 4 layers, 2 KV heads of 16, float32
    (tmp_path / "config.json").write_text('{"num_hidden_layers": "many"')
    broken = model_figures(ModelSource("folder", str(tmp_path), "tiny"), "float32")
    assert broken.shape is None and broken.notes == ["its config.json could not be read"]


def test_measure_runs_the_roofline_measurement_and_uses_it(monkeypatch):
    """--measure: the roofline's own measurement (replaced here by a crafted result: it takes about 10 s) is shown as
    measured now, and the decode line turns it into tok/s."""
    import core.roofline.ceilings

    asked = []
    monkeypatch.setattr(
        core.roofline.ceilings, "measure_ceilings", lambda *args, **kwargs: asked.append(1) or dram(25e9)
    )
    report = run_doctor("embedded", measure=True, probe_s=0.05)
    assert asked == [1]
    assert "measured now" in report.check("ceilings").figure
    decode = report.check("decode_ceiling")
    assert decode.status == OK and decode.value["ceiling_bytes_per_s"] == 25e9
