"""Security defaults: no remote code, no pickle, no network for local models, unless the user says so by name."""

import json
import os

import pytest
from no_network import latencylab_offline

import core.model.loader
from core.errors import ModelLoadError
from core.model.loader import load_model
from core.model.offline import OFFLINE_VARIABLES, use_offline_mode_for
from core.model.preflight import check_before_loading


def test_risky_flags_are_off_unless_named_and_warn_when_named(tmp_path, run_cli):
    plain = run_cli("ask", "hi", "--model", str(tmp_path / "missing"))
    assert plain.returncode == 1 and "warning" not in plain.stderr
    risky = run_cli("ask", "hi", "--model", str(tmp_path / "missing"), "--trust-remote-code", "--allow-pickle")
    assert risky.returncode == 1
    assert "warning: --trust-remote-code lets a model folder run its own Python code" in risky.stderr
    assert "warning: --allow-pickle lets the loader read pickle checkpoints" in risky.stderr


def test_the_flags_reach_the_loader_from_the_cli(monkeypatch, tmp_path, capsys):
    from cli.main import main

    seen = []

    def fake_load(spec, **kwargs):
        seen.append(kwargs)
        raise ModelLoadError("stop here")

    monkeypatch.setattr(core.model.loader, "load_model", fake_load)
    assert main(["ask", "hi", "--model", "embedded"]) == 1
    assert main(["--trust-remote-code", "ask", "hi", "--allow-pickle"]) == 1
    assert [(k["trust_remote_code"], k["allow_pickle"]) for k in seen] == [(False, False), (True, True)]
    assert "warning: --trust-remote-code" in capsys.readouterr().err


def test_the_flags_reach_the_loader_from_the_window(qtbot, open_window, monkeypatch):
    seen = []

    def fake_load(spec, **kwargs):
        seen.append(kwargs)
        raise ModelLoadError("stop here")

    monkeypatch.setattr(core.model.loader, "load_model", fake_load)
    for flags in ({}, {"trust_remote_code": True, "allow_pickle": True}):
        window = open_window(show=False, **flags)
        with qtbot.waitSignal(window.model_failed, timeout=30_000):
            window.start_loading("embedded", "float32")
        if flags:
            assert "Security: trust_remote_code is on" in window.chat_panel.transcript.toPlainText()
        window.close()
    assert [(k["trust_remote_code"], k["allow_pickle"]) for k in seen] == [(False, False), (True, True)]


@pytest.fixture
def pickle_model_folder(tmp_path, tiny_model_folder):
    """The tiny model saved the old way: pytorch_model.bin, a pickle."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tmp_path / "pickled"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_folder)
    folder.mkdir()
    model.config.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    AutoTokenizer.from_pretrained(tiny_model_folder).save_pretrained(folder)
    return folder


def test_pickle_checkpoints_are_refused_unless_allowed(pickle_model_folder):
    # The load itself runs the preflight, so every caller (CLI, window, Lab tab, bench) says why.
    with pytest.raises(ModelLoadError) as refused:
        load_model(str(pickle_model_folder))
    assert "holds only pickle checkpoints (pytorch_model.bin)" in str(refused.value)
    assert "--allow-pickle" in str(refused.value)
    check_before_loading(str(pickle_model_folder), "float32", allow_pickle=True)
    assert load_model(str(pickle_model_folder), allow_pickle=True).parameter_count > 0


def test_the_cli_refuses_a_pickle_and_loads_it_when_allowed(pickle_model_folder, run_cli):
    refused = run_cli("ask", "hi", "--model", str(pickle_model_folder), "--max-new-tokens", "2")
    assert refused.returncode == 1 and "holds only pickle checkpoints" in refused.stderr
    allowed = run_cli(
        "ask", "hi", "--model", str(pickle_model_folder), "--max-new-tokens", "2", "--allow-pickle", "--json"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["output_tokens"] >= 1 and "warning: --allow-pickle" in allowed.stderr


def test_remote_code_never_runs_without_the_flag(tmp_path, embedded_model):
    folder = tmp_path / "custom-code"
    folder.mkdir()
    marker = tmp_path / "remote-code-ran"
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "custom_evil",
                "auto_map": {
                    "AutoConfig": "configuration_evil.EvilConfig",
                    "AutoModelForCausalLM": "modeling_evil.EvilModel",
                },
            }
        )
    )
    payload = f"open({str(marker)!r}, 'w').write('ran')\n"
    config_code = (
        "from transformers import PretrainedConfig\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'custom_evil'\n"
    )
    (folder / "configuration_evil.py").write_text(payload + config_code)
    (folder / "modeling_evil.py").write_text(payload)
    embedded_model.tokenizer.save_pretrained(folder)
    with pytest.raises(ModelLoadError) as refused:
        load_model(str(folder))
    assert "contains custom code" in str(refused.value) and not marker.exists()


def test_offline_mode_is_switched_on_for_local_and_embedded_models(monkeypatch, tiny_model_folder):
    for name in OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not use_offline_mode_for("some-org/some-model")
    assert "HF_HUB_OFFLINE" not in os.environ
    assert use_offline_mode_for(str(tiny_model_folder)) and os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert use_offline_mode_for(None) and os.environ["TRANSFORMERS_OFFLINE"] == "1"


@pytest.mark.model
def test_a_local_model_runs_without_a_single_network_call(embedded_model, tmp_path):
    """A real `ask` in a fresh process with every socket refused and no offline variable set beforehand."""
    result = latencylab_offline(
        ["ask", "Say hi.", "--max-new-tokens", "3", "--no-stream"],
        os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert result.returncode == 0, result.stderr
    assert "ATTEMPTS 0 []" in result.stderr and result.stdout.strip()


@pytest.mark.model
def test_exported_chats_name_a_folder_model_without_its_path(qtbot, window, tiny_model, tiny_model_folder, tmp_path):
    from tests.support.window_driving import ask

    window.models.accept_model(tiny_model)
    ask(qtbot, window, "Hello", max_new_tokens=2)
    window.saved_chats.export_chat(tmp_path / "chat.json")
    window.export_traces_json(tmp_path / "traces.json")
    for name in ("chat.json", "traces.json"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert str(tiny_model_folder.parent) not in text and os.path.expanduser("~") + "/" not in text
    assert json.loads((tmp_path / "chat.json").read_text(encoding="utf-8"))["model"] == tiny_model_folder.name


def test_bench_refuses_a_pickle_and_measures_it_when_allowed(pickle_model_folder, run_cli):
    options = (
        "bench",
        "--model",
        str(pickle_model_folder),
        "--sweeps",
        "prompt",
        "--prompt-words",
        "5",
        "--new-tokens",
        "2",
        "--repeats",
        "1",
    )
    refused = run_cli(*options)
    assert refused.returncode == 1 and "holds only pickle checkpoints" in refused.stderr
    allowed = run_cli(*options, "--allow-pickle")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: --allow-pickle" in allowed.stderr and "prompt" in allowed.stdout
